"""AMP501 deprecated-amp-api."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

import libcst as cst

from ..context.imports import dotted_name
from ..context.requirements import supports_torch_before
from ..edits import add_keyword, as_keyword, attribute_chain, insert_arg, keyword, module_alias
from ..findings import Confidence, Fix, Violation
from ..torch_api.amp_api import DEPRECATED, DEPRECATED_SINCE, REPLACEMENT_SINCE
from .base import Rule

# Modules whose names all live on in torch.amp (``from torch.cuda.amp import autocast`` ->
# ``from torch.amp import autocast``), and the packages holding the ``amp`` modules.
OLD_MODULES = {name.rpartition(".")[0] for name in DEPRECATED}
AMP_MODULES = {"torch.cuda.amp", "torch.cpu.amp"}
# The old autocast's positional parameters; torch.amp.autocast's first positional is device_type.
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")


def replacement(kind: str, device: str) -> str:
    if kind in ("autocast", "GradScaler"):
        return f'torch.amp.{kind}("{device}", ...)'
    if kind == "custom_fwd":
        return f'torch.amp.custom_fwd(device_type="{device}", ...)'
    return f'torch.amp.custom_bwd(device_type="{device}")'


def _new_arguments(call: cst.Call, kind: str, device: str) -> Optional[cst.Call]:
    """The arguments of the torch.amp spelling: the device first (positional for autocast and
    GradScaler, ``device_type=`` for the custom_fwd / custom_bwd decorators). The old autocast's
    positional arguments (enabled, dtype, cache_enabled) become keywords. None when that cannot be
    done with certainty (``*args``)."""
    dev = cst.SimpleString(f'"{device}"')
    if kind == "autocast":
        if any(a.star == "*" for a in call.args):
            return None
        args, i = [], 0
        for a in call.args:
            if a.keyword is None and a.star == "":
                if i >= len(AUTOCAST_POSITIONAL):
                    return None
                a = as_keyword(a, AUTOCAST_POSITIONAL[i])
                i += 1
            args.append(a)
        return insert_arg(call.with_changes(args=args), 0, cst.Arg(dev))
    if kind == "GradScaler":
        # torch.amp.GradScaler(device, init_scale, ...): the old positional order follows device
        return insert_arg(call, 0, cst.Arg(dev))
    if any(a.keyword is not None and a.keyword.value == "device_type" for a in call.args) \
            or any(a.star == "**" for a in call.args):
        return None
    return add_keyword(call, keyword("device_type", dev))


def _outermost(ctx, node: cst.CSTNode) -> cst.CSTNode:
    """The whole attribute chain a name starts (``amp`` -> ``amp.autocast``)."""
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            node = parent
        else:
            return node


def _head(node: cst.CSTNode) -> Optional[cst.Name]:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def _is_import_part(ctx, node: cst.CSTNode) -> bool:
    return any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in ctx.ancestors(node))


class DeprecatedAmpApi(Rule):
    code = "AMP501"
    name = "deprecated-amp-api"
    summary = "Deprecated torch.cuda.amp / torch.cpu.amp API"
    fix_safety = "safe"
    applies_under = "any precision"
    needs = r"\bamp\b"  # every deprecated name is ``torch.<device>.amp.<name>``: ``amp`` is written

    def check(self, ctx) -> Iterable[Violation]:
        uses: List[Tuple[cst.CSTNode, str]] = []
        for node in (*ctx.nodes(cst.Attribute), *ctx.nodes(cst.Name)):
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
                continue  # only the outermost name of a chain
            if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.Import)):
                continue  # the uses are reported, and fixed, not the import line
            if isinstance(node, cst.Name) and not ctx.imports.binds(node.value):
                continue
            if getattr(parent, "keyword", None) is node or getattr(parent, "name", None) is node \
                    or isinstance(parent, cst.AssignTarget):
                continue  # a keyword, a definition's name or an assignment target is not a use
            name = ctx.qualname(node)
            if name in DEPRECATED and not _compatibility_fallback(ctx, node) \
                    and supports_torch_before(ctx.project, REPLACEMENT_SINCE[DEPRECATED[name][0]], ctx.path) is None:
                uses.append((node, name))
        if not uses:
            return
        fixes = _Fixer(ctx, uses).fixes()
        for node, name in uses:
            kind, device = DEPRECATED[name]
            yield Violation(node, f"`{name}` is deprecated since PyTorch {DEPRECATED_SINCE}",
                            Confidence.CERTAIN, fixes.get(node), help=f"use `{replacement(kind, device)}`")


def _new_api_uses(ctx) -> List[cst.CSTNode]:
    """Names in the file that reach the new device-generic API (torch.amp.*, torch.autocast)."""
    uses = ctx._cache.get("amp501_new_api")
    if uses is None:
        uses = [n for n in (*ctx.nodes(cst.Attribute), *ctx.nodes(cst.Name))
                if (ctx.qualname(n) or "").startswith(("torch.amp.", "torch.autocast", "torch.GradScaler"))]
        ctx._cache["amp501_new_api"] = uses
    return uses


def _compatibility_fallback(ctx, node) -> bool:
    """The deprecated spelling as one side of a version check whose other side uses the new API:
    the ``except`` of a ``try`` (timm's NativeScaler, open_clip), either branch of an ``if`` /
    ``elif`` / conditional expression (ultralytics' ``if TORCH_2_4``, speechbrain's and mmengine's
    ``if torch < 2.4`` bodies), or a name that a version-gated import binds to either API
    (accelerate). Replacing it would break exactly the old PyTorch versions the branch exists for."""
    if isinstance(node, cst.Name) and _bound_to_new_api_too(ctx, node.value):
        return True
    new = _new_api_uses(ctx)
    if not new:
        return False

    def has_new(part) -> bool:
        return any(n is part or ctx.is_ancestor(part, n) for n in new)

    child = node
    for a in ctx.ancestors(node):
        if isinstance(a, cst.ExceptHandler):
            t = ctx.parent(a)
            if isinstance(t, cst.Try) and has_new(t.body):
                return True
        elif isinstance(a, (cst.If, cst.IfExp)) and has_new(a) and not has_new(child):
            return True  # another branch of this conditional uses the new API
        child = a
    return False


def _bound_to_new_api_too(ctx, name: str) -> bool:
    """``from torch.amp import GradScaler`` in one branch and ``from torch.cuda.amp import
    GradScaler`` in the other: the import table keeps the last, but either may be in force."""
    for stmt in ctx.nodes(cst.ImportFrom):
        module = ctx.code(stmt.module) if stmt.module is not None else ""
        if module not in ("torch.amp", "torch") or isinstance(stmt.names, cst.ImportStar):
            continue
        for alias in stmt.names:
            bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else ctx.code(alias.name)
            if bound == name and ctx.code(alias.name) in ("GradScaler", "autocast", "custom_fwd", "custom_bwd"):
                return True
    return False


class _Fixer:
    """The fixes of one file's deprecated uses.

    A use whose name comes from an import that can move to ``torch.amp`` as a whole
    (``from torch.cuda.amp import autocast, GradScaler``, ``import torch.cuda.amp as amp``,
    ``from torch.cuda import amp``) is fixed together with that import and every other use of its
    names: one fix, shared by their findings. Other uses (``torch.cuda.amp.autocast(...)``) are
    fixed where they stand, as ``torch.amp.autocast("cuda", ...)``.
    """

    def __init__(self, ctx, uses: List[Tuple[cst.CSTNode, str]]) -> None:
        self.ctx = ctx
        self.uses = dict(uses)
        self._bindings: Dict[str, List[Tuple[cst.ImportAlias, cst.CSTNode]]] = {}
        for stmt in (*ctx.nodes(cst.Import), *ctx.nodes(cst.ImportFrom)):
            if isinstance(stmt.names, cst.ImportStar):
                continue
            for alias in stmt.names:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    bound = alias.asname.name.value
                else:
                    bound = (dotted_name(alias.name) or "").split(".", 1)[0]
                self._bindings.setdefault(bound, []).append((alias, stmt))

    def fixes(self) -> Dict[cst.CSTNode, Fix]:
        out: Dict[cst.CSTNode, Fix] = {}
        groups: Dict[cst.CSTNode, List[cst.CSTNode]] = {}
        for node in self.uses:
            head = _head(node)
            bindings = self._bindings.get(head.value, []) if head is not None else []
            if len({self._target(alias, stmt) for alias, stmt in bindings}) > 1:
                continue  # try: from torch.amp import ... except ImportError: from torch.cuda.amp import ...
            if len(bindings) == 1 and self._movable(*bindings[0]) is not None:
                groups.setdefault(bindings[0][1], []).append(node)
                continue
            fix = self._fix_in_place(node)
            if fix is not None:
                out[node] = fix
        for stmt, nodes in groups.items():
            fix = self._fix_with_import(stmt)
            if fix is not None:
                for node in nodes:
                    out[node] = fix
            else:
                for node in nodes:
                    fix = self._fix_in_place(node)
                    if fix is not None:
                        out[node] = fix
        return out

    @staticmethod
    def _target(alias: cst.ImportAlias, stmt: cst.CSTNode) -> str:
        name = dotted_name(alias.name) or ""
        if isinstance(stmt, cst.ImportFrom):
            return f"{'.' * len(stmt.relative)}{dotted_name(stmt.module) if stmt.module else ''}.{name}"
        return name

    def _movable(self, alias: cst.ImportAlias, stmt: cst.CSTNode) -> Optional[Tuple[cst.CSTNode, cst.CSTNode]]:
        """(node, its replacement) that moves ``stmt``'s names to torch.amp, or None."""
        if isinstance(stmt, cst.ImportFrom):
            if stmt.relative or stmt.module is None:
                return None
            module = dotted_name(stmt.module)
            names = [dotted_name(a.name) for a in stmt.names]
            if module in OLD_MODULES and all(f"{module}.{n}" in DEPRECATED for n in names):
                return stmt.module, attribute_chain("torch.amp")
            if module in ("torch.cuda", "torch.cpu") and names == ["amp"]:
                return stmt.module, attribute_chain("torch")
            return None
        if dotted_name(alias.name) in AMP_MODULES and alias.asname is not None:
            return alias.name, attribute_chain("torch.amp")
        return None

    def _fix_with_import(self, stmt: cst.CSTNode) -> Optional[Fix]:
        """The import moved to torch.amp and every use of its names given the device; None when
        some use of those names cannot be fixed (then the import must stay as it is)."""
        ctx = self.ctx
        bound = {name for name, pairs in self._bindings.items() if any(s is stmt for _, s in pairs)}
        alias = next(a for name in bound for a, s in self._bindings[name] if s is stmt)
        moved = self._movable(alias, stmt)
        if moved is None:
            return None
        replacements = [moved]
        for ref in ctx.nodes(cst.Name):
            if ref.value not in bound or _is_import_part(ctx, ref):
                continue
            parent = ctx.parent(ref)
            if isinstance(parent, cst.Attribute) and parent.attr is ref:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is ref:
                continue
            use = _outermost(ctx, ref)
            name = self.uses.get(use)
            if name is None:
                return None  # a use this fix would leave broken (or a rebinding of the name)
            edit = self._site_edit(use, name, callee=use)
            if edit is None:
                return None
            if edit is not True:
                replacements.append(edit)
        return Fix("Import from `torch.amp` and pass the device explicitly", replacements=replacements)

    def _fix_in_place(self, node: cst.CSTNode) -> Optional[Fix]:
        ctx = self.ctx
        name = self.uses[node]
        kind, device = DEPRECATED[name]
        head = _head(node)
        imports: List[str] = []
        if isinstance(node, cst.Attribute) and head is not None and ctx.imports.resolve(head.value) == "torch":
            prefix = head.value  # ``th.cuda.amp.autocast`` -> ``th.amp.autocast``
        else:
            prefix, imports = module_alias(ctx, "torch")
            if prefix is None:
                return None
        edit = self._site_edit(node, name, callee=attribute_chain(f"{prefix}.amp.{kind}"))
        if edit is None or edit is True:
            return None
        return Fix(f"Use `{replacement(kind, device)}`", replacements=[edit], imports=imports)

    def _site_edit(self, node: cst.CSTNode, name: str, callee: cst.BaseExpression):
        """The edit of one use: (old node, new node or function of the updated node); True when
        the use needs no edit; None when it cannot be fixed."""
        ctx = self.ctx
        kind, device = DEPRECATED[name]
        parent = ctx.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            if _new_arguments(parent, kind, device) is None:
                return None
            return parent, lambda updated: _new_arguments(updated.with_changes(func=callee), kind, device)
        if isinstance(parent, cst.Decorator) and parent.decorator is node and kind in ("custom_fwd", "custom_bwd"):
            return node, cst.Call(func=callee, args=[keyword("device_type", cst.SimpleString(f'"{device}"'))])
        if isinstance(parent, cst.Annotation) and kind == "GradScaler":
            return True if callee is node else (node, callee)  # the type: torch.amp.GradScaler
        return None
