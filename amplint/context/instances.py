"""Where the instances of a module class end up, and whether each one is frozen.

A parameter of a frozen module does not train: BEiT v2's tokenizer loads a CLIP teacher
(``self.teacher_model, _ = clip.load(...)``), sets ``requires_grad = False`` on its parameters
and only encodes images with it, so nothing grows that CLIP's ``logit_scale``. The instances are
followed from the class's instantiations (``Project.callers``) through the functions that return
them (``model = CLIP(...)``; ``return model.eval()``; ``model = build_model(sd).to(device)``;
``return model, transform``) to the name or ``self`` attribute that holds them, where a freeze
is looked for: ``for p in <holder>.parameters(): p.requires_grad = False`` (or
``p.requires_grad_(False)``) or ``<holder>.requires_grad_(False)``, in the holding function (a
local name) or class (an attribute). Any instance not followed to a frozen holder, or a class no
file instantiates (a library's: its users pick), makes the answer None.

Only asked for a finding about to be reported (a few per project), so the files it opens are few.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

import libcst as cst

MAX_DEPTH = 3  # returning functions followed from an instantiation
MAX_SITES = 8  # instantiations (or calls of a returning function) looked at

# methods that return the module they are called on
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "half", "bfloat16", "requires_grad_",
                             "to_empty"})


def frozen_everywhere(ctx, cls: cst.ClassDef) -> Optional[List[str]]:
    """``file:line`` of the freeze of each instance of the module-level class ``cls`` the project
    builds outside its tests, when every one is followed to a frozen holder; else None."""
    project = ctx.project
    module = ctx.imports.module_name
    if project is None or not module or not hasattr(project, "callers") or ctx.parent(cls) is not ctx.module:
        return None
    freezes: List[str] = []
    if not _holders_frozen(ctx, f"{module}.{cls.name.value}", None, 0, freezes) or not freezes:
        return None
    return freezes


def parts_taken_everywhere(ctx, cls: cst.ClassDef) -> Optional[List[str]]:
    """``file:line`` of where the parts are taken of each instance of the module-level class ``cls``
    the project builds outside its tests, when every one is held by a local that only hands out its
    attributes (``model = clip.build_model(); self.transformer = model.transformer``: VQ-Diffusion's
    text embedding takes CLIP's text tower), never called, passed on, kept or returned: its
    ``forward`` never runs, and what only ``forward`` uses (CLIP's ``logit_scale``) is never
    trained. Else None."""
    project = ctx.project
    module = ctx.imports.module_name
    if project is None or not module or not hasattr(project, "callers") or ctx.parent(cls) is not ctx.module:
        return None
    taken: List[str] = []
    check = _PartsOnly(_forward_idle_calls(ctx, cls))
    if not _holders_frozen(ctx, f"{module}.{cls.name.value}", None, 0, taken, check) or not taken:
        return None
    return taken


# How many classes up a chain of holders whose forward never runs is followed (DiffBIR: the loss held by
# RAM, RAM held by an inference captioner).
_DEAD_DEPTH = 2
_ASKED: set = set()  # (file, class) whose forward_never_runs is being worked out (a cycle says no)


def forward_never_runs(ctx, cls: cst.ClassDef, depth: int = 0) -> bool:
    """Does the ``forward`` of the module-level ``nn.Module`` class ``cls`` run in none of the project's
    own uses? Every instance the project builds outside its tests is followed (``parts_taken_everywhere``)
    to a holder that only takes its parts, calls methods of it that run no forward, or calls it in the
    ``forward`` of another class whose forward never runs: DiffBIR builds the recognize-anything tagger
    only for inference captions (``model.generate_tag(image)``), so the tagging loss its ``forward`` calls
    never runs there (triage set 22, T22-3). False for a class no file builds (its users' to run)."""
    project = ctx.project
    module = ctx.imports.module_name
    if project is None or not module or not hasattr(project, "callers") or ctx.parent(cls) is not ctx.module:
        return False
    key = ("forward_never_runs", cls)
    cache = ctx._cache
    if key in cache:
        return cache[key]
    asking = (ctx.path, cls.name.value)
    if asking in _ASKED:
        return False
    _ASKED.add(asking)
    try:
        taken: List[str] = []
        check = _PartsOnly(_forward_idle_calls(ctx, cls), depth)
        never = _holders_frozen(ctx, f"{module}.{cls.name.value}", None, 0, taken, check) and bool(taken)
    finally:
        _ASKED.discard(asking)
    cache[key] = never
    return never


def _context_for(ctx, path: Path):
    return ctx if Path(ctx.path).resolve() == path else ctx.other_file(path)


def _holders_frozen(ctx, qualified: str, index: Optional[int], depth: int, out: List[str], check=None) -> bool:
    """Is every result of the calls of ``qualified`` (element ``index`` of the tuple it returns)
    held by a frozen holder (by a holder ``check`` accepts: ``_parts_only``)?"""
    project = ctx.project
    is_test = getattr(project, "is_test", None)
    sites = [s for s in project.callers(qualified) if not (is_test is not None and is_test(s.path))]
    if not sites and depth > 0 and _run_by_none(ctx, qualified):
        return True  # the instances a function nothing calls returns are held by no one
    if not sites or len(sites) > MAX_SITES:
        return False
    last = qualified.rsplit(".", 1)[-1]
    for site in sites:
        other = _context_for(ctx, site.path)
        if other is None:
            return False
        calls = [c for c in other.nodes(cst.Call) if _last_name(c) == last and other.on_lines(c, {site.line})]
        if not calls:
            return False
        for call in calls:
            if not _result_frozen(other, call, index, site.caller, depth, out, check):
                return False
    return True


def _run_by_none(ctx, qualified: str) -> bool:
    """Is the module-level function ``qualified`` of ``ctx``'s file run by none of the project's own
    training runs: no file calls it, imports it or names it besides its definition (an ``__all__``
    string is no use) and no configuration file names it, in a file the project's training entry points
    reach (``Regime.entry_points``: their runs are what trains; library code is its users' to call)?
    imaginaire's copy of OpenAI's ``clip.py`` keeps the upstream ``load()`` returning the CLIP it
    builds, which nothing calls: that is no instance anyone trains (triage set 14, T14-4b)."""
    module, _, name = qualified.rpartition(".")
    project = ctx.project
    if module != ctx.imports.module_name or not hasattr(project, "named_in_configs"):
        return False
    defs = [s for s in ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    if len(defs) != 1 or project.imported(qualified) or project.named_in_configs(name):
        return False
    for n in ctx.nodes(cst.Name):
        if n.value != name or n is defs[0].name:
            continue
        parent = ctx.parent(n)
        if isinstance(parent, cst.Attribute) and parent.attr is n or isinstance(parent, cst.Arg) and parent.keyword is n:
            continue  # ``torch.load(path)``, ``f(load=...)``: another name
        return False  # referenced in its own file: ``LOADERS = {"clip": load}``, a call through an alias
    regime = getattr(ctx, "regime", None)
    return bool(regime is not None and regime.entry_points and not regime.any_fp16_use)


def _last_name(call: cst.Call) -> Optional[str]:
    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _through_self_returning(ctx, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``x.to(device).eval()`` for ``x``: the outermost call of methods returning the module."""
    while True:
        parent = ctx.parent(expr)
        call = ctx.parent(parent) if isinstance(parent, cst.Attribute) else None
        if not (isinstance(parent, cst.Attribute) and parent.value is expr and parent.attr.value in _SELF_RETURNING
                and isinstance(call, cst.Call) and call.func is parent):
            return expr
        expr = call


def _strip_self_returning(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SELF_RETURNING:
        expr = expr.func.value
    return expr


def _result_frozen(ctx, call: cst.Call, index: Optional[int], caller: str, depth: int, out: List[str],
                   check=None) -> bool:
    expr = _through_self_returning(ctx, call)
    parent = ctx.parent(expr)
    if index is not None:  # the callee returns a tuple: its element ``index`` is the instance
        target = parent.targets[0].target if isinstance(parent, cst.Assign) and parent.value is expr \
            and len(parent.targets) == 1 else None
        if not (isinstance(target, (cst.Tuple, cst.List)) and index < len(target.elements)):
            return False
        holder = target.elements[index].value
    elif isinstance(parent, cst.Assign) and parent.value is expr and len(parent.targets) == 1:
        holder = parent.targets[0].target
    elif isinstance(parent, cst.Return):
        return depth < MAX_DEPTH and _holders_frozen(ctx, caller, None, depth + 1, out, check)
    elif isinstance(parent, cst.Arg) and parent.value is expr and isinstance(check, _PartsOnly) and index is None:
        # ``CustomCLIP(CLIP())``: a constructor that only takes parts of it
        taken = check.passed(ctx, parent, 0)
        if taken is None:
            return False
        out.append(f"{ctx.path}:{ctx.line_of(taken)}")
        return True
    else:
        return False
    if isinstance(holder, cst.Name):
        fn = ctx.enclosing_function(call)
        returned = _returned_as(ctx, fn, holder.value) if fn is not None else None
        if returned is not None:  # ``return model`` / ``return model, transform``: its callers hold it
            return depth < MAX_DEPTH and _holders_frozen(ctx, caller, returned if returned >= 0 else None,
                                                        depth + 1, out, check)
        scope = fn if fn is not None else ctx.module
    elif isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self" \
            and check is None:
        scope = ctx.enclosing_class(call)
    elif isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self" \
            and isinstance(check, _PartsOnly):
        taken = check.attribute(ctx, holder.attr.value, built=expr)  # ``self.loss_fn = AsymmetricLoss()``
        if taken is None:
            return False
        out.append(f"{ctx.path}:{ctx.line_of(taken)}")
        return True
    else:
        return False
    freeze = (check or _freeze_in)(ctx, scope, ctx.code(holder)) if scope is not None else None
    if freeze is None:
        return False
    out.append(f"{ctx.path}:{ctx.line_of(freeze)}")
    return True


# Methods of a module that neither run its forward nor hand it on.
_KEEPS_FORWARD_IDLE = _SELF_RETURNING | {"load_state_dict", "parameters", "named_parameters", "state_dict"}


def _forward_idle_calls(ctx, cls: cst.ClassDef):
    """Which method calls ``x.m(...)`` on an instance of ``cls`` leave its ``forward`` idle: those of
    ``_KEEPS_FORWARD_IDLE``; for a class deriving from ``nn.Module`` alone, also any name but
    ``forward`` / ``__call__`` and the methods of ``cls`` that run it (``self(...)``, ``self.forward(...)``
    or such a method: a call of its submodule, ``clip_model.token_embedding(ids)``, or of a method
    like ``encode_image``, runs no ``CLIP.forward``)."""
    from ..torch_api.modules import MODULE_CLASSES
    if not cls.bases or any(b.keyword is not None or b.star or (ctx.qualname(b.value) or "") not in MODULE_CLASSES
                            for b in cls.bases):
        return lambda name: name in _KEEPS_FORWARD_IDLE
    methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
    called = {}
    for name, fn in methods.items():
        names = set()
        for call in ctx.nodes(cst.Call):
            if not ctx.is_ancestor(fn, call):
                continue
            func = call.func
            if isinstance(func, cst.Name) and func.value == "self":
                names.add("forward")
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                names.add(func.attr.value)
        called[name] = names
    runners = {"forward", "__call__"}
    grown = True
    while grown:
        grown = False
        for name, names in called.items():
            if name not in runners and names & runners:
                runners.add(name)
                grown = True
    return lambda name: name in _KEEPS_FORWARD_IDLE or name not in runners


# How many constructors deep a module handed on is followed (``CustomCLIP(clip_model)`` ->
# ``TextEncoder(clip_model)``).
_WRAP_DEPTH = 3


class _PartsOnly:
    """The holder check of ``parts_taken_everywhere``: ``idle(name)`` says whether ``holder.name(...)``
    leaves the instance's ``forward`` idle (``_forward_idle_calls``)."""

    def __init__(self, idle, depth: int = 0):
        self.idle = idle
        self.depth = depth

    def __call__(self, ctx, scope: cst.CSTNode, holder: str) -> Optional[cst.CSTNode]:
        return self.parts(ctx, scope, holder, 0)

    def parts(self, ctx, scope: cst.CSTNode, holder: str, depth: int) -> Optional[cst.CSTNode]:
        """The first use of the local ``holder`` inside ``scope`` when every use reads an attribute of it
        (``model.transformer``) or calls a method of it that leaves its forward idle (``self.idle``), taking
        at least one part, or hands it to a constructor or a ``self`` attribute that only takes parts
        (``passed``, ``_kept_parts_only``); None when it is called, passed elsewhere, stored, returned or
        rebound."""
        first = None
        for name in ctx.nodes(cst.Name):
            if name.value != holder or not ctx.is_ancestor(scope, name):
                continue
            parent = ctx.parent(name)
            if isinstance(parent, cst.Attribute) and parent.attr is name or isinstance(parent, cst.Arg) and parent.keyword is name:
                continue  # ``self.clip_model``, ``f(clip_model=...)``: another name
            if isinstance(parent, cst.AssignTarget) and parent.target is name or _unpacked_into(ctx, name) \
                    or isinstance(parent, cst.Param) and parent.name is name:
                continue  # the binding (``model = build_model()``, ``model, _ = clip.load(...)``, a parameter)
            if isinstance(parent, cst.Arg) and parent.value is name:
                wrapper = self.passed(ctx, parent, depth)
                if wrapper is None:
                    return None  # ``f(model)``
                first = first or wrapper
                continue
            if isinstance(parent, cst.Assign) and parent.value is name:
                kept = self._kept(ctx, parent)
                if kept is None:
                    return None  # ``self.m = model`` then ``self.m(x)``
                first = first or kept
                continue
            if isinstance(parent, cst.Call) and parent.func is name and self.dead(ctx, parent):
                first = first or parent  # ``model(x)`` in a forward that never runs
                continue
            if not (isinstance(parent, cst.Attribute) and parent.value is name):
                return None  # ``model(x)``, ``return model``, ``model2 = model``
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent:
                if not self.idle(parent.attr.value) and not self.dead(ctx, call):
                    return None  # ``model.forward(x)``, a method of it that calls ``self(...)``
                if parent.attr.value not in _KEEPS_FORWARD_IDLE:
                    first = first or parent  # ``model.encode_text(ids)``, ``model.token_embedding(ids)``
                continue
            if isinstance(ctx.parent(parent), cst.AssignTarget):
                return None  # ``model.x = ...``
            first = first or parent
        return first

    def passed(self, ctx, arg: cst.Arg, depth: int) -> Optional[cst.CSTNode]:
        """``Wrapper(..., model)`` of a class of this file that keeps it and uses only its parts
        (``_wrapped_parts_only``), or whose ``__init__`` only takes parts of it (``self.visual =
        clip_model.visual``; handing it on to another such constructor: multimodal-prompt-learning's
        ``CustomCLIP(cfg, classnames, clip_model)``, triage set 21, T21-2b): the first part taken."""
        kept = _wrapped_parts_only(ctx, arg)
        if kept is not None or depth >= _WRAP_DEPTH:
            return kept
        found = _constructor_param(ctx, arg) or _function_param(ctx, arg)
        if found is None:
            return None
        other, fn, param = found
        taken = self.parts(other, fn, param, depth + 1)
        return arg if taken is not None and other is not ctx else taken  # (a node of this file, for its line)

    def _kept(self, ctx, assign: cst.Assign) -> Optional[cst.CSTNode]:
        """``self.clip_model = clip_model``: the attribute's first use when it only takes parts
        (``attribute``), else None."""
        if len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
            return None
        return self.attribute(ctx, target.attr.value, at=assign)

    def attribute(self, ctx, attr: str, built: Optional[cst.CSTNode] = None,
                  at: Optional[cst.CSTNode] = None) -> Optional[cst.CSTNode]:
        """The first use of ``self.<attr>`` when every one in the file reads a part of it, calls a method
        leaving its forward idle, or calls it in code that never runs (``dead``), and no other project
        file names the attribute: multimodal-prompt-learning's ZeroshotCLIP keeps ``self.clip_model`` and
        calls ``self.clip_model.encode_image(image)``; DiffBIR's RAM keeps ``self.tagging_loss_function =
        AsymmetricLoss(...)`` and calls it only in its own ``forward``, which never runs. An assignment to
        it hands it a local, or is ``built`` (the construction followed). None otherwise."""
        place = at if at is not None else built
        if self._named_elsewhere(ctx, attr, place):
            return None
        holder = ctx.enclosing_class(place) if place is not None else None
        if holder is None:
            return None
        from .precision import precision_model  # noqa: PLC0415 (the precision model imports this module)
        related = precision_model(ctx)._related_classes(holder)
        first = None
        for node in ctx.nodes(cst.Attribute):
            if node.attr.value != attr or ctx.enclosing_class(node) not in related:
                continue  # (``self.model`` of an unrelated class of the file is another object)
            if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
                return None  # ``trainer.clip_model``: another holder of that name
            parent = ctx.parent(node)
            if isinstance(parent, cst.AssignTarget) and parent.target is node:
                value = ctx.parent(parent).value if isinstance(ctx.parent(parent), cst.Assign) else None
                if not (isinstance(value, cst.Name) or value is not None and value is built):
                    return None  # ``self.clip_model = something else``
                continue
            if isinstance(parent, cst.Call) and parent.func is node:
                if not self.dead(ctx, parent):
                    return None  # ``self.loss_fn(x)`` in code that runs
                first = first or parent
                continue
            if isinstance(parent, cst.Arg) and parent.value is node:
                handed = self.passed(ctx, parent, self.depth)
                if handed is None:
                    return None  # ``f(self.clip_model)``
                first = first or handed
                continue
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                return None  # ``self.clip_model + 1``, ``return self.clip_model``
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent and not self.idle(parent.attr.value) \
                    and not self.dead(ctx, call):
                return None
            if isinstance(ctx.parent(parent), cst.AssignTarget):
                return None
            first = first or parent
        return first

    @staticmethod
    def _named_elsewhere(ctx, attr: str, at: Optional[cst.CSTNode]) -> bool:
        """Does another project file read ``.<attr>`` (not in an import) and name the class holding it
        (``at``'s, or any class of this file): ``captioner.model(x)`` after ``captioner = Captioner()``, a
        subclass's ``self.model(x)``? A file that names no such class holds other objects' ``.model``."""
        from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
        here = str(Path(ctx.path).resolve())
        reads = {path for path, _, text in grep(ctx, rf"\.{re.escape(attr)}\b")
                 if path != here and not re.match(r"\s*(from|import)\s", strip_comment(text))}
        if not reads:
            return False
        holder = ctx.enclosing_class(at) if at is not None else None
        classes = [holder] if holder is not None else [c for c in ctx.module.body if isinstance(c, cst.ClassDef)]
        for cls in classes:
            if any(path in reads for path, _, _ in grep(ctx, rf"\b{re.escape(cls.name.value)}\b")):
                return True
        return False

    def dead(self, ctx, node: cst.CSTNode) -> bool:
        """Is ``node`` in the ``forward`` of a module-level class whose forward never runs
        (``forward_never_runs``, one class further up the chain)?"""
        fn = ctx.enclosing_function(node)
        cls = ctx.enclosing_class(fn) if fn is not None else None
        return fn is not None and fn.name.value == "forward" and cls is not None and ctx.parent(fn) is cls.body \
            and ctx.parent(cls) is ctx.module and self.depth < _DEAD_DEPTH \
            and forward_never_runs(ctx, cls, self.depth + 1)


def _unpacked_into(ctx, name: cst.Name) -> bool:
    """Is ``name`` an element of a tuple / list assignment target (``model, _ = clip.load(...)``)?"""
    node: cst.CSTNode = name
    parent = ctx.parent(node)
    if not isinstance(parent, (cst.Element, cst.StarredElement)):
        return False
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        node, parent = parent, ctx.parent(parent)
    return isinstance(parent, cst.AssignTarget) and parent.target is node


def _constructor_param(ctx, arg: cst.Arg):
    """(``__init__``, parameter name) that ``arg`` of ``Class(...)`` binds, for a module-level class of
    this file with an ``__init__`` of its own; None otherwise (``*args``, an unknown class)."""
    call = ctx.parent(arg)
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and not arg.star):
        return None
    classes = [c for c in ctx.module.body if isinstance(c, cst.ClassDef) and c.name.value == call.func.value]
    if len(classes) != 1 or ctx.imports.binds(call.func.value):
        return None
    init = next((f for f in classes[0].body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"), None)
    param = _bound_param(call, arg, init, method=True) if init is not None else None
    return (ctx, init, param) if param is not None else None


def _function_param(ctx, arg: cst.Arg):
    """(context, def, parameter name) that ``arg`` of ``f(...)`` binds, for a module-level function of this
    file or one a project module defines that this file imports by name (DiffBIR's ``inference(image,
    self.model)`` after ``from ram import inference_ram as inference``); None otherwise."""
    from .definitions import definition_of  # noqa: PLC0415 (a leaf module)
    call = ctx.parent(arg)
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and not arg.star):
        return None
    name = call.func.value
    if not ctx.imports.binds(name):
        fns = [f for f in ctx.module.body if isinstance(f, cst.FunctionDef) and f.name.value == name]
        found = (ctx, fns[0]) if len(fns) == 1 else None
    else:
        index = ctx.project_index
        sym = index.resolve(ctx.qualname(call.func) or "", ctx.imports.module_name or "") if index is not None else None
        found = definition_of(ctx, sym) if sym is not None and sym.kind == "function" and not sym.is_method else None
    if found is None or not isinstance(found[1], cst.FunctionDef):
        return None
    other, fn = found
    param = _bound_param(call, arg, fn, method=False)
    return (other, fn, param) if param is not None else None


def _bound_param(call: cst.Call, arg: cst.Arg, fn: cst.FunctionDef, method: bool) -> Optional[str]:
    """The parameter of ``fn`` that ``arg`` of ``call`` binds (after ``self`` for a method); None where it
    is not plain (``*args``, ``**kwargs``)."""
    if fn.params.star_kwarg is not None and arg.keyword is not None or arg.star:
        return None
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)][1 if method else 0:]
    if arg.keyword is not None:
        wanted = arg.keyword.value
        return wanted if wanted in names or any(p.name.value == wanted for p in fn.params.kwonly_params) else None
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional):
        return None
    index = positional.index(arg)
    return names[index] if index < len(names) else None


def _wrapped_parts_only(ctx, arg: cst.Arg) -> Optional[cst.CSTNode]:
    """``ImageEncoder(encoder)`` of a class of this file whose ``__init__`` keeps the argument as
    ``self.model = encoder`` and whose methods use ``self.model`` only to read its attributes or call
    its methods other than ``forward`` (``self.model.encode_image(images)``: imaginaire's metric
    wrapper of CLIP): the use of ``self.model`` found first, else None."""
    call = ctx.parent(arg)
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and arg.keyword is None and not arg.star):
        return None
    classes = [c for c in ctx.nodes(cst.ClassDef) if c.name.value == call.func.value and ctx.parent(c) is ctx.module]
    if len(classes) != 1:
        return None
    cls = classes[0]
    init = next((f for f in cls.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"), None)
    if init is None:
        return None
    params = [p.name.value for p in init.params.params][1:]
    index = [a for a in call.args if a.keyword is None and not a.star].index(arg)
    if index >= len(params):
        return None
    param = params[index]
    attrs = []
    for assign in ctx.nodes(cst.Assign):
        if ctx.is_ancestor(init, assign) and isinstance(assign.value, cst.Name) and assign.value.value == param:
            for t in assign.targets:
                if isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) \
                        and t.target.value.value == "self":
                    attrs.append(t.target.attr.value)
    if len(attrs) != 1:
        return None
    for name in ctx.nodes(cst.Name):  # the parameter itself is used only to be kept
        if name.value == param and ctx.is_ancestor(init, name) and not isinstance(ctx.parent(name), cst.Param) \
                and not (isinstance(ctx.parent(name), cst.Assign) and ctx.parent(name).value is name):
            return None
    first = None
    for attr in ctx.nodes(cst.Attribute):
        if not (attr.attr.value == attrs[0] and isinstance(attr.value, cst.Name) and attr.value.value == "self"
                and ctx.is_ancestor(cls, attr)):
            continue
        parent = ctx.parent(attr)
        if isinstance(parent, cst.AssignTarget):
            continue  # ``self.model = encoder``
        if not (isinstance(parent, cst.Attribute) and parent.value is attr) or parent.attr.value in ("forward", "__call__"):
            return None  # ``self.model(x)``, ``f(self.model)``, ``self.model.forward(x)``
        if isinstance(ctx.parent(ctx.parent(parent)), cst.AssignTarget) or isinstance(ctx.parent(parent), cst.AssignTarget):
            return None  # ``self.model.x = ...``
        first = first or parent
    return first


def _returned_as(ctx, fn: cst.FunctionDef, name: str) -> Optional[int]:
    """-1 when ``fn`` returns ``name`` itself (``return model.eval()``), its position when it
    returns it in a tuple, None when it does not return it."""
    for ret in ctx.nodes(cst.Return):
        if ret.value is None or ctx.enclosing_function(ret) is not fn:
            continue
        value = _strip_self_returning(ret.value)
        if isinstance(value, cst.Name) and value.value == name:
            return -1
        if isinstance(value, cst.Tuple):
            for i, element in enumerate(value.elements):
                item = _strip_self_returning(element.value)
                if isinstance(item, cst.Name) and item.value == name:
                    return i
    return None


def _false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _freeze_in(ctx, scope: cst.CSTNode, holder: str) -> Optional[cst.CSTNode]:
    """The freeze of ``holder`` (its code) inside ``scope``: ``holder.requires_grad_(False)`` or a
    loop over ``holder.parameters()`` setting each one's ``requires_grad`` to False."""
    for call in ctx.nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_" and call.args \
                and _false(call.args[0].value) and ctx.code(call.func.value) == holder and ctx.is_ancestor(scope, call):
            return call
    for loop in ctx.nodes(cst.For):
        it = loop.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "parameters"
                and ctx.code(it.func.value) == holder and isinstance(loop.target, cst.Name)
                and ctx.is_ancestor(scope, loop)):
            continue
        var = loop.target.value
        for node in ctx.nodes(cst.Assign):
            if ctx.is_ancestor(loop.body, node) and _false(node.value) and any(
                    ctx.code(t.target) == f"{var}.requires_grad" for t in node.targets):
                return loop
        for call in ctx.nodes(cst.Call):
            if ctx.is_ancestor(loop.body, call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "requires_grad_" and call.args and _false(call.args[0].value) \
                    and ctx.code(call.func.value) == var:
                return loop
    return None


def _plain_project_class(ctx, cls: cst.ClassDef, *asks: str) -> bool:
    """Is ``cls`` a module-level class with no decorator (a registry's) in a module of the project,
    whose project answers the questions ``asks`` names (``callers``, ``index``, ...)?"""
    project = ctx.project
    return project is not None and bool(ctx.imports.module_name) and not cls.decorators \
        and ctx.parent(cls) is ctx.module and all(hasattr(project, a) for a in asks)


def built_nowhere(ctx, cls: cst.ClassDef, depth: int = 0) -> bool:
    """Is the module-level class ``cls`` one nothing in the project builds or names? No decorator (a
    registry's), no reference in its file outside its own body, no call of it and no import of it
    in another file (``Project.callers`` / ``imported``), no ``<its module>.<Name>`` and no
    ``getattr(<its module>, ...)`` lookup in the project's code, its name in no configuration file (a
    Hydra ``_target_``), its module one other files import names from and none imports whole (it is
    wired statically: what it defines that nothing names is dead there), and its file in no package of
    the project (whose users build its classes) that the project's packaging ships. EVA's
    ``eva_model.Attention``, whose only construction is commented out: its code runs in no training of
    the project, whatever precision the file's entry points train in. Nor does a class whose every
    reference and build lies inside such classes (``_built_only_in_unbuilt``: Cutie's vendored RITM
    ``SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)``, built only by ``OracleMaskLoss``, which nothing
    builds). Asked only of a class holding a finding."""
    project = ctx.project
    module = ctx.imports.module_name
    if not _plain_project_class(ctx, cls, "imported"):
        return False
    name = cls.name.value
    # a star import binds the class by its name: every file naming it must then import it from here
    stars = not project.imported_by_name_only(module) and getattr(project, "imported_by_name_or_star", bool)(module)
    if not project.imported_by_name_only(module) and not stars and not _whole_imports_name_others(ctx, module, name):
        # a file no other file imports names from may be loaded at run time (a registry's), and a module
        # imported whole may be looked into any way (``vars(mod)``): what it defines is judged by the
        # project's precision (docs/precision.md, "Code no entry point reaches")
        return False
    if ctx.file is None or project.in_package(Path(ctx.file)) and (not hasattr(project, "ships")
                                                                    or project.ships(Path(ctx.file))):
        # a package's class is its users' API, built in their code (fairseq's KmeansAttention, which its
        # users train like fairseq's own models); a package the project's packaging leaves out is not
        # published (Cutie ships ``cutie``, not its GUI's ``gui/``)
        return False
    if b"globals()" in ctx.source or b"sys.modules[__name__]" in ctx.source:
        return False  # a lookup of the file's own names by string
    qualified = f"{module}.{name}"
    if project.named_in_configs(name):
        return False
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    last = re.escape(module.rsplit(".", 1)[-1])
    pattern = rf"getattr\(\s*[\w.]*\b{last}\s*,|\b{last}\.{re.escape(name)}\b"
    here = str(Path(ctx.path).resolve())
    if any(path != here and re.search(pattern, strip_comment(text)) for path, _, text in grep(ctx, pattern)):
        return False
    places = [r for r in ctx.semantic.references(name) if not ctx.is_ancestor(cls, r) and not _type_test(ctx, r)]
    if not places and not stars and not project.callers(qualified) and not project.imported(qualified):
        return True
    return _built_only_in_unbuilt(ctx, cls, qualified, [(ctx, r) for r in places], depth)


# How many classes up a chain of builds only never-built classes make is followed.
_UNBUILT_DEPTH = 2


def _built_only_in_unbuilt(ctx, cls: cst.ClassDef, qualified: str, places: list, depth: int) -> bool:
    """Does every reference to the class ``qualified`` (``places`` in its file, and those of the files
    importing it from here: ``_references_elsewhere``; tests aside), and so every build of it, lie inside
    another module-level class that nothing builds (``built_nowhere``)?"""
    name = cls.name.value
    elsewhere = _references_elsewhere(ctx, name, qualified)
    if elsewhere is None:
        return False
    places = places + elsewhere
    if places and depth >= _UNBUILT_DEPTH:
        return False
    at = {(Path(c.path).resolve(), c.line_of(r)) for c, r in places}
    if any((site.path, site.line) not in at for site in ctx.project.callers(qualified)):
        return False  # a call through ``module.Name(...)``, or in a test
    holders: dict = {}
    for other, ref in places:
        holder = next((a for a in other.ancestors(ref) if isinstance(a, cst.ClassDef)
                       and other.parent(a) is other.module), None)
        if holder is None or holder is cls:
            return False
        key = (other.path, holder.name.value)
        if key not in holders:
            holders[key] = built_nowhere(other, holder, depth + 1)
        if not holders[key]:
            return False
    return True


def _whole_imports_name_others(ctx, module: str, name: str) -> bool:
    """Is ``module`` imported whole by some project files (``import modeling``: CAME's run_glue.py /
    run_squad.py / run_pretraining.py, then ``modeling.BertForQuestionAnswering(...)``), each of which uses
    the name it binds only to look up attributes written out (``<local>.<attr>``) other than ``name`` and
    the module's dunders, at least once (an import used for nothing is made for its side effects)? Then its
    definitions are wired statically as by ``from modeling import ...``."""
    project = ctx.project
    if not hasattr(project, "whole_imports"):
        return False
    found = project.whole_imports(module)
    if not found or len(found) > MAX_SITES:
        return False
    for path, local in found:
        other = _context_for(ctx, Path(path).resolve())
        if other is None:
            return False
        used = False
        for ref in other.nodes(cst.Name):
            if ref.value != local or any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in other.ancestors(ref)):
                continue
            parent = other.parent(ref)
            if isinstance(parent, cst.Attribute) and parent.attr is ref:
                continue  # ``x.modeling``: another name
            if not (isinstance(parent, cst.Attribute) and parent.value is ref) or parent.attr.value == name \
                    or parent.attr.value.startswith("__"):
                return False  # ``vars(modeling)``, ``getattr(modeling, n)``, ``modeling.__dict__``, the class itself
            used = True
        if not used:
            return False  # imported for what importing it does (a registry's side effects), or handed on unseen
    return True


def _type_test(ctx, ref: cst.Name) -> bool:
    """Is ``ref`` a class tested against in ``isinstance(x, (A, ref))`` / ``issubclass``: no use that builds one
    (EVA's ``convert_weights_to_fp16`` checks for its Attention)."""
    node = ctx.parent(ref)
    while isinstance(node, (cst.Tuple, cst.Element, cst.Arg)):
        node = ctx.parent(node)
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass")


def built_only_when_off(ctx, cls: cst.ClassDef) -> bool:
    """Is the module-level class ``cls`` built only on the branch of an option that every build leaves
    off? taming-transformers' ``NLayerDiscriminator(..., use_actnorm=False)`` does ``norm_layer =
    nn.BatchNorm2d if not use_actnorm else ActNorm`` and every caller of the project (LlamaGen's GAN
    losses) builds it without ``use_actnorm``: ActNorm's code runs in none of its trainings. Each
    reference to ``cls`` (in this file, or in a file importing it from here: VQ-Diffusion's
    discriminator/model.py imports taming's ``util.ActNorm``) must lie in a function, on the side of an
    ``if`` / conditional expression that a parameter with a falsy default (``False``, ``None``, ``0``)
    takes when true; the function is a module-level function or the ``__init__`` of a module-level class
    (a call of ``cls`` there, ``ActNorm(n) if use_actnorm else nn.BatchNorm2d(n)``, is such a
    reference); every build of it is seen (at least one: a call in the project, or a YAML config's
    ``target:`` naming the class, whose ``params`` must leave it off too) and leaves that parameter off
    (``_off_at_every_call``); no call of ``cls`` lies elsewhere and no configuration file names it."""
    project = ctx.project
    module = ctx.imports.module_name
    if not _plain_project_class(ctx, cls, "callers", "index"):
        return False
    name = cls.name.value
    places = [(ctx, r) for r in ctx.semantic.references(name) if not ctx.is_ancestor(cls, r) and not _type_test(ctx, r)]
    here = Path(ctx.file).resolve() if ctx.file is not None else None
    qualified = f"{module}.{name}"
    if project.named_in_configs(name):
        return False
    sites = project.callers(qualified)
    if project.imported(qualified) and _named_elsewhere(ctx, name) or any(site.path != here for site in sites):
        # (a package's ``from .net import *`` names it nowhere: what builds it is here)
        elsewhere = _references_elsewhere(ctx, name, qualified)
        if elsewhere is None:
            return False
        places += elsewhere
    if not places:
        return False
    # every call of ``cls`` is one of the references looked at (a call through ``module.ActNorm(n)`` is not)
    at = {(Path(c.path).resolve(), c.line_of(r)) for c, r in places}
    if any((site.path, site.line) not in at for site in sites):
        return False
    for other, ref in places:
        found = _switch_of(other, ref)
        if found is None:
            return False
        fn, param = found
        mod = other.imports.module_name
        owner = other.parent(other.parent(fn)) if isinstance(other.parent(fn), cst.IndentedBlock) else None
        if not mod:
            return False
        if other.parent(fn) is other.module:
            switched = f"{mod}.{fn.name.value}"
        elif isinstance(owner, cst.ClassDef) and other.parent(owner) is other.module and fn.name.value == "__init__":
            switched = f"{mod}.{owner.name.value}.__init__"
        else:
            return False
        if not _off_at_every_call(other, switched, param, 0):
            return False
    return True


def _references_elsewhere(ctx, name: str, qualified: str):
    """The references to the class ``qualified`` in the project's other files (outside tests), each with its
    file's context: every other file naming ``name`` must import it from here (``from pkg.util import
    ActNorm``) and use it only by that name, or define a class ``name`` of its own and not import one. None
    when a file names it any other way (a re-export, ``util.ActNorm``, a string) or cannot be read."""
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    project = ctx.project
    here = str(Path(ctx.path).resolve())
    word = re.compile(rf"\b{re.escape(name)}\b")
    paths = sorted({path for path, _, text in grep(ctx, word.pattern) if path != here and word.search(strip_comment(text))})
    if len(paths) > MAX_SITES:
        return None
    out = []
    for path in paths:
        if project.is_test(Path(path)):
            continue
        other = ctx.other_file(Path(path))
        if other is None:
            return None
        imported = other.imports.binds(name)
        if not imported:
            if any(isinstance(c, cst.ClassDef) and c.name.value == name for c in other.module.body):
                continue  # its own class of that name (taming keeps an ActNorm in several files)
            return None
        if other.imports.resolve(name) != qualified or Path(path).name == "__init__.py":
            return None
        refs = other.semantic.references(name)
        if not refs:
            return None  # imported and never used by name: re-exported, looked up
        out += [(other, r) for r in refs if not _type_test(other, r)]
    return out


_FALSY = {"False", "None", "0"}
# How far an option handed on (``Block(dim, cos_attn=cos_attn)``) is followed up its callers.
_FORWARDED_DEPTH = 3


def _named_elsewhere(ctx, name: str) -> bool:
    """Does a project file other than this one name ``name``?"""
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    here = str(Path(ctx.path).resolve())
    word = re.compile(rf"\b{re.escape(name)}\b")
    return any(path != here and word.search(strip_comment(text)) for path, _, text in grep(ctx, word.pattern))


def _off_at_every_call(ctx, qualified: str, param: str, depth: int) -> bool:
    """Does every call of the project function ``qualified`` (at least one) leave its parameter ``param``
    off: pass nothing or a falsy literal for it, or hand on a parameter of its own, with a falsy default,
    that every call of the calling function leaves off (VideoMAEv2's ``VisionTransformer(...,
    cos_attn=False)`` building ``Block(dim, cos_attn=cos_attn)``)? A call through ``*args`` /
    ``**kwargs`` leaves it off only where the option is set nowhere in the project (``_never_set``)."""
    project = ctx.project
    symbol = project.index.symbol(qualified)
    sites = project.callers(qualified)
    if symbol is None:
        return False
    cls, _, method = qualified.rpartition(".")
    in_configs = project.named_in_configs(cls.rpartition(".")[2]) if method == "__init__" else False
    if in_configs:
        # built from a YAML's ``target:`` (VQ-Diffusion's lossconfig naming taming's VQLPIPSWithDiscriminator): its
        # params must leave the option off as well
        if not hasattr(project, "config_leaves_off") or not project.config_leaves_off(cls, param):
            return False
    elif not sites:
        return False
    for site in sites:
        known, arg = site.argument_for(symbol, param)
        if not known:
            if _never_set(ctx, param):
                continue
            return False
        if arg is None or arg.text in _FALSY:
            continue
        outer = _falsy_parameter_of(ctx, site, arg) if depth < _FORWARDED_DEPTH else None
        if outer is None or not _off_at_every_call(ctx, outer, arg.text, depth + 1):
            return False
    return True


def _falsy_parameter_of(ctx, site, arg) -> Optional[str]:
    """The calling function's dotted name when ``arg`` of the call ``site`` is a parameter of that function
    with a falsy default (a module-level function or a module-level class's ``__init__``); else None."""
    if arg.kind != "name":
        return None
    symbol = ctx.project.index.symbol(site.caller)
    if symbol is None or symbol.kind != "function" or arg.text not in symbol.params + symbol.kwonly:
        return None
    other = ctx if Path(ctx.path).resolve() == site.path else ctx.other_file(site.path)
    fn = _def_named(other, symbol.qualname) if other is not None else None
    if fn is None:
        return None
    for p in list(fn.params.params) + list(fn.params.kwonly_params):
        if p.name.value == arg.text:
            d = p.default
            falsy = isinstance(d, cst.Name) and d.value in ("False", "None") or isinstance(d, cst.Integer) and d.value == "0"
            return site.caller if falsy else None
    return None


def _def_named(ctx, qualname: str) -> Optional[cst.FunctionDef]:
    """The module-level function ``f`` or the method ``C.f`` of a module-level class of ``ctx``."""
    parts = qualname.split(".")
    if len(parts) > 2:
        return None
    body = ctx.module.body
    if len(parts) == 2:
        cls = next((s for s in body if isinstance(s, cst.ClassDef) and s.name.value == parts[0]), None)
        if cls is None or not isinstance(cls.body, cst.IndentedBlock):
            return None
        body = cls.body.body
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == parts[-1]), None)


