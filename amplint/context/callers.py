"""Who calls a function, and with what: the values a helper's parameter receives.

A helper's parameter is float16 because a caller in float16 code passes it a float16 value, not
because of the helper's name (``normalize``, ``loss``) or a ``Tensor`` annotation. The calls are
those of the helper's own file (``f(x)``, ``self.f(x)``) and, for a module-level function, the
calls in other files of the project (named by the project index, ``Project.callers``, then read
with their own precision model; at most ``MAX_FILES`` files, so that a helper called everywhere
costs a bounded amount).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import libcst as cst

MAX_FILES = 8


@dataclass(frozen=True)
class Passed:
    """What one call passes for a parameter: ``value`` is None when the call does not say
    (``*args`` / ``**kwargs``, or the parameter's default is used)."""
    call: cst.Call
    value: Optional[cst.BaseExpression]
    model: object  # the PrecisionModel of the call's file
    path: str  # the call's file, for messages


def _positional_names(fn: cst.FunctionDef, method: bool) -> List[str]:
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    return names[1:] if method and names and names[0] in ("self", "cls") else names


# Helpers that call their first argument with the items of the lists that follow it: the builtin
# ``map`` and mmdet's ``multi_apply(func, *args, **kwargs)`` (``map(partial(func, **kwargs), *args)``,
# copied into many detection code bases).
_MAPPERS = {"map", "multi_apply"}


def mapped_callback(call: cst.Call) -> Optional[Tuple[str, str]]:
    """``("method", f)`` for ``multi_apply(self.f, xs, ...)`` / ``map(self.f, xs)``, ``("function", f)``
    for ``map(f, xs)``: the callback such a call runs on the items of ``xs``; None for any other call."""
    func = call.func
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if last not in _MAPPERS or len(call.args) < 2 or call.args[0].keyword is not None or call.args[0].star:
        return None
    first = call.args[0].value
    if isinstance(first, cst.Attribute) and isinstance(first.value, cst.Name) and first.value.value in ("self", "cls"):
        return ("method", first.attr.value)
    if isinstance(first, cst.Name):
        return ("function", first.value)
    return None


def argument_for(call: cst.Call, fn: cst.FunctionDef, param: str, method: bool) -> Tuple[bool, Optional[cst.BaseExpression]]:
    """(known, value): the expression ``call`` passes for ``param`` of ``fn``; known is False when
    ``*args`` / ``**kwargs`` may carry it. A ``map`` / ``multi_apply`` call of ``fn`` as its callback
    (``mapped_callback``) passes the lists after ``fn`` positionally (a list's dtype is its
    tensors'), its keywords as they are."""
    if call.args and mapped_callback(call) is not None and mapped_callback(call)[1] == fn.name.value \
            and not (isinstance(call.func, cst.Name) and call.func.value == fn.name.value) \
            and not (isinstance(call.func, cst.Attribute) and call.func.attr.value == fn.name.value):
        call = call.with_changes(args=call.args[1:])
    for a in call.args:
        if a.keyword is not None and a.keyword.value == param:
            return True, a.value
    names = _positional_names(fn, method)
    positional = []
    starred = False
    for a in call.args:
        if a.keyword is not None:
            continue
        if a.star == "*":
            starred = True
            break  # ``f(img, times, *args)``: the positions before ``*args`` are still known
        if a.star:
            continue
        positional.append(a)
    if param in names:
        i = names.index(param)
        if i < len(positional):
            return True, positional[i].value
    if starred or any(a.star == "**" for a in call.args):
        return False, None
    return True, None  # the default


def spread_for(pm, call: cst.Call, fn: cst.FunctionDef, param: str, method: bool) -> Optional[cst.BaseExpression]:
    """What a call ``argument_for`` cannot place passes for ``param`` through its ``*`` / ``**``
    arguments, where the caller's code says: ``self.loss(*loss_inputs)`` after ``loss_inputs = outs
    + (gt_bboxes, img_metas)`` passes the caller's ``gt_bboxes`` for ``gt_bboxes`` (the tuple's
    element of the parameter's own name: EasyCV's FCOS head); ``self(**data, mode="train")`` passes
    an entry of ``data`` for each parameter no other argument gives: the dict itself is returned,
    and a caller takes its dtype for its entries' only where that is known (a loader's batch, an
    mmcv runner's ``train_step(data)``). None otherwise."""
    if mapped_callback(call) is not None and mapped_callback(call)[1] == fn.name.value:
        return None
    names = _positional_names(fn, method)
    if param not in names and not any(p.name.value == param for p in fn.params.kwonly_params):
        return None
    for a in call.args:
        if a.star != "*" or a.keyword is not None:
            continue
        seq = a.value
        if isinstance(seq, cst.Name):
            seq = pm.value_of(seq)
        while isinstance(seq, cst.BinaryOperation) and isinstance(seq.operator, cst.Add):
            seq = seq.right
        if isinstance(seq, (cst.Tuple, cst.List)):
            for e in seq.elements:
                if isinstance(e, cst.Element) and isinstance(e.value, cst.Name) and e.value.value == param:
                    return e.value
    spreads = [a.value for a in call.args if a.star == "**"]
    return spreads[0] if len(spreads) == 1 else None


def _spread_passed(pm, call: cst.Call, fn: cst.FunctionDef, param: str, method: bool, model, path: str) -> Optional[Passed]:
    """A ``Passed`` for what ``call`` passes ``param`` through ``*`` / ``**`` (``spread_for``): a
    dict's entries count only with a dtype the caller's model knows and computed, not guessed."""
    value = spread_for(model, call, fn, param, method)
    if value is None:
        return None
    if any(a.star == "**" and a.value is value for a in call.args):
        fact = model.passed_dtype(call, value)
        if fact.dtype is None or fact.assumed:
            return None
    return Passed(call, value, model, path)


def passed_values(pm, fn: cst.FunctionDef, param: str, elsewhere: bool = True) -> List[Passed]:
    """What the calls of ``fn`` in this file and (``elsewhere``), for a module-level function, in
    the files of the project that import it pass for ``param``."""
    ctx = pm.ctx
    method = isinstance(ctx.parent(ctx.parent(fn)), cst.ClassDef)
    out: List[Passed] = []
    for call in pm.calls_of(fn):
        if ctx.enclosing_function(call) is fn:
            continue  # recursion says nothing new
        known, value = argument_for(call, fn, param, method)
        if known:
            out.append(Passed(call, value, pm, ctx.path))
        else:
            spread = _spread_passed(pm, call, fn, param, method, pm, ctx.path)
            if spread is not None:
                out.append(spread)
    if elsewhere:
        out.extend(project_passed_once(pm, fn, param))
    return out


def project_passed_once(pm, fn: cst.FunctionDef, param: str) -> List[Passed]:
    """``project_passed``, worked out once per run and worker process (the callers' files are
    parsed for it, and every file whose analysis reaches the helper asks again). What it reads of
    the project's facts is kept with it and noted again for each file that uses it (the results
    cache's dependencies). The calls and values do not depend on any dtype answer."""
    ctx = pm.ctx
    project = ctx.project
    if project is None or not ctx.imports.module_name or not hasattr(project, "memo"):
        return project_passed(pm, fn, param)
    return memoised_with_reads(project, "project_passed", (ctx.path, ctx.order(fn), param),
                               lambda: project_passed(pm, fn, param))


def memoised_with_reads(project, memo: str, key, compute, keep=lambda: True):
    """``compute()``, worked out once per run and worker process in the project's memo ``memo``
    under ``key``. The project facts read while it runs (``project._recording``, when the project
    notes them) are kept with the answer and noted again for each file that uses it: the results
    cache's dependencies. ``keep()``, asked after the computation, says whether the answer may be
    kept (not when a cycle cut it short: then it depends on which question led to it)."""
    table = project.memo(memo)
    recording = getattr(project, "_recording", None)
    kept = table.get(key)
    if kept is not None:
        value, reads = kept
        if recording is not None:
            recording.extend(r for r in reads if r not in recording)
        return value
    noting = hasattr(project, "note_fact")
    if noting:
        project._recording = []
    try:
        value = compute()
    finally:
        reads = project._recording if noting else []
        if noting:
            project._recording = recording
            if recording is not None:
                recording.extend(r for r in reads if r not in recording)
    if keep():
        table[key] = (value, reads)
    return value


def project_passed(pm, fn: cst.FunctionDef, param: str) -> List[Passed]:
    """What the calls of ``fn`` in other files of the project pass for ``param`` (see
    ``project_call_sites``)."""
    method = isinstance(pm.ctx.parent(pm.ctx.parent(fn)), cst.ClassDef)
    out: List[Passed] = []
    for other, other_pm, call in project_call_sites(pm, fn):
        known, value = argument_for(call, fn, param, method)
        if known:
            out.append(Passed(call, value, other_pm, other.path))
        else:
            spread = _spread_passed(other_pm, call, fn, param, method, other_pm, other.path)
            if spread is not None:
                out.append(spread)
    return out


def project_call_sites(pm, fn: cst.FunctionDef) -> List[Tuple[object, object, cst.Call]]:
    """(context, precision model, call) for each call of ``fn`` in other project files: of a
    module-level function, and of a method of a module-level class through an instance the calling
    file holds (``self.coder.encode(h, ha)`` after ``self.coder = BoxCoder()``; ``loss_fn(x, y)`` for
    ``forward``, the instance built there or handed to a function as an argument). The project index
    names the files and the calls' lines; only those files are parsed (at most ``MAX_FILES``). None
    for a file outside the project's modules; test files only when ``fn``'s own file is a test."""
    ctx = pm.ctx
    project = ctx.project
    if not (ctx.imports.module_name and project is not None and hasattr(project, "callers")):
        return []
    method = isinstance(ctx.parent(ctx.parent(fn)), cst.ClassDef)
    owner = ctx.parent(ctx.parent(fn)) if method else None
    if method and not (isinstance(owner, cst.ClassDef) and ctx.parent(owner) is ctx.module):
        return []
    qualified = ".".join([ctx.imports.module_name, *([owner.name.value] if method else []), fn.name.value])
    here = Path(ctx.path).resolve()
    callees: Dict[Path, set] = {}
    lines: Dict[Path, set] = {}
    building = method and fn.name.value == "__init__"
    # ``focal_jit = torch.jit.script(focal)`` is no definition the index resolves calls to: its calls
    # are those written with its name that the calling file resolves to it
    aliases = [] if method else [(a, f"{ctx.imports.module_name}.{a}") for a in pm.compiled_aliases(fn)]
    aliased = [s for last, name in aliases for s in getattr(project, "calls_named", lambda _: [])(last) if s.callee == name]
    for site in [*project.callers(qualified), *aliased]:
        # ``Class.method(obj, x)`` passes self itself; ``Class(...)`` runs ``__init__`` on a new one
        if site.path != here and (site.on_self or not method or (building and not site.callee.endswith(".__init__"))):
            callees.setdefault(site.path, set()).add(site.callee)
            lines.setdefault(site.path, set()).add(site.line)
    instances: Dict[Path, set] = {}
    if method and fn.name.value == "forward":
        # the files that build the class call its forward through the instance (``miner(emb)``)
        for site in project.callers(qualified.rsplit(".", 1)[0]):
            if site.path != here:
                instances.setdefault(site.path, set()).add(site.callee)
                callees.setdefault(site.path, set())
                lines.setdefault(site.path, set())
    out: List[Tuple[object, object, cst.Call]] = []
    from .training import is_test_file
    test = getattr(project, "is_test", None)
    if test is not None and not is_test_file(ctx):
        # a test's ``.half()`` input exercises the code: it is no run's precision (issue 8)
        callees = {p: c for p, c in callees.items() if not test(p)}
    for path in list(callees)[:MAX_FILES]:
        other = ctx.other_file(path)
        if other is None:
            continue
        other_pm = pm.model_for(other)
        instance_calls = {id(c) for c in other_pm.module_calls(lambda built: other.call_name(built) in instances[path])} \
            if path in instances else set()
        for call in other.nodes(cst.Call):
            if id(call) in instance_calls:
                pass  # ``loss_fn(x, y)`` of an instance the file built: forward
            elif building and other.call_name(call) in callees[path]:
                pass  # ``Trainer(model=model, args=args)``: the class built, its ``__init__`` run
            elif method:
                # ``self.coder.encode(...)``: the index resolved the instance; the call is the one
                # on that line calling a method of that name
                if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == fn.name.value
                        and other.on_lines(call, lines[path])):
                    continue
            elif other.call_name(call) not in callees[path]:
                continue
            out.append((other, other_pm, call))
    return out


