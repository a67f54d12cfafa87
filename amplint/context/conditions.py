"""What the conditions around a node guarantee: ``if norm > eps:`` right before
``x / (norm + 1e-12)`` makes the guard unnecessary (the division runs only where ``norm`` is
positive), however small the guard is in float16.

Values are matched by their code (``norm``, ``self.norm``, ``d.item()``), on the branch of an
enclosing ``if`` (or ``while``) that holds the node, and after an earlier ``if norm <= eps: return``
(``continue``, ``break``, ``raise``) in the same block.
"""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from .literal_paths import _exits, call_skips_path, path_needs, self_option_needs

_ABOVE = (cst.GreaterThan, cst.GreaterThanEqual)
_BELOW = (cst.LessThan, cst.LessThanEqual)


def _key(ctx, expr: cst.BaseExpression) -> str:
    """The code of a value, without ``.item()`` / ``float(...)`` around it."""
    for _ in range(4):
        if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in ("item", "float"):
            expr = expr.func.value
        elif isinstance(expr, cst.Call) and len(expr.args) == 1 and ctx.call_name(expr) == "float":
            expr = expr.args[0].value
        else:
            break
    return " ".join(ctx.code(expr).split())


def _positive(ctx, test: cst.BaseExpression, truth: bool) -> Iterator[str]:
    """The values a path that took ``test`` as ``truth`` knows to be positive."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _positive(ctx, test.expression, not truth)
        return
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) and truth or isinstance(test.operator, cst.Or) and not truth:
            yield from _positive(ctx, test.left, truth)
            yield from _positive(ctx, test.right, truth)
        return
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return
    comp = test.comparisons[0]
    left, op, right = test.left, comp.operator, comp.comparator
    if not truth:  # not (a > c) is a <= c: positive only through the mirrored reading
        op = {cst.GreaterThan: cst.LessThanEqual, cst.GreaterThanEqual: cst.LessThan,
              cst.LessThan: cst.GreaterThanEqual, cst.LessThanEqual: cst.GreaterThan}.get(type(op), type(None))()
    for value, bound, above in ((left, right, isinstance(op, _ABOVE)), (right, left, isinstance(op, _BELOW))):
        c = ctx.number(bound)
        if above and c is not None and (c > 0 or c == 0 and isinstance(op, (cst.GreaterThan, cst.LessThan))):
            yield _key(ctx, value)
            # |x| > c: x is off 0, all a guard of x is there for (a negative x is no guard's business)
            inner = _abs_of(ctx, value)
            if inner is not None:
                yield _key(ctx, inner)


def _abs_of(ctx, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """``x`` of ``torch.abs(x)`` / ``x.abs()`` / ``abs(x)``."""
    if isinstance(expr, cst.Call):
        if ctx.call_name(expr) in ("torch.abs", "abs") and len(expr.args) == 1:
            return expr.args[0].value
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "abs" and not expr.args:
            return expr.func.value
    return None


def _where_test(ctx, node: cst.CSTNode, child: cst.CSTNode):
    """For ``child`` an argument of ``torch.where(test, a, b)`` holding ``node``: (the test, with a
    local name resolved to its value, True for ``a`` / False for ``b``), else None."""
    parent = ctx.parent(child)
    call = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    if not isinstance(call, cst.Call) or ctx.call_name(call) != "torch.where" or len(call.args) != 3:
        return None
    test = call.args[0].value
    if isinstance(test, cst.Name):
        from .precision import precision_model  # the dtype flow's bindings (precision imports this module's peers)
        test = precision_model(ctx).value_of(test) or test
    if parent is call.args[1]:
        return test, True
    if parent is call.args[2]:
        return test, False
    return None


def known_positive(ctx, node: cst.CSTNode, value: cst.BaseExpression, where: bool = False) -> Optional[cst.CSTNode]:
    """The condition that makes ``value`` positive wherever ``node`` runs, or None. ``where``: also
    the test of a ``torch.where(test, a, b)`` selecting the branch that holds ``node`` (only for a
    forward: ``a`` is computed everywhere, and the inf it holds where it is not selected turns into a
    NaN gradient, 0 * inf)."""
    key = _key(ctx, value)
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(parent, (cst.If, cst.While)) and ctx.is_ancestor(parent.body, node):
            if key in _positive(ctx, parent.test, True):
                return parent.test
        if isinstance(parent, cst.If) and isinstance(parent.orelse, cst.Else) and ctx.is_ancestor(parent.orelse, node):
            if key in _positive(ctx, parent.test, False):
                return parent.test
        if isinstance(parent, cst.IfExp) and ctx.is_ancestor(parent.body, node) and key in _positive(ctx, parent.test, True):
            return parent.test
        if where and isinstance(parent, cst.Arg):
            selected = _where_test(ctx, node, child)
            if selected is not None and key in _positive(ctx, *selected):
                return selected[0]
        if isinstance(parent, (cst.IndentedBlock, cst.Module)):
            for stmt in parent.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.If) and stmt.orelse is None and _exits(stmt.body) \
                        and key in _positive(ctx, stmt.test, False):
                    return stmt.test
        child = parent
    return None


def _conjuncts(ctx, test: cst.BaseExpression) -> Iterator[str]:
    """The parts of ``a and b and c``, by their code."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not test.lpar:
        yield from _conjuncts(ctx, test.left)
        yield from _conjuncts(ctx, test.right)
    else:
        yield _key(ctx, test)


