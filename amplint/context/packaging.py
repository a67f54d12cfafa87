"""Which of a project's packages it publishes, when its packaging says so.

A directory with an ``__init__.py`` at the root is taken for a package of the project, its users'
API (``Project.in_package``), whether or not the checkout packages it. When the project's packaging
names what it ships, a top-level package it leaves out is not published: Cutie's pyproject.toml
ships ``packages = ["cutie"]`` (hatch), so its ``gui/`` (an interactive demo and the RITM code it
vendors) is the project's own application code, not a library its users build classes of.

Read from the root's ``pyproject.toml`` (hatch's wheel ``packages``, setuptools' ``packages`` list or
``packages.find`` ``include`` / ``exclude``, poetry's ``packages`` ``include``) and ``setup.py``
(``packages=[...]`` literals, ``find_packages(include=..., exclude=...)``). Anything not read so
(no declaration, a computed list, ``find_packages()`` with no ``include``... and an ``exclude`` that
names nothing) leaves every package published.
"""
from __future__ import annotations

import ast
from fnmatch import fnmatchcase
from pathlib import Path
from typing import List, Optional, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover (Python < 3.11)
    import tomli as tomllib  # type: ignore[no-redef]

# (include patterns, exclude patterns) on dotted package names; a pattern without a wildcard also
# covers the packages below it (hatch ships a directory whole)
Declared = Tuple[Tuple[str, ...], Tuple[str, ...]]

_ALL: Declared = (("*",), ())
# a packaging file larger than this is not read (a real pyproject.toml / setup.py is a few kB; parsing a huge or
# generated one would cost the run seconds for nothing): nothing is known of what it ships
MAX_PACKAGING_BYTES = 256 * 1024


def declared_packages(root: Path) -> Optional[Declared]:
    """What the root's packaging says it ships, or None when it says nothing readable (a file that is no
    regular file, larger than ``MAX_PACKAGING_BYTES``, undecodable or malformed: every package published)."""
    found: List[Declared] = []
    for read, name in ((_from_pyproject, "pyproject.toml"), (_from_setup_py, "setup.py")):
        try:
            path = root / name
            if path.is_file() and path.stat().st_size > MAX_PACKAGING_BYTES:
                return None
            got = read(root)
        except (OSError, UnicodeDecodeError, ValueError, SyntaxError, RecursionError, tomllib.TOMLDecodeError):
            return None
        if got is _ALL:
            return None
        if got is not None:
            found.append(got)
    if not found:
        return None
    include = tuple(p for inc, _ in found for p in inc)
    exclude = tuple(p for _, exc in found for p in exc) if len(found) == 1 else ()
    return include, exclude


def ships(declared: Optional[Declared], package: str) -> bool:
    """Does a project declaring ``declared`` ship the dotted ``package`` (``gui.ritm.model``)?"""
    if declared is None:
        return True
    include, exclude = declared
    return _matches(include, package) and not _matches(exclude, package)


def _matches(patterns, package: str) -> bool:
    parts = package.split(".")
    prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
    for p in patterns:
        p = p.replace("/", ".").strip(".")
        if any(c in p for c in "*?["):
            if fnmatchcase(package, p):
                return True
        elif p in prefixes:
            return True
    return False


def _strings(value) -> Optional[Tuple[str, ...]]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _from_pyproject(root: Path) -> Optional[Declared]:
    path = root / "pyproject.toml"
    if not path.is_file():
        return None
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    hatch = tool.get("hatch", {}).get("build", {}) if isinstance(tool.get("hatch"), dict) else {}
    if isinstance(hatch, dict):
        wheel = hatch.get("targets", {}).get("wheel", {}) if isinstance(hatch.get("targets"), dict) else {}
        for where in (wheel, hatch):
            packages = _strings(where.get("packages")) if isinstance(where, dict) else None
            if packages:
                # ``packages = ["src/foo"]``: the directory ``foo`` is shipped as the package ``foo``
                return tuple(p.rstrip("/").rsplit("/", 1)[-1] for p in packages), ()
    setuptools = tool.get("setuptools")
    if isinstance(setuptools, dict):
        packages = setuptools.get("packages")
        listed = _strings(packages)
        if listed:
            return listed, ()
        find = packages.get("find") if isinstance(packages, dict) else None
        if isinstance(find, dict):
            include = _strings(find.get("include")) or ("*",)
            exclude = _strings(find.get("exclude")) or ()
            return (include, exclude) if include != ("*",) or exclude else _ALL
    poetry = tool.get("poetry")
    if isinstance(poetry, dict) and isinstance(poetry.get("packages"), list):
        include = tuple(p.get("include") for p in poetry["packages"] if isinstance(p, dict))
        if include and all(isinstance(p, str) for p in include):
            return include, ()
    return None


def _from_setup_py(root: Path) -> Optional[Declared]:
    path = root / "setup.py"
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _name(node.func) == "setup"):
            continue
        for kw in node.keywords:
            if kw.arg != "packages":
                continue
            value = kw.value
            if isinstance(value, (ast.List, ast.Tuple)):
                listed = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                return (tuple(listed), ()) if listed and len(listed) == len(value.elts) else None
            if isinstance(value, ast.Call) and _name(value.func) in ("find_packages", "find_namespace_packages"):
                include = exclude = None
                for arg in value.keywords:
                    if arg.arg in ("include", "exclude"):
                        got = _literal_strings(arg.value)
                        if got is None:
                            return None
                        include, exclude = (got, exclude) if arg.arg == "include" else (include, got)
                if include is None and not exclude:
                    return _ALL
                return include or ("*",), exclude or ()
            return None
    return None


def _literal_strings(node) -> Optional[Tuple[str, ...]]:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None


def _name(func) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
