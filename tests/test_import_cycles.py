"""The package's import graph (module-level and function-level imports alike): the file context,
the semantic model, the precision model and the project index import nothing that imports them
back."""
import ast
from pathlib import Path

import amplint

PACKAGE = Path(amplint.__file__).parent


def import_graph():
    modules = {}
    for f in PACKAGE.rglob("*.py"):
        parts = ["amplint", *f.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = f
    graph = {}
    for name, f in modules.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(f.read_bytes())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - (node.level - 1)] + ([base] if base else []))
                for a in node.names:
                    hit = next((c for c in (f"{base}.{a.name}", base) if c in modules), None)
                    if hit:
                        deps.add(hit)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
        deps.discard(name)
        graph[name] = deps
    return graph


def reached(graph, start):
    seen, todo = set(), [start]
    while todo:
        for n in graph[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def test_the_analysis_modules_are_in_no_import_cycle():
    graph = import_graph()
    for module in ("amplint.context.file_context", "amplint.context.semantic", "amplint.context.precision",
                   "amplint.context.callers", "amplint.project_index", "amplint.file_graph"):
        back = sorted(m for m in reached(graph, module) if module in reached(graph, m))
        assert back == [], f"{module} is imported back by {back}"


def test_the_file_context_does_not_import_the_precision_model():
    assert "amplint.context.precision" not in reached(import_graph(), "amplint.context.file_context")
