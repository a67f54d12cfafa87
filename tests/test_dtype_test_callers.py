"""What a test passes is no run's precision (issue 8: tests are not regime evidence): a test that
calls a library module with ``.half()`` inputs exercises it, so the module's ``forward`` arguments
are not float16 because of it (x-transformers' Attend, T6-8). Near miss: the same call in a
project script (a benchmark run in float16) still makes them float16."""
import textwrap

from amplint.api import lint_source

ATTEND = """
import torch
from torch import nn


class Attend(nn.Module):
    def forward(self, q, k):
        return -(q.norm(dim=-1, keepdim=True) ** 2) + q @ k.transpose(-1, -2)
"""
CALLER = """
import torch
from xlib.attend import Attend


def {name}():
    x = torch.randn((16, 8)).cuda().half()
    attend = Attend().cuda().eval()
    return attend(x[None], x[None])
"""


def amp204(caller_path, name):
    files = {"xlib/__init__.py": "", caller_path: textwrap.dedent(CALLER.format(name=name))}
    findings = lint_source(textwrap.dedent(ATTEND), filename="xlib/attend.py", extra_files=files)
    return [f.line for f in findings if f.code == "AMP204"]


def test_a_tests_half_input_is_no_evidence():
    assert amp204("tests/test_attend.py", "test_half_on_gpu") == []


def test_near_miss_a_script_running_it_in_half():
    assert amp204("bench.py", "bench_half") == [8]
