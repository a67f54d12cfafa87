"""The semantic model of one file: scopes, bindings and references by Python's rules."""
import textwrap

import libcst as cst

from amplint.context.file_context import FileContext


def context(source: str) -> FileContext:
    data = textwrap.dedent(source).encode()
    return FileContext("m.py", cst.parse_module(data), data)


def names(ctx, name):
    """The Names spelled ``name``, in source order, as (line, node)."""
    return [(ctx.line_of(n), n) for n in ctx.nodes(cst.Name) if n.value == name]


def bound(ctx, name, line, index=0):
    """(kind, line of the bound node, scope kind) of what the ``index``-th ``name`` on ``line`` reads."""
    node = [n for ln, n in names(ctx, name) if ln == line][index]
    b = ctx.semantic.binding_of(node)
    return None if b is None else (b.kind, ctx.line_of(b.node), b.scope.kind)


def test_class_scope_is_not_visible_in_its_methods():
    ctx = context("""
        scale = 1.0
        class Net:
            scale = 2.0
            double = scale * 2
            def forward(self, x):
                return x * scale
            ys = [scale for _ in range(2)]
        """)
    assert bound(ctx, "scale", 5) == ("assign", 4, "class")
    assert bound(ctx, "scale", 7) == ("assign", 2, "module")
    assert bound(ctx, "scale", 8) == ("assign", 2, "module")  # a comprehension in a class body: the same


def test_a_comprehension_has_its_own_scope():
    ctx = context("""
        def f(xs):
            x = xs[0].half()
            ys = [x.float() for x in xs if x is not None]
            return x, ys
        """)
    assert bound(ctx, "x", 4, 0) == ("comprehension", 4, "comprehension")  # x.float(): the loop's x
    assert bound(ctx, "x", 4, 2) == ("comprehension", 4, "comprehension")  # the condition
    assert bound(ctx, "xs", 4) == ("param", 2, "function")  # the first iterable: evaluated outside
    assert bound(ctx, "x", 5) == ("assign", 3, "function")  # the comprehension's x does not leak


def test_global_and_nonlocal_send_the_binding_to_the_scope_they_name():
    ctx = context("""
        count = 0
        def bump():
            global count
            count = count + 1
        def outer():
            total = 0
            def inner():
                nonlocal total
                total = 5
            inner()
            return total
        """)
    assert bound(ctx, "count", 5, 0) == ("assign", 5, "module")
    assert [b.kind for b in ctx.semantic.module.bindings["count"]] == ["assign", "assign"]
    outer = ctx.semantic.scope_for(next(f for f in ctx.nodes(cst.FunctionDef) if f.name.value == "outer"))
    assert [ctx.line_of(b.node) for b in outer.bindings["total"]] == [7, 10]
    assert bound(ctx, "total", 12) == ("assign", 10, "function")


def test_rebinding_in_branches_and_between_statements():
    ctx = context("""
        def f(x, flag):
            h = x.half()
            if flag:
                h = x.float()
            else:
                h = x
            y = h + 1
            h += 1
            return h
        """)
    sem = ctx.semantic
    assert bound(ctx, "h", 8) == ("assign", 7, "function")  # source order: the last branch
    assert bound(ctx, "h", 9, 0) == ("assign", 7, "function")  # h += 1 reads the h before it
    assert bound(ctx, "h", 10) == ("augassign", 9, "function")
    stmts = [s for s in ctx.nodes(cst.SimpleStatementLine)]
    first, use = stmts[0], stmts[3]  # h = x.half(); y = h + 1
    assert sem.rebound_between("h", first, use)
    assert not sem.rebound_between("x", first, use)


def test_every_use_of_a_binding():
    ctx = context("""
        import torch as th
        def f(x):
            y = th.exp(x)
            z = y * 2
            y = z
            return y + th.log(z)
        """)
    sem = ctx.semantic
    first_y = [n for _, n in names(ctx, "y")][0]
    assert [ctx.line_of(n) for n in sem.uses(sem.binding_of(first_y))] == [5]
    th = sem.module.bindings["th"][0]
    assert (th.kind, th.qualified) == ("import", "torch")
    assert [ctx.line_of(n) for n in sem.uses(th)] == [4, 7]


def test_targets_parameters_and_attributes():
    ctx = context("""
        import torch
        D = 1e-3
        class M:
            def __init__(self, eps=D, *args):
                self.eps = eps
                self.w, self.b = torch.ones(2), torch.zeros(2)
            def forward(self, xs):
                for i, x in enumerate(xs):
                    pass
                with torch.autocast("cuda") as ac:
                    if (n := len(xs)) > 1:
                        pass
                f = lambda eps: eps * 2
                return x, ac, n, f, self.eps
        """)
    sem = ctx.semantic
    assert bound(ctx, "D", 5) == ("assign", 3, "module")  # a default is evaluated outside the def
    assert bound(ctx, "eps", 6) == ("param", 5, "function")
    assert bound(ctx, "args", 5) == ("star_param", 5, "function")
    assert bound(ctx, "x", 15) == ("for", 9, "function")
    assert bound(ctx, "ac", 15) == ("with", 11, "function")
    assert bound(ctx, "n", 15) == ("walrus", 12, "function")
    assert bound(ctx, "eps", 14, 1) == ("param", 14, "lambda")
    cls = ctx.nodes(cst.ClassDef)[0]
    assert [b.name for b in sem.attributes_of(cls)] == ["eps", "w", "b"]
    assert ctx.code(ctx.init_attribute(cls.body.body[0], "b")) == "torch.zeros(2)"
    assert sem.rebound_in("eps", cls.body.body[0]) is False


def test_the_bindings_that_may_reach_a_use():
    ctx = context("""
        def attend(q, k, v, causal):
            d = None
            if not causal:
                d = q @ k.sum(-1)
            else:
                raw, d = helper(q, k)
            for _ in range(2):
                v = v * 2
            return d, v, q
        """)
    sem = ctx.semantic
    (use_d,) = [n for ln, n in names(ctx, "d") if ln == 10]
    assert [(b.kind, ctx.line_of(b.node)) for b in sem.reaching("d", use_d)] == [
        ("assign", 7), ("assign", 5), ("assign", 3)]  # both branches, and the None before them
    (use_v,) = [n for ln, n in names(ctx, "v") if ln == 10]
    assert [(b.kind, ctx.line_of(b.node)) for b in sem.reaching("v", use_v)] == [("assign", 9), ("param", 2)]
    (use_q,) = [n for ln, n in names(ctx, "q") if ln == 10]
    assert [b.kind for b in sem.reaching("q", use_q)] == ["param"]
