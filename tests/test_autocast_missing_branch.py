"""The branch that runs only where torch has no autocast (``try: from torch.cuda.amp import autocast;
HAS_AUTOCAST = True / except ImportError: HAS_AUTOCAST = False``, then ``if HAS_AUTOCAST: with
autocast(enabled=False): ... else: <fallback>``) never runs under autocast: mmpose's TCFormer fix
(bug set 7, B37) keeps an fp32 copy of the product there, which was reported as float16. Near misses:
the same product outside the fallback (the bug) is reported; a flag not set by an autocast import
(`if USE_FAST:`) says nothing."""
import textwrap

import pytest

from amplint.api import lint_source

MERGE = """
import torch
import torch.nn as nn

try:
    from torch.cuda.amp import autocast
    {flag} = True
except ImportError:
    {flag} = False


def merge_tokens(weights, x):
    ones = x.new_ones(x.shape[0], 1).float()
    if {test}:
        with autocast(enabled=False):
            total = weights.float() @ ones + 1e-6
            merged = weights.float() @ x.float()
    else:
        total = weights.float() @ ones + 1e-6
        merged = weights.float() @ x.float()
    return merged / total


class Merger(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, dim)

    def forward(self, x):
        return merge_tokens(self.score(x).relu(), x)
"""
TRAIN = """
import torch
from merge import Merger

model = Merger(64).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler("cuda")
for x in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def amp203(flag="HAS_AUTOCAST", test="HAS_AUTOCAST", source=MERGE):
    src = textwrap.dedent(source).replace("{flag}", flag).replace("{test}", test)
    return [f.line for f in lint_source(src, filename="merge.py", extra_files={"train.py": TRAIN}) if f.code == "AMP203"]


def test_the_fallback_without_autocast_is_not_judged_under_it():
    assert amp203() == []


def test_the_negated_test():
    early = MERGE[:MERGE.index("    if {test}:")] + """    if not {test}:
        total = weights.float() @ ones + 1e-6
        return (weights.float() @ x.float()) / total
    with autocast(enabled=False):
        total = weights.float() @ ones + 1e-6
        return (weights.float() @ x.float()) / total
""" + MERGE[MERGE.index("\n\nclass Merger"):]
    assert amp203(source=early) == []


def test_near_miss_the_product_outside_the_fallback():
    unfixed = MERGE.replace("    if {test}:\n", "    if {test}:\n        pass\n    if True:\n")
    assert amp203(source=unfixed.replace("        with autocast(enabled=False):\n", "        if True:\n")) != []


def test_near_miss_a_flag_no_autocast_import_sets():
    assert amp203(source=MERGE.replace("from torch.cuda.amp import autocast", "import fast_kernels\n    from torch.cuda.amp import custom_fwd as autocast_fwd"),
                  ) != []


@pytest.mark.parametrize("test", [
    'LooseVersion(torch.__version__) >= LooseVersion("1.6.0")',  # EasyCV's YOLOX head (set 12, T12-2)
    'digit_version(torch.__version__) > digit_version("1.5")',
    'not (TORCH_VERSION < (1, 6))',
])
def test_the_branch_for_a_torch_before_autocast_is_not_judged_under_it(test):
    assert amp203(test=test) == []


@pytest.mark.parametrize("test", [
    'LooseVersion(torch.__version__) >= LooseVersion("2.0.0")',  # the else runs on torch 1.6 - 1.13 too
    'TORCH_VERSION < (1, 6)',  # the else (the fallback here) is what a torch with autocast runs
])
def test_near_miss_a_version_test_that_leaves_autocast_possible(test):
    assert amp203(test=test) != []
