import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amplint.api import lint_source  # noqa: E402


def codes(source: str, **kw):
    """Codes of the findings in ``source`` (a lone file of a fresh project)."""
    return [f.code for f in lint_source(source, **kw)]


@pytest.fixture
def lint():
    return lint_source
