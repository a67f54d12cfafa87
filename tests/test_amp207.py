"""AMP207 dtype-mismatched-write: a scatter / index write of a float16 tensor into a float32 one (or the reverse)
raises ("scatter(): Expected self.dtype to be equal to src.dtype"): lightly's MAE decoder under Lightning
precision=16 (a float32 mask-token parameter scattered with a Linear's float16 output), glue-factory's GlueStick
(autocast's float32 ``exp`` scattered into a float16 ``zeros_like``). Near misses stay silent: one side cast to the
other's dtype, a destination built from the source, autocast's promoted ``scatter_add``, a float16 that is only the
regime's guess for an argument, a second write after one that raises, float32 training; and the rule is off unless
named."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.docs import examples, read_page

SELECT = ("ALL", "AMP207")  # off by default

SCRIPT = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.n = n

    def forward(self, x, idx):
        h = self.embed(x)
        index = idx[..., None].expand(-1, -1, h.shape[-1])
{body}


model = Decoder(64, 49).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler("cuda")
for x, idx in loader:
    with torch.autocast({autocast}):
        loss = model(x, idx).pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""

TOKENS = "        tokens = self.mask_token.repeat(x.shape[0], self.n, 1)\n"
SCATTER = TOKENS + "        return torch.scatter(tokens, 1, index, h)"
METHOD = TOKENS + "        return tokens.scatter_(1, index, h)"
INDEX_ADD = "        out = torch.zeros(x.shape[0], self.n, h.shape[-1], device=x.device)\n" \
            "        return out.index_add_(1, idx[0], h)"
EXP_INTO_HALF = "        return torch.zeros_like(h).scatter_reduce_(1, index, torch.exp(h), reduce='sum')"
CAST = TOKENS + "        return torch.scatter(tokens.to(h.dtype), 1, index, h)"
FROM_SOURCE = "        return h.new_zeros(x.shape[0], self.n, h.shape[-1]).scatter_(1, index, h)"
PROMOTED = "        return torch.zeros(x.shape[0], self.n, h.shape[-1], device=x.device).scatter_add(1, index, h)"
ARGUMENT = "        return torch.zeros(x.shape[0], self.n, x.shape[-1], device=x.device).scatter_(1, index, x)"
TWO = TOKENS + "        a = torch.scatter(tokens, 1, index, h)\n        return tokens.scatter_(1, index, h) + a"


def amp207(body, autocast='"cuda", dtype=torch.float16', select=SELECT):
    source = textwrap.dedent(SCRIPT).replace("{body}", body).replace("{autocast}", autocast)
    return [f.line for f in lint_source(source, filename="train.py", select=select) if f.code == "AMP207"]


@pytest.mark.parametrize("body, line", [(SCATTER, 17), (METHOD, 17), (INDEX_ADD, 17), (EXP_INTO_HALF, 16)],
                         ids=["torch.scatter", "scatter_", "index_add_", "exp-into-half"])
def test_write_of_one_dtype_into_another_under_float16_autocast(body, line):
    assert amp207(body) == [line]


@pytest.mark.parametrize("body", [CAST, FROM_SOURCE, PROMOTED, ARGUMENT],
                         ids=["cast", "built-from-source", "promoted-scatter_add", "argument-guess"])
def test_one_dtype_or_unknown_is_silent(body):
    assert amp207(body) == []


def test_only_the_first_raising_write_is_reported():
    assert amp207(TWO) == [17]


def test_float32_training_is_silent():
    assert amp207(SCATTER, autocast='"cuda", enabled=False') == []


def test_off_unless_named():
    assert amp207(SCATTER, select=("ALL",)) == []


def test_page_examples():
    page = read_page("AMP207")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert [f.code for f in lint_source(bad, filename="train.py", select=SELECT)].count("AMP207") == 1
    assert "AMP207" not in [f.code for f in lint_source(good, filename="train.py", select=SELECT)]
