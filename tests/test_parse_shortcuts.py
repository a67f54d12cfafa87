"""The shortcuts the parse, the walk and the summary take (issue 7) give what the long way gives:
libcst's tree built with amplint's node constructors is libcst's own tree, the walk leaves out only
fields that hold layout, the summary's walk of CPython's tree reads every field that holds a node,
and a call's enclosing function is the one found by climbing its parents."""
import ast
import dataclasses
import inspect
import sys
from pathlib import Path

import libcst as cst
import pytest

from amplint import file_graph, parsing
from amplint.context import file_context

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''
# -*- coding: utf-8 -*-
"""Doc."""
from __future__ import annotations
import torch, os.path as osp
from .x import (a as b, c)  # type: ignore
global_counter: int = 0

@decorator(1)
async def f(a, /, b: int = 2, *args, c, **kw) -> "T":  # type: (int) -> str
    global global_counter
    x = f"{a} {a!r:>{b}} {c=} {kw}" 'tail'
    async with g() as (y, z):
        async for i in (w := y):
            pass
    match x:
        case [1, *rest] if rest:
            return (yield x)
        case {"k": v, **others}:
            return lambda q=1, *r: q
        case Point(x=0, y=yy) | None:
            pass
        case _:
            del y
    try:
        raise ValueError from None
    except* (KeyError, OSError) as e:
        pass
    return [i for i in range(3) if i] or {k: v for k, v in []} or (a, *b) or x[1:2, ::3] @ y


class C(Base, metaclass=M):
    t: "int" = 1

    def method(self):
        def inner():
            nonlocal_thing = self.helper(1)
            return nonlocal_thing
        return inner() if self else torch.zeros(1, dtype=torch.float16).half()