def _never_set(ctx, option: str) -> bool:
    """Is the option ``option`` set nowhere in the project: every line of its Python files naming it only
    defaults it off (``cos_attn=False``), hands it on (``cos_attn=cos_attn``, ``self.cos_attn =
    cos_attn``) or tests it (``if cos_attn:``), and no configuration file names it? A line naming it any
    other way (``cos_attn=True``, ``args.cos_attn``, ``--cos_attn``, a docstring) may turn it on."""
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    if ctx.project.named_in_configs(option):
        return False
    name = re.escape(option)
    harmless = re.compile(
        rf"\b{name}\s*(?::\s*[\w\[\]., ]+)?=\s*(?:False|None|0)\b(?!\s*[.(\[])"  # defaulted off
        rf"|(?:\bself\.)?\b{name}\s*=\s*{name}\b(?!\s*[.(\[])"  # handed on
        rf"|\b(?:el)?if\s+(?:not\s+)?(?:self\.)?{name}\b\s*(?:[:)]|else\b|$)")  # tested
    word = re.compile(rf"\b{name}\b")
    for _, _, text in grep(ctx, rf"\b{name}\b"):
        if word.search(harmless.sub(" ", strip_comment(text))):
            return False
    return True


def _switch_of(ctx, ref: cst.Name):
    """(function, parameter) when ``ref`` sits on the side an ``if`` or conditional expression takes when
    a parameter of the enclosing function with a falsy default is true (``X if not p else ref``,
    ``ref if p else X``, ``if p: ... ref ...``); else None."""
    fn = ctx.enclosing_function(ref)
    if fn is None:
        return None
    defaults = {p.name.value: p.default for p in list(fn.params.params) + list(fn.params.kwonly_params)
                if p.default is not None}
    falsy = {n for n, d in defaults.items() if isinstance(d, cst.Name) and d.value in ("False", "None")
             or isinstance(d, cst.Integer) and d.value == "0"}
    child: cst.CSTNode = ref
    for node in ctx.ancestors(ref):
        if node is fn:
            return None
        if isinstance(node, (cst.IfExp, cst.If)):
            test = node.test
            negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            inner = test.expression if negated else test
            if isinstance(inner, cst.Name) and inner.value in falsy:
                on_true = ctx.is_ancestor(node.body, ref) if isinstance(node, cst.If) else \
                    (node.body is child or ctx.is_ancestor(node.body, ref))
                if on_true != negated:
                    return fn, inner.value
        child = node
    return None


