"""AMP202 on code no float16 run executes (Transfer-Learning-Library's adversarial losses, unseen set 18
T18-2): ``F.binary_cross_entropy`` under ``if self.sigmoid:``, where ``__init__`` stores its ``sigmoid``
option and every build in a float16 program passes ``sigmoid=False`` (the float32 examples keep the
default True); and a lambda stored as ``self.bce`` that nothing reads. Near misses keep AMP202: the
float16 program builds the loss with the default, and a forward that calls ``self.bce``."""
import json
import textwrap

from cliutil import run, write_project

LOSS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class DomainAdversarialLoss(nn.Module):
    def __init__(self, discriminator, sigmoid=True):
        super().__init__()
        self.discriminator = discriminator
        self.sigmoid = sigmoid
        self.bce = lambda input, target: F.binary_cross_entropy(input, target)

    def forward(self, f_s, f_t):
        d = self.discriminator(torch.cat((f_s, f_t), dim=0))
        if self.sigmoid:
            label = torch.cat((torch.ones(f_s.size(0), 1), torch.zeros(f_t.size(0), 1))).to(d.device)
            return {bce}(d, label)
        label = torch.cat((torch.ones(f_s.size(0)), torch.zeros(f_t.size(0)))).long().to(d.device)
        return F.cross_entropy(d, label)
"""
AMP = """
import torch
import torch.nn as nn
from pkg.loss import DomainAdversarialLoss


def main():
    backbone = nn.Linear(32, 64).cuda()
    disc = nn.Linear(64, 2).cuda()
    adv = DomainAdversarialLoss(disc{option})
    opt = torch.optim.SGD(list(backbone.parameters()) + list(disc.parameters()), lr=0.01)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(10):
        xs, xt = torch.randn(8, 32, device="cuda"), torch.randn(8, 32, device="cuda")
        with torch.cuda.amp.autocast():
            loss = adv(backbone(xs), backbone(xt))
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
"""
FP32 = """
import torch
import torch.nn as nn
from pkg.loss import DomainAdversarialLoss


def main():
    backbone = nn.Linear(32, 64)
    disc = nn.Sequential(nn.Linear(64, 1), nn.Sigmoid())
    adv = DomainAdversarialLoss(disc)
    opt = torch.optim.SGD(list(backbone.parameters()) + list(disc.parameters()), lr=0.01)
    for _ in range(10):
        loss = adv(backbone(torch.randn(8, 32)), backbone(torch.randn(8, 32)))
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def _amp202(tmp_path, option=", sigmoid=False", bce="F.binary_cross_entropy"):
    files = {"pkg/__init__.py": "", "pkg/loss.py": LOSS.replace("{bce}", bce),
             "examples/train_amp.py": AMP.replace("{option}", option), "examples/train_fp32.py": FP32}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--select", "AMP202", "--output-format", "json", "."], root)
    return sorted(f["location"]["row"] for f in json.loads(r.out))


def test_branch_only_float32_builds_take_and_an_unread_lambda(tmp_path):
    assert _amp202(tmp_path) == []


def test_near_miss_the_float16_program_keeps_the_default(tmp_path):
    assert 18 in _amp202(tmp_path, option="")


def test_near_miss_the_lambda_is_called(tmp_path):
    # the branch still runs in no float16 build, but the forward reads self.bce: the lambda is live
    assert _amp202(tmp_path, option="", bce="self.bce") == [12]
