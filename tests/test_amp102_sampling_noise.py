"""Gumbel noise for sampling (DALLE-pytorch, audiolm-pytorch: ``-log(-log(u))`` with a project
``log(t, eps=1e-20)`` helper, fed to argmax): a uniform draw is 0 with probability below 2^-24 per
element, and then one candidate's noise is -inf, so it is not sampled; nobody changes that code.
Near misses: the same helper also called on a probability (an entropy), a log of data beside the
noise, a draw that is scaled by data before the log."""
import textwrap

import pytest

from amplint.api import lint_source

HELPERS = """
import torch


def log(t, eps=1e-20):
    return torch.log(t + eps)


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


def gumbel_sample(t, temperature=1.0, dim=-1):
    return ((t / temperature) + gumbel_noise(t)).argmax(dim=dim)
"""


# A pure-half training script that samples with the helpers: their calls are in sight. (Library code
# no training reaches is judged by the library policy instead: its public ``log(t, eps=1e-20)`` is
# called by its users with the default, whatever its own callers pass.)
TRAIN = """
import torch
from sample import gumbel_sample
model = Net().cuda().half()
optimizer = torch.optim.Adam(model.parameters(), eps=1e-4)
for x in loader:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    tokens = gumbel_sample(model(x))
"""


def lines(source, train=False):
    extra = {"train.py": textwrap.dedent(TRAIN)} if train else None
    return [f.line for f in lint_source(textwrap.dedent(source), filename="sample.py", extra_files=extra,
                                        precision="auto" if train else "fp16") if f.code == "AMP102"]


def test_gumbel_noise_through_a_log_helper():
    assert lines(HELPERS, train=True) == []


def test_near_miss_the_helper_also_takes_a_probability():
    assert lines(HELPERS + "\n\ndef entropy(p):\n    return -(p * log(p)).sum(-1)\n", train=True) == [5]


def test_near_miss_library_code_is_judged_by_the_policy():
    assert lines(HELPERS) == [5]


@pytest.mark.parametrize("name, body, expected", [
    ("inline Gumbel noise", "u = torch.rand_like(logits)\n    return (logits - torch.log(-torch.log(u + 1e-20) + 1e-20)).argmax(-1)", []),
    ("near miss: a log of the data", "return torch.log(logits.sigmoid() + 1e-20)", [6]),
    ("near miss: a draw scaled by the data", "u = torch.rand_like(logits) * logits\n    return torch.log(u + 1e-20)", [7]),
])
def test_inline(name, body, expected):
    src = f"\nimport torch\n\n\ndef pick(logits):\n    {body}\n"
    assert lines(src) == expected, name


def test_gumbel_helper_of_a_library_not_exported():
    """audiolm-pytorch: the package's own ``log`` helper feeds only its Gumbel sampling, and the
    package's __init__ does not export it."""
    files = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n",
             "pkg/__init__.py": "from .sample import gumbel_sample\n"}
    found = [f.line for f in lint_source(textwrap.dedent(HELPERS), filename="pkg/sample.py", extra_files=files)
             if f.code == "AMP102"]
    assert found == []


def test_the_evidence_names_the_caller_that_relies_on_the_default():
    """DALLE-pytorch: ``log`` is called by the Gumbel noise (no hazard) and by an entropy of a
    probability; the finding cites the entropy's call, not the first float16 caller (the noise)."""
    src = textwrap.dedent(HELPERS + "\n\ndef entropy(p):\n    return -(p * log(p)).sum(-1)\n")
    train = textwrap.dedent(TRAIN)
    found = [f for f in lint_source(src, filename="sample.py", extra_files={"train.py": train}) if f.code == "AMP102"]
    assert [f.line for f in found] == [5]
    evidence = " ".join(e.what for e in found[0].evidence)
    lines_of = src.splitlines()
    entropy = next(i for i, t in enumerate(lines_of, 1) if "log(p)" in t)
    noise = next(i for i, t in enumerate(lines_of, 1) if "-log(-log(noise))" in t)
    assert f"sample.py:{entropy}" in evidence and f"sample.py:{noise}" not in evidence