def _known_at(ctx, node: cst.CSTNode) -> set:
    """The parts of the tests of the ``if`` / ``while`` statements whose bodies hold ``node``, in its function."""
    known = set()
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(parent, (cst.If, cst.While)) and ctx.is_ancestor(parent.body, node):
            known.update(_conjuncts(ctx, parent.test))
    return known


def holds_at(ctx, node: cst.CSTNode, test: cst.BaseExpression) -> bool:
    """Does ``test`` hold wherever ``node`` runs: is each part of it the test of an ``if`` (``elif``,
    ``while``) whose body holds ``node``, in the same function? ``if a: if b: x`` and ``if a and b: y``
    run ``x`` and ``y`` on the same iterations."""
    known = _known_at(ctx, node)
    return all(part in known for part in _conjuncts(ctx, test))


def fails_at(ctx, node: cst.CSTNode, test: cst.BaseExpression) -> bool:
    """Is ``test`` false wherever ``node`` runs: is its negation (``not x`` for ``x``, ``x`` for ``not x``) a
    part of the test of an ``if`` whose body holds ``node``? ``if norm > 0 and not self.deepspeed: unscale_``
    never runs where a later ``if self.deepspeed:`` holds."""
    known = _known_at(ctx, node)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _key(ctx, test.expression) in known
    return f"not {_key(ctx, test)}" in known


def never_run_by_callers(ctx, node: cst.CSTNode) -> bool:
    """Is ``node`` on a branch no caller takes: inside ``if mode == 'cube':`` (or its ``else``) of a
    function whose parameter ``mode`` every call in sight passes a literal (or leaves at a literal
    default) that sends it down another branch (stable-dreamfusion's ``near_far_from_bound(...,
    type='sphere')``: the ``'cube'`` branch never runs). False when any call is not seen, passes a
    non-literal, or the function has no callers in sight (a library's API: its users pick)."""
    from .callers import passed_values  # noqa: PLC0415 (callers imports the precision model)
    from .precision import precision_model  # noqa: PLC0415
    if _in_unread_lambda(ctx, node):
        return True
    fn = ctx.enclosing_function(node)
    if fn is not None and _never_built_to_run(ctx, node, fn):
        return True
    if fn is not None and _forward_no_use_runs(ctx, fn):
        return True
    needs = path_needs(ctx, node, fn) if fn is not None else []
    if not needs:
        return False
    passed_all = passed_values(precision_model(ctx), fn, needs[0][0])
    return bool(passed_all) and all(call_skips_path(ctx, fn, needs, p.call, p.model) for p in passed_all)


