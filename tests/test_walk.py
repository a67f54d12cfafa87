"""FileContext's single walk visits exactly what libcst's own traversal visits, in the same order,
with the same parents (it skips libcst's node copies, not nodes), less layout: whitespace, newlines,
blank lines and comments, and what they hold."""
from pathlib import Path

import libcst as cst

from amplint.context import file_context
from amplint.context.file_context import FileContext

ROOT = Path(__file__).resolve().parent.parent

# Constructs whose children libcst visits only when present (an f-string's format spec), decorators
# (visited before the def's name), parentheses, star-args, walrus, match, async, type hints.
TRICKY = '''
@decorator(1)
async def f(a, /, b: int = 2, *args, c, **kw) -> "T":
    x = f"{a} {a!r:>{b}} {c=} {kw}"
    async with g() as (y, z):
        async for i in (w := y):
            pass
    match x:
        case [1, *rest] if rest:
            return (yield x)
        case {"k": v, **others}:
            return lambda q=1, *r: q
    return [i for i in range(3) if i] or {k: v for k, v in []} or (a, *b)
class C(Base, metaclass=M):
    t: "int" = 1
    del t
    global G
'''


LAYOUT = {cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline, cst.EmptyLine,
          cst.Comment}


class _Record(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.seen, self.stack, self.parents = [], [], {}

    def on_visit(self, node) -> bool:
        if type(node) in LAYOUT:
            return False
        if self.stack:
            self.parents[id(node)] = self.stack[-1]
        self.seen.append(node)
        self.stack.append(node)
        return True

    def on_leave(self, node) -> None:
        if type(node) not in LAYOUT:
            self.stack.pop()


def _sources():
    yield "tricky", TRICKY.encode()
    for p in sorted((ROOT / "examples").rglob("*.py")):
        yield str(p), p.read_bytes()


def test_walk_is_libcsts_traversal(monkeypatch):
    # learn each type's fields afresh: the first f-string part met has no format spec
    monkeypatch.setattr(file_context, "_CHILD_FIELDS", {})
    for name, source in _sources():
        module = cst.parse_module(source)
        expected = _Record()
        module.visit(expected)
        ctx = FileContext(name, module, source)
        walked = sorted((n for nodes in ctx._by_type.values() for n in nodes), key=ctx.order)
        assert [id(n) for n in walked] == [id(n) for n in expected.seen], name
        assert [ctx.order(n) for n in walked] == list(range(len(walked))), name
        for node in expected.seen:
            assert ctx.parent(node) is expected.parents.get(id(node)), name
        assert ctx.nodes(cst.FormattedStringExpression) or name != "tricky"
        assert not any(ctx.nodes(t) for t in LAYOUT), name
