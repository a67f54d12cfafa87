"""Which torch versions a project says it supports.

A fix that writes ``torch.amp.GradScaler("cuda")`` breaks a project that still supports torch 2.2,
where that name does not exist. The versions come from the project's own declarations: the
``dependencies`` / ``optional-dependencies`` of pyproject.toml, ``requirements*.txt`` and pip
constraints files at its root, the requirement strings of setup.py / setup.cfg, the dependencies of a conda
environment file (``- pytorch=1.13.1``, and its ``pip:`` list) and the ``pip install torch==X`` / ``conda install
pytorch=X`` lines of the project's shell scripts and Dockerfiles; for a file below the root, also the nearest
sub-directory above it that pins torch in its own requirement list or conda environment (a sub-project installed on
its own). The lowest version any of them admits is the
project's floor; a requirement with only an upper bound (``torch<2.4``) admits every older version.
No declaration: nothing is known (None), and rules assume a current torch.
"""
from __future__ import annotations

import os
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


# where a project installs its environment: at the root and in these directories
_INSTALL_DIRS = ("", "docker", "scripts", "envs", "env", "conda", ".devcontainer")
_CONDA_ENV = ("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml")
_INSTALL_SCRIPTS = ("*.sh", "Dockerfile*", "*.Dockerfile", "*.dockerfile")


def install_files(root: Path) -> List[Path]:
    """conda environment files (``environment*.yml``) and the shell scripts and Dockerfiles that may install torch,
    at the root and under ``docker/``, ``scripts/``, ``envs/``, ``conda/``, ``.devcontainer/``."""
    found = set()
    for d in _INSTALL_DIRS:
        base = root / d if d else root
        for pattern in (*_CONDA_ENV, *_INSTALL_SCRIPTS):
            found.update(f for f in base.glob(pattern) if f.is_file())
    return sorted(found)


def _declaration_files(root: Path) -> List[Path]:
    files = [root / "pyproject.toml", root / "setup.py", root / "setup.cfg", *requirement_files(root)]
    return [f for f in files if f.is_file()]


# a conda match spec of pytorch (``pytorch=1.13.1``, ``pytorch==2.0``, ``pytorch>=1.12``, ``pytorch 1.13.*``,
# ``pytorch::pytorch=1.13.1=py3.9_cuda11.7_0``); also pip's name, ``torch``, in a conda list
_CONDA_TORCH = re.compile(r"(?<![\w.:-])(?:\w+::)?(?:py)?torch(?![\w-])\s*([<>=!~][^\s\\\"';]*|\s\d[\w.*]*)")
_INSTALL_COMMAND = re.compile(r"\b(pip3?|conda|mamba|micromamba|uv\s+pip)\s+install\b")


def _conda_spec(spec: str) -> str:
    """A conda version spec as a pip one: ``=1.13.1=build`` / `` 1.13.*`` -> ``==1.13.1`` / ``==1.13``."""
    spec = spec.strip()
    if spec[:1].isdigit():
        return "==" + spec
    if spec.startswith("=") and not spec.startswith("=="):
        return "==" + spec[1:].split("=", 1)[0]
    return spec


def _conda_environment(text: str) -> List[str]:
    """The torch requirements of a conda environment file, as pip specs: its ``dependencies`` and their ``pip:``
    list."""
    import yaml  # noqa: PLC0415 (PyYAML: only projects with such a file ask)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    deps = data.get("dependencies") if isinstance(data, dict) else None
    out: List[str] = []
    for item in deps if isinstance(deps, list) else ():
        if isinstance(item, str):
            m = _CONDA_TORCH.match(item.strip())
            if m:
                out.append(_conda_spec(m.group(1)))
        elif isinstance(item, dict) and isinstance(item.get("pip"), list):
            out.extend(m.group(1) for p in item["pip"] if isinstance(p, str) for m in _TORCH_REQUIREMENT.finditer(p))
    return out


