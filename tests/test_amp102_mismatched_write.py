"""A guard after a write that raises in float16 is never reached in float16.

glue-factory's GlueStick endpoint attention (unseen set 19, T19-7): under fp16 autocast ``torch.exp`` gives
float32 while ``torch.zeros_like(<conv output>)`` is float16, so ``denom.scatter_reduce_(..., src=prob)``
raises ("scatter(): Expected self.dtype to be equal to src.dtype") before ``prob / (denom + 1e-8)`` runs:
the guard's float16 division is unreachable. Near misses: the source cast to the destination's dtype (the
write runs, the guard is reached in float16); the write in a branch (it may not run); autocast's promoted
out-of-place ``scatter_add`` (no raise); torch_scatter's ``scatter`` (another module's function).
"""
import textwrap

import pytest

from amplint.api import lint_source

TRAIN = """
import torch
from pkg.matcher import Attention

model = Attention(8).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
for x, idx in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x, idx).sum()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""

MATCHER = """
import torch
import torch_scatter
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Conv1d(dim, dim, 1)

    def attend(self, ldesc, idx, flag=True):
        prob = (ldesc * ldesc).sum(dim=1)
        prob = torch.exp(prob - prob.max())
{write}
        denom = torch.gather(denom, 1, idx)
        return prob / (denom + 1e-8)

    def forward(self, ldesc, idx):
        return self.attend(self.proj(ldesc), idx)
"""

RAISES = "        denom = torch.zeros_like(ldesc[:, 0]).scatter_reduce_(1, idx, src=prob, reduce='sum')"
FUNCTION_FORM = "        denom = torch.scatter_reduce(torch.zeros_like(ldesc[:, 0]), 1, idx, prob, 'sum')"
INDEX_ADD = "        denom = ldesc.new_zeros(ldesc.shape[0], ldesc.shape[2]).index_add_(1, idx[0], prob)"
CAST = "        denom = torch.zeros_like(ldesc[:, 0]).scatter_reduce_(1, idx, src=prob.half(), reduce='sum')"
BRANCH = """\
        denom = ldesc[:, 0]
        if flag:
            denom = torch.zeros_like(ldesc[:, 0]).scatter_reduce_(1, idx, src=prob, reduce='sum')"""
PROMOTED = "        denom = ldesc[:, 0] * torch.zeros_like(ldesc[:, 0]).scatter_add(1, idx, prob).half()"
OTHER_MODULE = "        denom = torch_scatter.scatter(prob, idx, dim=1, dim_size=ldesc.shape[2]).half() + ldesc[:, 0]"


def amp102(write, precision="auto"):
    source = textwrap.dedent(MATCHER).replace("{write}", write)
    found = lint_source(source, filename="pkg/matcher.py", precision=precision,
                        extra_files={"pkg/__init__.py": "", "train.py": TRAIN})
    return sorted(f.line for f in found if f.code == "AMP102")


@pytest.mark.parametrize("write", [RAISES, FUNCTION_FORM, INDEX_ADD], ids=["method", "function", "index_add_"])
def test_guard_after_a_write_that_raises_in_float16_is_not_reported(write):
    assert amp102(write) == []


def test_guard_after_the_same_write_in_one_dtype_is_reported():
    assert amp102(CAST) == [17]


def test_write_in_a_branch_may_not_run():
    assert amp102(BRANCH) == [19]


def test_out_of_place_scatter_add_is_promoted_by_autocast():
    assert amp102(PROMOTED) == [17]


def test_another_modules_scatter_is_not_torchs():
    assert amp102(OTHER_MODULE) == [17]