def _forward_no_use_runs(ctx, fn: cst.FunctionDef) -> bool:
    """Is ``fn`` the ``forward`` of a class whose instances the project only takes parts of or calls in
    code that never runs (``instances.forward_never_runs``)? Not asked of library code its users run
    (``Regime.users_run_it``): they may call what the project does not."""
    from .instances import forward_never_runs  # noqa: PLC0415 (instances imports the precision model)
    regime = ctx.regime
    cls = ctx.enclosing_class(fn)
    if fn.name.value != "forward" or cls is None or ctx.parent(fn) is not cls.body or regime is None \
            or getattr(regime, "override", None) and not regime.any_fp16_use or getattr(regime, "users_run_it", True):
        return False
    return forward_never_runs(ctx, cls)


def _never_built_to_run(ctx, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """Is ``node`` on the branch of an option the instance stores (``if self.sigmoid:`` with
    ``self.sigmoid = sigmoid`` in ``__init__``: ``literal_paths.self_option_needs``) that no build of
    the class running in float16 takes? Every build in the project is seen (``instances.constructions``);
    each passes (or leaves at a literal default) a value that sends the test the other way, or is made
    in a program that trains in float32 only (Transfer-Learning-Library's DomainAdversarialLoss: its
    float16 runs build it with ``sigmoid=False``, so the ``F.binary_cross_entropy`` of the sigmoid
    branch never runs under autocast; its float32 examples keep the default)."""
    from .instances import constructions  # noqa: PLC0415 (instances imports the precision model)
    from .precision import precision_model  # noqa: PLC0415
    found = self_option_needs(ctx, node, fn)
    if found is None:
        return False
    init, needs = found
    builds = constructions(ctx, ctx.enclosing_class(fn))
    if not builds:
        return False
    pm = precision_model(ctx)
    return all(_float32_program(other) or call_skips_path(ctx, init, needs, call, pm.model_for(other))
               for other, call in builds)


def _in_unread_lambda(ctx, node: cst.CSTNode) -> bool:
    """Is ``node`` in a lambda stored on the instance (``self.bce = lambda input, target:
    F.binary_cross_entropy(input, target)``) that no line of the project reads: every ``.bce`` in
    its Python files is an assignment ``self.bce = ...`` (Transfer-Learning-Library's adversarial
    losses keep such a lambda and never call it)? Its body never runs."""
    import re  # noqa: PLC0415

    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    lam = next((a for a in ctx.ancestors(node) if isinstance(a, (cst.Lambda, cst.FunctionDef, cst.ClassDef))), None)
    assign = ctx.parent(lam) if isinstance(lam, cst.Lambda) else None
    if not (isinstance(assign, cst.Assign) and assign.value is lam and len(assign.targets) == 1):
        return False
    target = assign.targets[0].target
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
        return False
    attr = re.escape(target.attr.value)
    stored = re.compile(rf"^\s*self\.{attr}\s*=(?!=)")
    lines = [strip_comment(text) for _, _, text in grep(ctx, rf"\.{attr}\b")]
    return bool(lines) and all(stored.match(line) and len(re.findall(rf"\.{attr}\b", line)) == 1 for line in lines) \
        and not any(re.search(rf"[\"']{attr}[\"']", text) for _, _, text in grep(ctx, rf"[\"']{attr}[\"']"))


def _float32_program(ctx) -> bool:
    """Does the code of this file run only in float32: training entry points reach it and say
    fp32 (no autocast, half model, launcher or configured precision)?"""
    regime = ctx.regime
    return regime is not None and regime.scope.startswith("entry point") and regime.override is None \
        and regime.launcher is None and regime.mode == "fp32"


