"""Helpers for the CLI / engine tests: build a temporary project, run the CLI in-process or in a
fresh interpreter, and collect what it printed."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    rc: int
    out: str
    err: str


def write_project(root: Path, files: Dict[str, object], marker: Optional[str] = "pyproject.toml") -> Path:
    """Create ``files`` (relative path -> text, or bytes written as they are) under ``root``; with a
    project-root marker file unless ``marker`` is None or given among the files."""
    root.mkdir(parents=True, exist_ok=True)
    if marker and marker not in files:
        (root / marker).write_text("[project]\nname = 'demo'\n" if marker == "pyproject.toml" else "")
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
    return root


@contextmanager
def chdir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run(argv: Sequence[str], cwd: Path) -> Result:
    """``amplint <argv>`` in this process (fast), with ``cwd`` as the working directory."""
    from amplint.cli import main

    out, err = io.StringIO(), io.StringIO()
    with chdir(cwd), redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as e:  # argparse's --version / usage errors
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return Result(rc, out.getvalue(), err.getvalue())


def subprocess_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("PYTHONSTARTUP", None)
    return env


def run_module(argv: Sequence[str], cwd: Path, timeout: float = 120, stdin: Optional[str] = None) -> Result:
    """``python -m amplint <argv>`` in a fresh interpreter, with ``stdin`` piped to it (else no input)."""
    p = subprocess.run([sys.executable, "-m", "amplint", *map(str, argv)], cwd=cwd, env=subprocess_env(),
                       capture_output=True, text=True, timeout=timeout,
                       input=stdin if stdin is not None else "", encoding="utf-8")
    return Result(p.returncode, p.stdout, p.stderr)


def entry_point_reach(root: Path) -> Dict[str, set]:
    """Each training entry point of the project at ``root`` (relative path) -> the files it reaches."""
    from amplint.project import Project
    p = Project(root)
    return {p.relative(ep.path): {p.relative(f) for f in ep.reach} for ep in p.entry_points()}


def hazard_findings(root: Path, folder: str = "p"):
    """``amplint check`` of ``root``: (path below ``folder/``, code) of every hazard finding (AMP501 left out)."""
    import json
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [(f["filename"].replace("\\", "/").split(f"/{folder}/", 1)[-1], f["code"])
            for f in json.loads(r.out) if f["code"].startswith("AMP") and f["code"] != "AMP501"]