def passed_by_name(pm, fn: cst.FunctionDef, param: str) -> Optional[List[Passed]]:
    """What the calls written with the name of the method ``fn`` (``self.sd.scale_loss(loss)``: a
    receiver the project index does not resolve to a class) pass for ``param``, in the other files
    of the project: the calls that may run it when none is resolved to it (``ProjectIndex.calls_named``
    says which: calls through ``self``'s attributes, imported names, the instances the index follows
    and ``for`` targets, ``metric_fn.update(preds, target)`` in a loop over a dict of metric objects;
    not those on another local or a parameter). A call that cannot bind to ``fn``'s parameters
    (``_may_bind``: a dict's ``update(other)``), or that calls ``self.<name>(...)`` in a class
    unrelated to ``fn``'s (``_another_class_method``), is another method of that name and left out. None
    when no call is left, when they are in more than ``MAX_FILES`` files, or when one does not say
    (``*args``)."""
    ctx = pm.ctx
    project = ctx.project
    if project is None or not hasattr(project, "calls_named") or not ctx.imports.module_name:
        return None
    here = Path(ctx.path).resolve()
    name = fn.name.value
    lines: Dict[Path, set] = {}
    kin: Dict[str, bool] = {}
    for site in project.calls_named(name):
        if site.path != here and _may_bind(fn, [(a.how, a.kind) for a in site.args]) \
                and not _another_class_method(ctx, project, fn, site, kin):
            lines.setdefault(site.path, set()).add(site.line)
    if not lines or len(lines) > MAX_FILES:
        return None
    from .training import is_test_file
    test = getattr(project, "is_test", None)
    if test is not None and not is_test_file(ctx):
        lines = {p: n for p, n in lines.items() if not test(p)}
        if not lines:
            return None
    out: List[Passed] = []
    for path, at in lines.items():
        other = ctx.other_file(path)
        if other is None:
            return None
        calls = [c for c in other.method_calls(name) if other.on_lines(c, at)]
        if not calls:
            return None
        for call in calls:
            if not _may_bind(fn, [(a.keyword.value if a.keyword is not None else a.star or "", "")
                                  for a in call.args]):
                continue  # not a call of this method (``stats.update(other)`` for ``update(preds, target)``)
            known, value = argument_for(call, fn, param, True)
            if not known:
                return None
            out.append(Passed(call, value, pm.model_for(other), other.path))
    return out or None


