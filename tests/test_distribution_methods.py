"""A torch.distributions method whose source ends in an op on autocast's float32 list is float32 under
autocast: ``Normal(loc, scale).cdf(z)`` is ``0.5 * (1 + erf((z - loc) * scale.reciprocal() / sqrt(2)))``,
so ``cdf.clamp_min(1e-8).log()`` guards a float32 value (botorch's max-value entropy search, unseen
set 18 T18-3). Near misses keep AMP102: the cdf cast to half before the clamp, and a pure-half model
(no autocast: the distribution computes in its parameters' dtype)."""
import pytest

from amplint.api import lint_source

SCRIPT = """
import torch
from torch import nn
from torch.distributions import Normal


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(16, 1)
        self.sigma = nn.Linear(16, 1)

    def forward(self, x, best):
        normal = Normal(self.mu(x), self.sigma(x).exp())
        cdf = {cdf}.clamp_min(1e-8)
        return -cdf.log().mean()


model = Head().cuda(){half}
opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-4)
for x, best in loader:
    {step}
    opt.step()
    opt.zero_grad()
"""
MIXED = """scaler = torch.cuda.amp.GradScaler()
    with torch.autocast("cuda"):
        loss = model(x.cuda(), best.cuda())
    scaler.scale(loss).backward()"""
HALF = "model(x.cuda().half(), best.cuda().half()).backward()"


def amp102(cdf="normal.cdf(best)", half="", step=MIXED):
    source = SCRIPT.replace("{cdf}", cdf).replace("{half}", half).replace("{step}", step)
    return [f.line for f in lint_source(source, filename="train.py") if f.code == "AMP102"]


@pytest.mark.parametrize("cdf", ["normal.cdf(best)", "Normal(self.mu(x), 1.0).cdf(best)", "normal.icdf(best)"])
def test_a_normal_cdf_under_autocast_is_float32(cdf):
    assert amp102(cdf) == []


def test_near_miss_the_cdf_cast_to_half():
    assert amp102("normal.cdf(best).half()") == [15]


def test_near_miss_a_pure_half_model():
    assert amp102(half=".half()", step=HALF) == [15]
