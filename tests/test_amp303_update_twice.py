"""AMP303: one GradScaler updated after each of two optimizers' steps in one iteration (neosr's GAN
step, fixed upstream as "scaler.update() only once"); torch's AMP examples: update() once per
iteration, after scaler.step() of every optimizer used in it."""
import pytest

from training_util import lines

GAN = """
import torch
import torch.nn.functional as F

net_g = torch.nn.Linear(8, 8).cuda()
net_d = torch.nn.Linear(8, 1).cuda()
opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-4)
opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler("cuda")
scaler_d = torch.amp.GradScaler("cuda")


def train_step(lq, gt, both):
    with torch.autocast("cuda", dtype=torch.float16):
        out = net_g(lq)
        l_g = F.l1_loss(out, gt)
    scaler.scale(l_g).backward()
    scaler.step(opt_g)
    FIRST_UPDATE
    with torch.autocast("cuda", dtype=torch.float16):
        l_d = F.softplus(net_d(out.detach())).mean()
    D_SCALER.scale(l_d).backward()
    D_SCALER.step(opt_d)
    D_SCALER.update()
"""


def line_of(source, text, nth=1):
    hits = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    return hits[nth - 1]


@pytest.mark.parametrize("first, d_scaler, reported", [
    ("scaler.update()", "scaler", True),
    # near misses: one update after both steps; each optimizer with its own scaler; the first
    # update only when the discriminator is not stepped (the two sides of one if)
    ("pass", "scaler", False),
    ("scaler.update()", "scaler_d", False),
])
def test_update_after_each_optimizer(first, d_scaler, reported):
    source = GAN.replace("FIRST_UPDATE", first).replace("D_SCALER", d_scaler)
    expected = [line_of(source, "scaler.update()", 2)] if reported else []
    assert lines("AMP303", source) == expected


def test_near_miss_updates_on_the_two_sides_of_an_if():
    source = GAN.replace("FIRST_UPDATE", "pass").replace("D_SCALER", "scaler").replace(
        "    scaler.step(opt_g)\n    pass\n",
        "    if not both:\n        scaler.step(opt_g)\n        scaler.update()\n        return\n")
    assert "if not both" in source
    assert lines("AMP303", source) == []