def _another_class_method(ctx, project, fn: cst.FunctionDef, site, kin: Dict[str, bool]) -> bool:
    """Is ``site`` a call ``self.<name>(...)`` written in a method of a class that neither is the
    class of the method ``fn`` (a module-level class) nor derives from it nor is one of its bases?
    Then it runs that class's method: ``self.forward_train(img, ...)`` inside BYOL is not FCOSHead's
    (EasyCV: calls written ``forward_train`` in 16 files, all but a few on ``self`` of unrelated
    models). ``kin`` memoises the answer per class; the hierarchy is read through
    ``project.subclasses`` (recorded for the results cache)."""
    owner, _, called = site.callee.rpartition(".")
    if not site.on_self or called != fn.name.value or site.caller.rpartition(".")[0] != owner:
        return False  # (``self.head.forward_train(...)``: an attribute of another type, kept)
    cls = ctx.enclosing_class(fn)
    if cls is None or ctx.parent(cls) is not ctx.module or not hasattr(project, "subclasses"):
        return False
    own = f"{ctx.imports.module_name}.{cls.name.value}"
    if owner not in kin:
        kin[owner] = owner == own or any(s.name == owner for s in project.subclasses(own)) \
            or any(s.name == own for s in project.subclasses(owner))
    return not kin[owner]


