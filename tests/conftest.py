import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The command line caches into .amplint_cache/ at each project's root. Tests run it without the cache
# (their temporary projects stay as they wrote them, and the repository's examples/ gets no cache
# folder); tests/test_cache.py turns it on where it is what is tested.
os.environ["AMPLINT_NO_CACHE"] = "1"
# Every finding of the suite (its runs in subprocesses too) is checked against its rule's prefilter
# needs (amplint.prefilter): a finding in a file whose text does not match them is written here,
# and the session fails (pytest_sessionfinish). The rules then run on every file.
NEEDS_LOG = Path(tempfile.gettempdir()) / f"amplint-needs-audit-{os.getpid()}.log"
os.environ["AMPLINT_AUDIT_NEEDS"] = str(NEEDS_LOG)

from amplint.api import lint_source  # noqa: E402


# Other files of a project that make it train in pure half / in fp16 mixed precision.
HALF_TRAINING = """
import torch
model = Net().cuda().half()
loss = model(x).sum()
loss.backward()
from snippet import *  # the code under test is this training's (reached by its imports)
"""
MIXED_TRAINING = """
import torch
scaler = torch.amp.GradScaler("cuda")
def step(model, x):
    with torch.autocast("cuda"):
        loss = model(x).sum()
    scaler.scale(loss).backward()
"""


def codes(source: str, **kw):
    """Codes of the findings in ``source`` (a lone file of a fresh project)."""
    return [f.code for f in lint_source(source, **kw)]


@pytest.fixture
def lint():
    return lint_source


def fixed_source(source: str, extra_files=None, unsafe: bool = True, settings=None) -> str:
    """``source`` (dedented) after ``amplint fix`` as a lone file of a fresh project, with
    ``--unsafe-fixes`` by default; nothing is written."""
    import tempfile
    import textwrap

    from amplint.fixes import fix_paths

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'snippet'\n")
        for name, text in (extra_files or {}).items():
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        path = root / "snippet.py"
        path.write_text(textwrap.dedent(source))
        kwargs = {"unsafe": unsafe, "write": False}
        if settings is not None:
            kwargs["settings"] = settings
        run = fix_paths([path], **kwargs)
        assert not run.errors, run.errors
        return run.states[0].source.decode()


def pytest_sessionfinish(session, exitstatus):
    """Fail the run when a finding was in a file its rule's needs say cannot hold it."""
    try:
        wrong = NEEDS_LOG.read_text(encoding="utf-8")
        NEEDS_LOG.unlink()
    except OSError:
        return
    if wrong.strip():
        sys.stderr.write("\nfindings the prefilter would have hidden (a rule's `needs` is too narrow):\n" + wrong)
        session.exitstatus = 1
