"""The one way amplint parses a file: the engine, the project scan and ``fix`` all come here.

libcst's native parser takes time cubic in the length of a left-recursive chain (``1+1+…``,
``a.b.c…``, ``f()()…``: 1,000 terms 0.4 s, 4,000 terms 17 s) and overflows its stack (a crash of the
whole process, not an exception) on deep input such as 2,000 nested parentheses, which CPython itself
rejects (its limit is 200). So before libcst sees a file, the file is screened:

1. cheap bounds, at C speed: its size (``max-file-bytes``) and its longest line (``max-line-length``);
2. CPython compiles it (nothing runs): what CPython rejects is a syntax error (E999, with CPython's
   message, as the interpreter would report it), and CPython's compiler is given a recursion
   allowance from ``max-syntax-depth``, so a longer chain or deeper nesting than that is "too complex
   to lint" (E998), found at C speed. CPython's compiler counts about three levels per term of a chain,
   so ``max-syntax-depth = 300`` lets through chains of up to about 300 terms, which libcst parses in
   about 0.1 s. (CPython 3.11+ checks this depth while it builds the tree; before 3.11 the symbol
   table of the unfolded tree is built under the same allowance, ``_symbol_table``.)

A file that fails the screen is an error of that file; the run goes on. The cost on the normal path is
CPython's compile, about 0.25 s per MB (measured in benchmarks/hostile.py).
"""
from __future__ import annotations

import ast
import sys
import warnings
from dataclasses import dataclass

from ._lazy import cst


@dataclass(frozen=True)
class Limits:
    """Per-file caps (``[tool.amplint]`` keys ``max-file-bytes``, ``max-line-length``,
    ``max-syntax-depth``)."""
    max_file_bytes: int = 1_048_576
    max_line_length: int = 20_000
    max_syntax_depth: int = 300

    KEYS = ("max-file-bytes", "max-line-length", "max-syntax-depth")


DEFAULT_LIMITS = Limits()


class TooComplex(Exception):
    """The file exceeds a limit: amplint does not parse it (E998)."""

    def __init__(self, key: str, limit: int, detail: str, line: int = 1) -> None:
        self.key, self.limit, self.line = key, limit, line
        super().__init__(f"file too complex to lint: {detail} (`{key}` = {limit:,}; raise it in "
                         f"[tool.amplint] or exclude the file)")


def _longest_line(source: bytes) -> int:
    return max(map(len, source.splitlines()), default=0)


