"""Which torch versions a project says it supports.

A fix that writes ``torch.amp.GradScaler("cuda")`` breaks a project that still supports torch 2.2,
where that name does not exist. The versions come from the project's own declarations: the
``dependencies`` / ``optional-dependencies`` of pyproject.toml, ``requirements*.txt`` and pip
constraints files at its root and the requirement strings of setup.py / setup.cfg. The lowest version any of them admits is the
project's floor; a requirement with only an upper bound (``torch<2.4``) admits every older version.
No declaration: nothing is known (None), and rules assume a current torch.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Tuple

Version = Tuple[int, ...]

# ``torch>=1.13,<2.4`` / ``torch == 2.1.*`` / ``"torch>=2.0"``; not torchvision, torch-ema, pytorch-lightning.
_TORCH_REQUIREMENT = re.compile(r"(?<![\w.-])torch(?![\w-])\s*(?:\[[^\]]*\])?\s*((?:[<>=!~]=?\s*[\w.*+]+\s*,?\s*)+)")
_CLAUSE = re.compile(r"([<>=!~]=?)\s*([\d]+(?:\.[\d]+)*)")


def parse_version(text: str) -> Optional[Version]:
    m = re.match(r"(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _floor_of(spec: str) -> Optional[Version]:
    """The lowest version one requirement's clauses admit: (0,) when only an upper bound is given."""
    floor: Optional[Version] = None
    bounded_above = False
    for op, version in _CLAUSE.findall(spec):
        v = parse_version(version)
        if v is None:
            continue
        if op in (">=", ">", "==", "~=", "==="):
            floor = v if floor is None else max(floor, v)
        elif op in ("<", "<="):
            bounded_above = True
    if floor is None and bounded_above:
        return (0,)
    return floor


def requirement_files(root: Path) -> List[Path]:
    """``requirements*.txt`` and pip constraints files (``constraints*.txt``, passed with ``-c``:
    ml-cvnets pins ``torch==1.13.0`` there) at the root and under ``requirements/``."""
    return sorted([*root.glob("requirements*.txt"), *root.glob("requirements/*.txt"),
                   *root.glob("constraints*.txt"), *root.glob("requirements/constraints*.txt")])


def _declaration_files(root: Path) -> List[Path]:
    files = [root / "pyproject.toml", root / "setup.py", root / "setup.cfg", *requirement_files(root)]
    return [f for f in files if f.is_file()]


def torch_floor(project) -> Optional[Tuple[Version, str]]:
    """(the lowest torch version the project declares support for, where it says so), or None."""
    cache = project.memo("torch_floor")
    if "floor" in cache:
        return cache["floor"]
    best: Optional[Tuple[Version, str]] = None
    root = Path(project.root)
    for f in _declaration_files(root):
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            code = line.split("#", 1)[0]
            for m in _TORCH_REQUIREMENT.finditer(code):
                floor = _floor_of(m.group(1))
                if floor is not None and (best is None or floor < best[0]):
                    where = f"`torch{' '.join(m.group(1).split()).rstrip(',')}` in {f.relative_to(root).as_posix()}"
                    best = (floor, where)
    cache["floor"] = best
    return best


def supports_torch_before(project, version: Version) -> Optional[str]:
    """Where the project declares support for a torch older than ``version`` (None if it does not,
    or declares nothing)."""
    if project is None or getattr(project, "root", None) is None:
        return None
    found = torch_floor(project)
    if found is None or found[0] >= version:
        return None
    return found[1]