'''


def _sources(by_cpython: bool = False):
    """The sources the shortcuts are compared on; ``by_cpython``: read by CPython's ``ast``, which takes
    SOURCE's ``match`` / ``except*`` only from 3.11 (libcst reads them on any Python)."""
    if by_cpython and sys.version_info < (3, 11):
        yield pytest.param("source", SOURCE.encode(), marks=pytest.mark.skip(reason="match / except* need CPython 3.11"))
    else:
        yield "source", SOURCE.encode()
    for p in sorted((ROOT / "examples").rglob("*.py")):
        yield str(p), p.read_bytes()


def _same_tree(a, b) -> bool:
    """Exactly the same tree: the same node types with the same field values, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, cst.CSTNode):
        return all(_same_tree(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b))
    return a is b if isinstance(a, cst.MaybeSentinel) else a == b


@pytest.mark.parametrize("name, source", list(_sources()))
def test_the_parse_builds_libcsts_own_tree(name, source):
    ours = parsing._unvalidated_parse(source)
    theirs = cst.parse_module(source)
    assert _same_tree(ours, theirs), name
    assert ours.code == theirs.code == source.decode("utf-8")


def test_the_parse_constructors_are_the_dataclasses_and_are_put_back():
    constructors = parsing._parse_constructors()
    assert cst.Name in constructors and cst.Call in constructors and cst.SimpleWhitespace in constructors
    for cls, (own, fast) in constructors.items():
        assert cls.__dict__["__init__"] is own  # outside a parse, libcst's own constructor
        mine, theirs = inspect.signature(fast).parameters, inspect.signature(own).parameters
        assert list(mine) == list(theirs), cls
        assert all(mine[p].default is theirs[p].default for p in mine), cls
    parsing._unvalidated_parse(b"x = 1\n")
    assert all(cls.__dict__["__init__"] is own for cls, (own, _) in constructors.items())
    # nodes built outside a parse are validated as libcst validates them
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("x", lpar=[cst.LeftParen()])  # unbalanced parentheses


def test_a_parse_that_fails_puts_the_constructors_back():
    with pytest.raises(cst.ParserSyntaxError):
        parsing._unvalidated_parse(b"def f(:\n")
    assert all(cls.__dict__["__init__"] is own for cls, (own, _) in parsing._parse_constructors().items())
    assert cst.CSTNode.__dict__["__post_init__"] is not parsing._no_validation


def test_the_walk_skips_only_fields_that_hold_layout():
    kinds = file_context._field_kinds
    assert kinds(cst.Call)["whitespace_after_func"] == file_context._LAYOUT_ONLY
    assert kinds(cst.SimpleStatementLine)["leading_lines"] == file_context._LAYOUT_ONLY
    assert kinds(cst.Call)["func"] == file_context._NODE
    assert kinds(cst.Call)["args"] == file_context._NODES
    assert kinds(cst.Arg)["comma"] == file_context._NODE  # a Comma (or nothing): a node holding whitespace
    # every field said to hold only layout holds only layout (or nothing) in real trees, and every
    # field said never to hold layout holds none
    for name, source in _sources():
        module = cst.parse_module(source)
        todo = [module]
        while todo:
            node = todo.pop()
            for field, kind in kinds(type(node)).items():
                value = getattr(node, field)
                values = value if isinstance(value, (list, tuple)) else [value]
                nodes = [v for v in values if isinstance(v, cst.CSTNode)]
                if kind == file_context._LAYOUT_ONLY:
                    assert all(type(v) in file_context._LAYOUT for v in nodes), (name, type(node), field)
                elif kind in (file_context._NODE, file_context._NODES):
                    assert not any(type(v) in file_context._LAYOUT for v in nodes), (name, type(node), field)
                todo.extend(nodes)


def _generic_walk(tree):
    parent, nodes = {}, [tree]
    for node in nodes:
        for child in ast.iter_child_nodes(node):
            parent[id(child)] = node
            nodes.append(child)
    return nodes, parent


@pytest.mark.parametrize("name, source", list(_sources(by_cpython=True)))
def test_the_summarys_walk_reads_every_field_that_holds_a_node(name, source):
    tree = ast.parse(source, type_comments=True)
    nodes, parent = file_graph.walk_with_parents(tree)
    expected_nodes, expected_parent = _generic_walk(tree)
    assert [id(n) for n in nodes] == [id(n) for n in expected_nodes], name
    assert {k: id(v) for k, v in parent.items()} == {k: id(v) for k, v in expected_parent.items()}, name


def test_the_fields_left_out_never_hold_a_node():
    for cls in [c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.AST)]:
        for field in set(getattr(cls, "_fields", ())) - set(file_graph._node_fields(cls)):
            assert field in ("name", "id", "attr", "arg", "asname", "module", "level", "names", "value", "kind",
                             "conversion", "type_comment", "simple", "is_async", "rest", "kwd_attrs", "tag",
                             "lineno"), (cls, field)
    assert "value" in file_graph._node_fields(ast.Attribute) and "value" not in file_graph._node_fields(ast.Constant)
    assert "names" in file_graph._node_fields(ast.Import) and "names" not in file_graph._node_fields(ast.Global)
    assert "names" in file_graph._node_fields(ast.ImportFrom) and "module" not in file_graph._node_fields(ast.ImportFrom)


@pytest.mark.parametrize("name, source", list(_sources(by_cpython=True)))
def test_the_remembered_enclosing_function_is_the_climbed_one(name, source):
    tree = ast.parse(source)
    nodes, parent = file_graph.walk_with_parents(tree)
    memo = {}
    for node in nodes:  # in the walk's order and in reverse: the memo is filled either way
        assert file_graph._memo_owner(node, parent, memo) is file_graph._owner(node, parent, file_graph._FUNCTIONS)
    memo = {}
    for node in reversed(nodes):
        assert file_graph._memo_owner(node, parent, memo) is file_graph._owner(node, parent, file_graph._FUNCTIONS)


@pytest.mark.parametrize("text", ["x", "a.b(c, d)", "f(x,  y)", "f(x,\ty)", "'a\x1cb'", "'a \x0b b'", "'a\x0cb'",
                                  "'ü  x'", "(\n  x\n)", "x" * 80])
def test_an_arguments_text_is_its_whitespace_normalised_source(text):
    source = f"g({text})\n".encode()
    arg = ast.parse(source).body[0].value.args[0]
    lines = source.splitlines()
    if arg.lineno == arg.end_lineno:
        raw = lines[arg.lineno - 1][arg.col_offset:arg.end_col_offset]
    else:
        raw = b" ".join(p.strip() for p in [lines[arg.lineno - 1][arg.col_offset:], *lines[arg.lineno:arg.end_lineno - 1],
                                             lines[arg.end_lineno - 1][:arg.end_col_offset]])
    expected = " ".join(raw.decode("utf-8", "replace").split())
    expected = expected if len(expected) <= file_graph.TEXT else expected[:file_graph.TEXT - 3] + "..."
    assert file_graph._Source(source).text(arg) == expected


def test_a_dotted_name_of_a_plain_name_is_the_name():
    from amplint.context.evidence import ast_dotted
    assert ast_dotted(ast.parse("x").body[0].value) == "x"
    assert ast_dotted(ast.parse("torch.nn.functional").body[0].value) == "torch.nn.functional"
    assert ast_dotted(ast.parse("f().x").body[0].value) is None