def check_bounds(source: bytes, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise TooComplex for a file over the size caps."""
    if len(source) > limits.max_file_bytes:
        raise TooComplex("max-file-bytes", limits.max_file_bytes, f"{len(source):,} bytes")
    longest = _longest_line(source)
    if longest > limits.max_line_length:
        lines = source.splitlines()
        index = next(i for i, line in enumerate(lines) if len(line) == longest)
        raise TooComplex("max-line-length", limits.max_line_length, f"a line of {longest:,} characters", index + 1)


def _stack_depth() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def _cpython(source: bytes, filename: str, limits: Limits, flags: int):
    """compile() with a recursion allowance of about a third of ``max-syntax-depth`` (CPython's
    compiler and tree builder count three levels per recursion)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + 10 + (limits.max_syntax_depth + 3) // 3)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            # Top-level ``await`` is valid in a notebook cell (IPython runs it) and, as for ruff,
            # no syntax error in a module (pyflakes' F704 territory), so it never stops the lint.
            compiled = compile(source, filename, "exec", flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
            if sys.version_info < (3, 11):
                _symbol_table(source, filename)
            return compiled
    except (RecursionError, MemoryError):
        raise TooComplex("max-syntax-depth", limits.max_syntax_depth,
                         f"code nested or chained (`a + b + …`, `a.b.…`, brackets) deeper than "
                         f"{limits.max_syntax_depth:,} levels", _first_long_line(source)) from None
    finally:
        sys.setrecursionlimit(old)


def _symbol_table(source: bytes, filename: str) -> None:
    """Before 3.11 CPython checks no depth while it builds the tree, and its compiler folds a chain of
    constants (``1 + 1 + …``) to one before the symbol table, whose visit counts depth, sees it: a
    10,000-term chain compiled and then crashed libcst's parser. ``symtable`` builds the table of the
    unfolded tree under the same recursion allowance (a RecursionError there is the chain's depth)."""
    import symtable
    from importlib.util import decode_source

    try:
        text = decode_source(source)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return  # (compile accepted the bytes; nothing more to screen here)
    try:
        symtable.symtable(text, filename, "exec")
    except SyntaxError:
        pass  # what the table rejects that compile accepted (a top-level ``await``) is no depth


def _first_long_line(source: bytes) -> int:
    """Where the file is deep, roughly: the longest line (deep code is long code)."""
    lines = source.splitlines()
    if not lines:
        return 1
    longest = max(range(len(lines)), key=lambda i: len(lines[i]))
    return longest + 1


def screen(source: bytes, limits: Limits = DEFAULT_LIMITS, filename: str = "<unknown>") -> None:
    """Raise TooComplex, or CPython's SyntaxError (ValueError for null bytes on old Pythons), for a
    file libcst must not be given."""
    check_bounds(source, limits)
    _cpython(source, filename, limits, 0)


def python_ast(source: bytes, limits: Limits = DEFAULT_LIMITS, filename: str = "<unknown>") -> ast.Module:
    """CPython's syntax tree of ``source`` within ``limits`` (for the project scan); raises as ``screen``."""
    check_bounds(source, limits)
    return _cpython(source, filename, limits, ast.PyCF_ONLY_AST)


def parse_module(source: bytes, limits: Limits = DEFAULT_LIMITS, filename: str = "<unknown>") -> cst.Module:
    """libcst's tree of a screened file (see ``screen``)."""
    screen(source, limits, filename)
    return _unvalidated_parse(source)


def _no_validation(node) -> None:
    pass


def _unvalidated_parse(source: bytes) -> cst.Module:
    """``cst.parse_module`` without libcst's per-node validation. Every node libcst builds runs
    ``_validate`` from its ``__post_init__`` (whitespace fullmatched against regular expressions,
    parentheses balanced, ...): a check of trees put together by hand, which the parser's output
    passes by construction (libcst's own comment there says so). It is ~30 % of a parse (the 100k
    subset of transformers: 10.3 -> 7.5 s of CPU). Nodes amplint builds itself (fixes) are
    validated as before: the check is off only while the parser runs, in this thread's call
    (amplint parses from one thread).

    While the parser runs, each node class's ``__init__`` is also one that stores the same fields
    with the same defaults without calling ``__post_init__`` (``_parse_constructors``): the
    dataclass's own stores each field through ``object.__setattr__`` (it is frozen) and then calls
    ``__post_init__``, a Python call per node for a check that is off: ~8 % of a parse."""
    node = cst.CSTNode
    post_init = node.__dict__["__post_init__"]
    fast = _parse_constructors()
    node.__post_init__ = _no_validation
    for cls, (_, init) in fast.items():
        cls.__init__ = init
    try:
        return cst.parse_module(source)
    finally:
        for cls, (own, _) in fast.items():
            cls.__init__ = own
        node.__post_init__ = post_init


_CONSTRUCTORS = None


def _parse_constructors() -> dict:
    """node class -> (its dataclass ``__init__``, one without ``__post_init__``), for the classes
    whose ``__init__`` is the plain one ``dataclasses`` writes for a frozen class with slots (the
    parameters, their order and defaults checked against it: a class that differs keeps its own)."""
    global _CONSTRUCTORS
    if _CONSTRUCTORS is None:
        out = {}
        todo = list(cst.CSTNode.__subclasses__())
        while todo:
            cls = todo.pop()
            todo.extend(cls.__subclasses__())
            init = _parse_constructor(cls)
            if init is not None:
                out[cls] = (cls.__dict__["__init__"], init)
        _CONSTRUCTORS = out
    return _CONSTRUCTORS


def _parse_constructor(cls):
    import dataclasses

    own = cls.__dict__.get("__init__")
    slots = cls.__dict__.get("__slots__")
    if own is None or slots is None or not dataclasses.is_dataclass(cls) or not hasattr(own, "__code__"):
        return None  # an abstract base, or the class libcst's add_slots replaced (never instantiated)
    fields = dataclasses.fields(cls)
    code = own.__code__
    names = [f.name for f in fields]
    if (any(not f.init or getattr(f, "kw_only", False) is True for f in fields) or code.co_kwonlyargcount
            or code.co_flags & 0x0C  # *args / **kwargs
            or list(code.co_varnames[:code.co_argcount]) != ["self", *names]):
        return None
    namespace, params, body = {"_FACTORY": getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)}, [], []
    for i, f in enumerate(fields):
        setter = getattr(cls, f.name, None)
        if type(setter).__name__ != "member_descriptor":
            return None
        namespace[f"_set{i}"] = setter.__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _factory{i}()")
        else:
            params.append(f.name)
        body.append(f"    _set{i}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]) + "\n", namespace)
    init = namespace["__init__"]
    mine, theirs = init.__defaults__ or (), own.__defaults__ or ()
    if len(mine) != len(theirs) or any(a is not b for a, b in zip(mine, theirs)):
        return None  # the same default objects, the factories' sentinel included
    init.__qualname__ = own.__qualname__
    return init