def _may_bind(fn: cst.FunctionDef, args: List[Tuple[str, str]]) -> bool:
    """May a call with these arguments (``(how, kind)``: how "" positional, "*", "**" or the
    keyword) be a call of the method ``fn`` through an instance? Not with more positional arguments
    than it takes, fewer than it requires, or a keyword it does not take (a call of another class's
    method of that name: a dict's ``update(other)``)."""
    params = fn.params
    names = _positional_names(fn, True)
    required = [p.name.value for p in (*params.posonly_params, *params.params) if p.default is None]
    if required and required[0] in ("self", "cls"):
        required = required[1:]
    required += [p.name.value for p in params.kwonly_params if p.default is None]
    hows = [h for h, _ in args]
    if "*" in hows or "**" in hows:
        return True  # may carry anything
    positional = sum(1 for h in hows if h == "")
    if positional > len(names) and not isinstance(params.star_arg, cst.Param):
        return False
    keywords = {h for h in hows if h}
    takes = {*names, *(p.name.value for p in params.kwonly_params)}
    if not isinstance(params.star_kwarg, cst.Param) and keywords - takes:
        return False
    given = set(names[:positional]) | keywords
    return all(r in given for r in required)


def none_at_every_call(pm, fn: cst.FunctionDef, param: str, depth: int = 0) -> bool:
    """Is ``param`` of ``fn`` None at every call seen (``step(model, opt, loss, scaler=scaler)`` in a
    loop whose own ``scaler=None`` no call gives: a helper's optional GradScaler that nothing hands
    in)? Its default must be None; a call passing nothing, ``None``, or an argument of its own
    function that is None at every call of that one (three calls deep at most) keeps it None. False
    when no call is seen."""
    if depth > 3:
        return False
    params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
    own = next((p for p in params if p.name.value == param), None)
    if own is None or not (isinstance(own.default, cst.Name) and own.default.value == "None"):
        return False
    ctx = pm.ctx
    passed = passed_values(pm, fn, param, elsewhere=ctx.parent(fn) is ctx.module)
    if not passed:
        return False
    for p in passed:
        value = p.value
        if value is None and not any(a.star for a in p.call.args):
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        if isinstance(value, cst.Name):
            bound = p.model.binding_at(value.value, value)
            if isinstance(bound, tuple) and len(bound) == 3 and bound[0] == "param" \
                    and none_at_every_call(p.model, bound[1], value.value, depth + 1):
                continue
        return False
    return True


