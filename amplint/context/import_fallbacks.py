"""Code that runs only where a library is missing, in a project whose float16 runs need that library.

NEZHA's ``modeling_nezha.py`` (triage set 17, T17-4) writes ``try: from apex.normalization.fused_layer_norm
import FusedLayerNorm as BertLayerNorm`` / ``except ImportError: class BertLayerNorm(nn.Module): ...``: the
Python LayerNorm runs only without apex. Its training program halves the model under ``if args.fp16:`` and,
under the same test, imports apex's ``FP16_Optimizer`` with ``except ImportError: raise ...``: every float16
run has apex, so there ``BertLayerNorm`` is apex's fused kernel and the fallback's ``eps=1e-12`` never meets
a float16 tensor. Asked only of a finding about to be reported (a few per project).
"""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")


def fallback_definition(ctx, node: cst.CSTNode) -> Optional[Tuple[cst.CSTNode, str]]:
    """(definition, library) when ``node`` lies in a class or function defined in the ``except ImportError:``
    handler of a module-level ``try`` whose body imports that name from the library (its top-level package,
    ``apex``); else None."""
    for outer in ctx.ancestors(node):
        if not isinstance(outer, (cst.ClassDef, cst.FunctionDef)):
            continue
        block = ctx.parent(outer)
        handler = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if not isinstance(handler, cst.ExceptHandler) or not _catches_import_error(handler):
            continue
        tried = ctx.parent(handler)
        if not isinstance(tried, cst.Try) or ctx.parent(tried) is not ctx.module:
            continue
        library = _library_binding(ctx, tried.body, outer.name.value)
        if library is not None:
            return outer, library
    return None


def float16_runs_need(ctx, library: str) -> bool:
    """Does every training entry point whose precision judges ``ctx``'s file (at least one) import ``library``
    on each of its float16 paths, with no way on without it: an import outside any ``try`` that goes on after an
    ``ImportError`` (``except ImportError: raise ...`` stops the run), at the program's module level or in its
    training functions, not under an ``if`` other than the one its float16 evidence is taken under (``if
    args.fp16:``)?"""
    regime = getattr(ctx, "regime", None)
    project = getattr(ctx, "project", None)
    if regime is None or project is None or not regime.entry_points or not hasattr(project, "entry_points") \
            or getattr(regime, "override", None):
        return False
    names = set(regime.entry_points)
    eps = [ep for ep in project.entry_points() if ep.name() in names]
    if len(eps) != len(names):
        return False
    for ep in eps:
        half = [sig for sig, _ in ep.signals if sig.dtype == "float16" and sig.enabled]
        if not half:
            continue  # no float16 run
        made = [sig for sig in half if sig.kind != "flag"] or half
        program = ctx.other_file(ep.path) if hasattr(ctx, "other_file") else None
        if program is None:
            return False
        conditions = _required_import_conditions(program, library, {f["function"] for f in ep.functions})
        if not all(any(not c or c == {sig.condition} for c in conditions) for sig in made):
            return False
    return True


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    t = handler.type
    names = [e.value for e in t.elements] if isinstance(t, cst.Tuple) else [t]
    return any(isinstance(n, cst.Name) and n.value in _IMPORT_ERRORS for n in names)


def _goes_on(handler: cst.ExceptHandler) -> bool:
    """Does a run go on past ``handler`` when it catches an ``ImportError`` (its body raises nothing)?"""
    t = handler.type
    names = [e.value for e in t.elements] if isinstance(t, cst.Tuple) else [t] if t is not None else []
    catches = t is None or any(isinstance(n, cst.Name) and n.value in _IMPORT_ERRORS + ("Exception", "BaseException")
                               for n in names)
    if not catches:
        return False
    body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else []
    return not any(isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, cst.Raise) for x in s.body)
                   for s in body)


def _dotted(expr) -> str:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return f"{_dotted(expr.value)}.{expr.attr.value}"
    return ""


def _library_binding(ctx, block, name: str) -> Optional[str]:
    """The top-level package of an absolute import in ``block`` that binds ``name``."""
    for stmt in getattr(block, "body", []):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None \
                    and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name.value if alias.asname is not None else _dotted(alias.name)
                    if bound == name:
                        return _dotted(small.module).split(".")[0] or None
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.asname is not None and alias.asname.name.value == name:
                        return _dotted(alias.name).split(".")[0] or None
    return None


def _imports_of(program, library: str) -> List[cst.CSTNode]:
    out: List[cst.CSTNode] = []
    for node in program.nodes(cst.ImportFrom):
        if not node.relative and node.module is not None and _dotted(node.module).split(".")[0] == library:
            out.append(node)
    for node in program.nodes(cst.Import):
        if any(_dotted(a.name).split(".")[0] == library for a in node.names):
            out.append(node)
    return out


def _required_import_conditions(program, library: str, functions: Set[str]) -> List[Set[str]]:
    """For each import of ``library`` in ``program`` a run cannot go on without, the conditions it sits under
    (``if <test>`` of each ``if`` it is in the body of; ``if __name__ == "__main__":`` is no condition)."""
    out: List[Set[str]] = []
    for node in _imports_of(program, library):
        conditions: Set[str] = set()
        child: cst.CSTNode = node
        ok = True
        for outer in program.ancestors(node):
            if isinstance(outer, cst.Try) and child is outer.body and any(_goes_on(h) for h in outer.handlers):
                ok = False
                break
            if isinstance(outer, cst.If):
                if child is not outer.body:
                    ok = False  # an ``else`` / ``elif``: the run that takes it is not told by its evidence
                    break
                test = program.code(outer.test)
                if "__name__" not in test:
                    conditions.add(f"if {test}")
            if isinstance(outer, (cst.FunctionDef, cst.ClassDef)):
                if isinstance(outer, cst.ClassDef) or outer.name.value not in functions \
                        or program.parent(outer) is not program.module:
                    ok = False  # a helper's import runs only where the helper does
                break
            child = outer
        if ok:
            out.append(conditions)
    return out