def _install_lines(text: str) -> List[str]:
    """The torch requirements of the ``pip install`` / ``conda install`` commands of a shell script or a
    Dockerfile (lines joined at a trailing backslash), as pip specs."""
    out: List[str] = []
    for line in re.sub(r"\\\s*\n", " ", text).splitlines():
        code = line.split("#", 1)[0]
        m = _INSTALL_COMMAND.search(code)
        if not m:
            continue
        args = code[m.end():]
        if m.group(1) in ("conda", "mamba", "micromamba"):
            out.extend(_conda_spec(c.group(1)) for c in _CONDA_TORCH.finditer(args))
        else:
            out.extend(r.group(1) for r in _TORCH_REQUIREMENT.finditer(args))
    return out


def _floor_in(root: Path, files: List[Path]) -> Optional[Tuple[Version, str]]:
    """The lowest torch version ``files`` admit (requirement lists and packaging line by line, conda environment
    files, install commands of scripts), with where it is said (relative to ``root``)."""
    best: Optional[Tuple[Version, str]] = None
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if f.suffix in (".yml", ".yaml"):
            specs = _conda_environment(text)
        elif f.suffix == ".sh" or "dockerfile" in f.name.lower():
            specs = _install_lines(text)
        else:
            specs = [m.group(1) for line in text.splitlines() for m in _TORCH_REQUIREMENT.finditer(line.split("#", 1)[0])]
        for spec in specs:
            floor = _floor_of(spec)
            if floor is not None and (best is None or floor < best[0]):
                best = (floor, f"`torch{' '.join(spec.split()).rstrip(',')}` in {f.relative_to(root).as_posix()}")
    return best


# a sub-project's own requirement lists and conda environment files (EasyOCR's trainer/craft/requirements.txt,
# LLaMA-Adapter's llama_adapter_v2_chat65b/environment.yml)
_SUB_DECLARATION = re.compile(r"(?:requirements|constraints)[\w.-]*\.txt|(?:environment|conda)[\w.-]*\.ya?ml")
# a sub-project's environment script or Dockerfile (NeuralSpeech's BinauralGrad/prepare_env.sh: ``pip install
# torch==1.7.0``); not its run scripts
_SUB_INSTALL = re.compile(r"(?i)[\w.-]*(?:env|install|setup)[\w.-]*\.sh|Dockerfile[\w.-]*|[\w.-]+\.dockerfile")


def sub_declaration_files(directory: Path) -> List[Path]:
    """The requirement lists (``requirements*.txt``, ``constraints*.txt``, ``requirements/*.txt``), conda
    environment files and environment scripts (``prepare_env.sh``, ``install.sh``, a Dockerfile) of a directory below
    the project root."""
    found = []
    try:
        with os.scandir(directory) as entries:
            for e in entries:
                if (_SUB_DECLARATION.fullmatch(e.name) or _SUB_INSTALL.fullmatch(e.name)) and e.is_file():
                    found.append(Path(e.path))
                elif e.name == "requirements" and e.is_dir():
                    found.extend(f for f in Path(e.path).glob("*.txt") if f.is_file())
    except OSError:
        return []
    return sorted(found)


def torch_floor(project, path: Optional[Path] = None) -> Optional[Tuple[Version, str]]:
    """(the lowest torch version the project declares support for, where it says so), or None. For a file
    ``path``, also the pin of the nearest directory above it, below the root, that pins torch in its own
    requirement list, conda environment or environment script (a sub-project installed on its own: EasyOCR's
    trainer/craft/, T18-5; NeuralSpeech's BinauralGrad/prepare_env.sh); the lower of the two."""
    cache = project.memo("torch_floor")
    root = Path(project.root)
    if "floor" not in cache:
        cache["floor"] = _floor_in(root, [*_declaration_files(root), *install_files(root)])
    best = cache["floor"]
    if path is None:
        return best
    d = Path(path).parent
    while d != root and root in d.parents:
        if d not in cache:
            cache[d] = _floor_in(root, sub_declaration_files(d))
        if cache[d] is not None:
            return cache[d] if best is None or cache[d][0] < best[0] else best
        d = d.parent
    return best


def supports_torch_before(project, version: Version, path: Optional[Path] = None) -> Optional[str]:
    """Where the project (or, for the file ``path``, its sub-project) declares support for a torch older than
    ``version`` (None if it does not, or declares nothing)."""
    if project is None or getattr(project, "root", None) is None:
        return None
    found = torch_floor(project, path)
    if found is None or found[0] >= version:
        return None
    return found[1]
