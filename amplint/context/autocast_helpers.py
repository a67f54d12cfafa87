"""Autocast opened by a project's own helper: ``with avoid_float16_autocast_context():``.

Projects wrap autocast in helpers: a function returning ``torch.autocast(..., enabled=False)`` (or
``dtype=torch.float32``), a ``@contextmanager`` that yields inside ``with torch.autocast(...)``, or a
class whose ``__enter__`` enters one. The region a ``with helper():`` opens is that autocast's. The
helper is looked up in the file and, through the file's imports, in the project's modules; one
level deep (a helper of a helper is not followed).
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

import libcst as cst

from .definitions import definition_of
from .evidence import Signal, autocast_signal


def helper_autocast(ctx, call: cst.Call) -> Optional[Tuple[Signal, str, int]]:
    """(the autocast signal, the helper's file, its line) for ``call`` of a project helper that
    opens an autocast context, else None."""
    found = _definition(ctx, call)
    if found is None:
        return None
    home, definition = found
    inner = _opened(home, definition)
    if inner is None:
        return None
    sig = autocast_signal(home.call_facts(inner))
    if sig is None:
        return None
    return sig, home.path, home.line_of(inner)


def _definition(ctx, call: cst.Call):
    """(context, FunctionDef or ClassDef) of the project function or class ``call`` calls."""
    func = call.func
    if isinstance(func, cst.Name):
        for node in (*ctx.nodes(cst.FunctionDef), *ctx.nodes(cst.ClassDef)):
            if node.name.value == func.value and isinstance(ctx.parent(node), cst.Module):
                return ctx, node
    name = ctx.call_name(call)
    project = ctx.project
    if not name or "." not in name or project is None or not hasattr(project, "_module_paths"):
        return None
    module, _, attr = name.rpartition(".")
    paths = project._module_paths()
    path = paths.get(module)
    if path is None:
        # a script's sibling package (``from src.runtime import get_autocast_context`` in ``aero/train.py``): the
        # script's directory is on its import path. (A dictionary lookup: resolving every ``with`` call through the
        # project index searched star-import chains and made fairseq's check 13 times slower.)
        package = (ctx.imports.module_name or "").rpartition(".")[0]
        path = paths.get(f"{package}.{module}") if package else None
    if path is None:
        return None
    other = ctx.other_file(path)
    if other is None:
        return None
    for node in (*other.nodes(cst.FunctionDef), *other.nodes(cst.ClassDef)):
        if node.name.value == attr and isinstance(other.parent(node), cst.Module):
            return other, node
    # re-exported by that project module (``from src.training import get_autocast_context``, defined in
    # ``src/training/runtime.py``): the index follows it, asked only for a module the project has
    index = getattr(project, "index", None)
    found = project.module_name(path) if index is not None else None
    sym = index.resolve(f"{found}.{attr}") if found else None
    if sym is None or sym.kind not in ("function", "class") or "." in sym.qualname:
        return None
    return definition_of(ctx, sym)


def _opened(ctx, definition) -> Optional[cst.Call]:
    """The autocast call a helper opens: the one it returns, yields inside, or enters in
    ``__enter__`` (used as ``with helper():``, the helper is a context manager; its first autocast
    call is the one it opens). A helper that picks one of several by an argument (``if precision ==
    "bf16": return torch.autocast(..., dtype=torch.bfloat16)`` / ``if precision == "fp16": return
    torch.autocast(..., dtype=torch.float16)``) opens its enabled float16 one where the caller picks
    it: that option is one the project runs, as an autocast whose dtype comes from a flag is (physicsnemo
    AeroJEPA's ``get_autocast_context(device, precision)``, real-bug set 16, B16-2)."""
    if isinstance(definition, cst.ClassDef):
        for stmt in definition.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__enter__":
                return _opened(ctx, stmt)
        return None
    opened = [(call, sig) for call in ctx.nodes(cst.Call) if ctx.is_ancestor(definition, call)
              for sig in [autocast_signal(ctx.call_facts(call))] if sig is not None]
    float16 = [call for call, sig in opened if sig.dtype == "float16" and sig.enabled]
    return float16[0] if float16 else opened[0][0] if opened else None


def _autocast_flags(ctx) -> frozenset:
    """Module-level names that say whether this torch has autocast: ``try: from torch.cuda.amp
    import autocast; HAS_AUTOCAST = True`` / ``except ImportError: HAS_AUTOCAST = False``."""
    key = ("autocast_flags",)
    if key in ctx._cache:
        return ctx._cache[key]
    flags = set()
    for stmt in ctx.module.body:
        if not (isinstance(stmt, cst.Try) and isinstance(stmt.body, cst.IndentedBlock)):
            continue
        imports = any(isinstance(s, cst.SimpleStatementLine) and any(
            isinstance(i, cst.ImportFrom) and not isinstance(i.names, cst.ImportStar)
            and any(isinstance(a.name, cst.Name) and a.name.value == "autocast" for a in i.names) for i in s.body)
            for s in stmt.body.body)
        if not imports:
            continue
        false = {n for h in stmt.handlers if _catches_import_error(h) for n in _bool_assigned(h.body, "False")}
        flags |= set(_bool_assigned(stmt.body, "True")) & false
    ctx._cache[key] = frozenset(flags)
    return ctx._cache[key]


def _bool_assigned(block, value: str):
    for s in getattr(block, "body", ()):
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name) \
                        and isinstance(small.value, cst.Name) and small.value.value == value:
                    yield small.targets[0].target.value


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    t = handler.type
    names = [e.value for e in t.elements] if isinstance(t, cst.Tuple) else [t] if t is not None else []
    return t is None or any(isinstance(n, cst.Name) and n.value in ("ImportError", "ModuleNotFoundError", "Exception")
                            for n in names)


# ``torch.is_autocast_enabled()`` (CUDA's, or a device type's as its argument) and its older aliases
IS_AUTOCAST_ENABLED = frozenset({"torch.is_autocast_enabled", "torch.cuda.is_autocast_enabled",
                                 "torch.is_autocast_cpu_enabled"})


def without_autocast_branch(ctx, node: cst.CSTNode) -> bool:
    """Is ``node`` on the branch that runs only where torch has no autocast (``if HAS_AUTOCAST:
    ... else: <here>``, ``if not HAS_AUTOCAST: <here>``, the flag set by a ``try`` importing
    autocast) or where autocast is off (``if torch.is_autocast_enabled(): ... else: <here>``)?
    There nothing runs under autocast (mmpose's TCFormer utils: the fp32 fallback of
    ``with autocast(enabled=False):``; pytorch3d's ``calc_bce(p)`` when autocast is off)."""
    flags = None
    for a in ctx.ancestors(node):
        if not isinstance(a, cst.If):
            continue
        test, negated = a.test, False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, negated = test.expression, True
        if isinstance(test, cst.Call) and ctx.call_name(test) in IS_AUTOCAST_ENABLED:
            pass  # ``if torch.is_autocast_enabled(): ... else: <here>``: autocast is off here
        elif isinstance(test, cst.Comparison) and _torch_before_autocast(ctx, test) is not None:
            # ``if LooseVersion(torch.__version__) >= LooseVersion("1.6.0"): ... else: <here>`` (EasyCV's YOLOX
            # head): the branch for a torch without native autocast
            if _torch_before_autocast(ctx, test) != negated and ctx.is_ancestor(a.body, node):
                return True
            if _torch_before_autocast(ctx, test) == negated and a.orelse is not None and ctx.is_ancestor(a.orelse, node):
                return True
            continue
        else:
            if flags is None:
                flags = _autocast_flags(ctx)
            if not (isinstance(test, cst.Name) and test.value in flags):
                continue
        if negated and ctx.is_ancestor(a.body, node):
            return True
        if not negated and a.orelse is not None and ctx.is_ancestor(a.orelse, node):
            return True
    return False


# torch.cuda.amp.autocast came with torch 1.6
_AUTOCAST_SINCE = (1, 6)
_TORCH_VERSION_TEXT = re.compile(r"(?i)torch\.__version__|torch_version|\btorch\.version\b")
_VERSION_LITERAL = re.compile(r"(\d+)\s*[.,]\s*(\d+)")


def _torch_before_autocast(ctx, test: cst.Comparison) -> Optional[bool]:
    """For a test comparing torch's version with a literal one (``LooseVersion(torch.__version__) >=
    LooseVersion("1.6.0")``, ``digit_version(TORCH_VERSION) < digit_version("1.6")``, ``TORCH_VERSION >= (1, 6)``):
    True when the test holds only on a torch older than native autocast (1.6), False when it fails only there,
    None when it says nothing of that."""
    if len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    left, right = ctx.code(test.left), ctx.code(target.comparator)
    ops = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">="}
    op = ops.get(type(target.operator))
    if op is None:
        return None
    if _TORCH_VERSION_TEXT.search(right) and not _TORCH_VERSION_TEXT.search(left):
        left, right = right, left
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    m = _VERSION_LITERAL.search(right)
    if not _TORCH_VERSION_TEXT.search(left) or m is None:
        return None
    v = (int(m.group(1)), int(m.group(2)))
    if op == "<" and v <= _AUTOCAST_SINCE or op == "<=" and v < _AUTOCAST_SINCE:
        return True   # holds only before 1.6
    if op == ">=" and v <= _AUTOCAST_SINCE or op == ">" and v < _AUTOCAST_SINCE:
        return False  # fails only before 1.6
    return None