def only_guessed_in_dead_code(p: Passed, fact, passed: List[Passed]) -> bool:
    """Is ``fact`` (what the call ``p`` passes) float16 only by the regime's guess (``assumed``: an
    argument of the calling method, taken float16 under autocast), in a method nothing in the project
    calls (``called_nowhere``), while another of the calls ``passed`` may run? Such a call never runs,
    and the guess stands for arguments no call in sight gives: the calls that run say what the helper
    gets (alphafold3-pytorch's ``log(sigma)`` in the uncalled ``c_noise(sigma)``, T21-5). A float16
    value the method computes itself (``self.fc(x).sigmoid()``) still counts: it is what that method
    would pass."""
    if not (fact.is_half and getattr(fact, "assumed", False)) or len(passed) < 2:
        return False
    if not in_method_called_nowhere(p.model.ctx, p.call):
        return False
    return any(q is not p and not in_method_called_nowhere(q.model.ctx, q.call) for q in passed)


def in_method_called_nowhere(ctx, node: cst.CSTNode) -> bool:
    """Is ``node`` in a method nothing in the project calls (``called_nowhere``)?"""
    return called_nowhere(ctx, ctx.enclosing_function(node))


def called_nowhere(ctx, fn: Optional[cst.FunctionDef]) -> bool:
    """Is ``fn`` a method that no code of the project runs? A method (no decorator but
    ``staticmethod`` / ``classmethod``, no dunder) of a module-level class deriving only from
    ``nn.Module`` / ``object`` and classes of its own file that do, not one ``nn.Module`` calls on
    itself (``modules.MODULE_SELF_CALLS``: ``forward``, ``extra_repr``, ...), whose name no other line of
    the project's Python files and no configuration file spells (a call, a callback, a
    ``getattr(self, "name")``), in a file that looks up no attribute of ``self`` by a computed name.
    alphafold3-pytorch's ``ElucidatedAtomDiffusion.c_noise(sigma)``, which nothing calls: its
    ``log(sigma)`` is no call of ``log`` that runs (triage set 21, T21-5)."""
    from ..torch_api.modules import MODULE_SELF_CALLS
    from .project_text import grep
    if fn is None:
        return False
    owner = ctx.parent(ctx.parent(fn))
    name = fn.name.value
    project = ctx.project
    if not (isinstance(owner, cst.ClassDef) and ctx.parent(owner) is ctx.module and ctx.parent(fn) is owner.body) \
            or name.startswith("__") and name.endswith("__") or name in MODULE_SELF_CALLS \
            or project is None or not ctx.imports.module_name or not hasattr(project, "named_in_configs"):
        return False
    key = ("called_nowhere", fn)
    cache = ctx._cache
    if key in cache:
        return cache[key]
    cache[key] = False  # (while it is worked out)
    source = ctx.source.decode("utf-8", "replace") if isinstance(ctx.source, bytes) else str(ctx.source)
    if any(not (isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod"))
           for d in fn.decorators) or not _module_lineage(ctx, owner, 0) or _COMPUTED_SELF_ATTRIBUTE.search(source):
        return False
    word = rf"\b{re.escape(name)}\b"
    if len(re.findall(word, source)) != 1 or getattr(project, "calls_named", lambda _: [])(name):
        return False  # (the cheap answers first: spelled again in its file, called by name elsewhere)
    here = str(Path(ctx.path).resolve())
    spelled = [(path, line) for path, line, _ in grep(ctx, word)]
    nowhere = spelled == [(here, ctx.line_of(fn.name))] and not project.named_in_configs(name)
    cache[key] = nowhere
    return nowhere


# ``getattr(self, "forward_" + mode)``, ``getattr(self, f"c_{name}")``, ``getattr(self, name, None)``: a
# method of the file's classes may run by a name no line spells. Not a literal name, nor a lookup whose
# default is a boolean or a number (``getattr(self, flag_name, False)`` reads a flag: alphafold3-pytorch)
_COMPUTED_SELF_ATTRIBUTE = re.compile(r"getattr\(\s*self\s*,(?!\s*[\"']\w*[\"']\s*[,)])"
                                      r"(?![^,()]*,\s*(?:True|False|-?\d[\d.eE+-]*)\s*\))")


def _module_lineage(ctx, cls: cst.ClassDef, depth: int) -> bool:
    """Does ``cls`` derive only from ``nn.Module`` / ``object`` and classes of its own file that do
    (no framework base whose machinery calls hooks the subclass defines: Lightning's ``training_step``)?"""
    from ..torch_api.modules import MODULE_CLASSES
    if depth > 3 or cls.keywords:
        return False
    for base in cls.bases:
        if base.star or base.keyword is not None:
            return False
        name = ctx.qualname(base.value) or ""
        if name in MODULE_CLASSES or name in ("object", "builtins.object"):
            continue
        local = next((s for s in ctx.module.body if isinstance(s, cst.ClassDef) and isinstance(base.value, cst.Name)
                      and s.name.value == base.value.value and s is not cls), None)
        if local is None or ctx.imports.binds(base.value.value) or not _module_lineage(ctx, local, depth + 1):
            return False
    return True