def constructions(ctx, cls: cst.ClassDef) -> Optional[list]:
    """Every place the project builds the module-level class ``cls``: (file context, call) for each
    reference to it, in this file and in the project's other files (tests aside: no run's precision),
    each of which must be a call of it by name (``DomainAdversarialLoss(disc, sigmoid=False)``). A file
    that imports another class of the same name (Transfer-Learning-Library's ``adda.DomainAdversarialLoss``
    beside ``dann.DomainAdversarialLoss``) names that one. None when a reference is anything else (a
    subclass, a registry, ``module.Class``, a string in a configuration; a type annotation is no
    build and is passed over), a file cannot be read, more than ``_MAX_BUILDING_FILES`` name it, or
    nothing builds it."""
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    project = ctx.project
    module = ctx.imports.module_name
    if not _plain_project_class(ctx, cls, "index", "named_in_configs"):
        return None
    name = cls.name.value
    qualified = f"{module}.{name}"
    if project.named_in_configs(name):
        return None
    places = [(ctx, r) for r in ctx.semantic.references(name) if not ctx.is_ancestor(cls, r)]
    here = str(Path(ctx.path).resolve())
    word = re.compile(rf"\b{re.escape(name)}\b")
    paths = sorted({path for path, _, text in grep(ctx, word.pattern) if path != here and word.search(strip_comment(text))})
    if len(paths) > _MAX_BUILDING_FILES:
        return None
    index = project.index
    for path in paths:
        if project.is_test(Path(path)):
            continue
        other = ctx.other_file(Path(path))
        if other is None:
            return None
        if not other.imports.binds(name):
            if any(isinstance(c, cst.ClassDef) and c.name.value == name for c in other.module.body):
                continue  # its own class of that name
            quoted = re.compile(rf"[\"']{re.escape(name)}[\"']".encode())
            if not other.semantic.references(name) and not quoted.search(other.source):
                continue  # named in a docstring only, not as a string a lookup could use
            return None
        sym = index.resolve(other.imports.resolve(name) or name, other.imports.module_name or "")
        if sym is None or Path(other.path).name == "__init__.py":
            return None
        if sym.name != qualified:
            if sym.kind == "class":
                continue  # another class of that name
            return None
        refs = other.semantic.references(name)
        if not refs:
            return None  # imported and never used by name: re-exported, looked up
        places += [(other, r) for r in refs]
    out = []
    for other, ref in places:
        if any(isinstance(a, cst.Annotation) for a in other.ancestors(ref)):
            continue  # ``domain_adv: DomainAdversarialLoss``: a parameter's type, no build
        call = other.parent(ref)
        if not (isinstance(call, cst.Call) and call.func is ref):
            return None
        out.append((other, call))
    return out or None


# The files naming a class that ``constructions`` reads (a loss built by each of a dozen example scripts).
_MAX_BUILDING_FILES = 16
