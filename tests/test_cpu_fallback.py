"""The CPU fallback of a CUDA kernel (maskrcnn-benchmark's ``sigmoid_focal_loss_cpu``, picked by
``if logits.is_cuda: ... else: loss_func = sigmoid_focal_loss_cpu``; set-16 triage T16-2): CUDA
autocast and half models run on the GPU, so float16 never reaches it and AMP201 on its
``torch.log(p)`` was a false positive. Near misses: the same function on the CUDA side of the test,
and one also called outside the device test."""
import pytest
from cliutil import hazard_findings, write_project

LOSS = '''
import torch
from torch import nn


def focal_cuda(logits, targets):
    return torch.ops.my_ext.focal(logits, targets)


def focal_cpu(logits, targets):
    p = torch.sigmoid(logits)
    term1 = (1 - p) ** 2.0 * torch.log(p)
    term2 = p ** 2.0 * torch.log(1 - p)
    return -targets * term1 * 0.25 - (1 - targets) * term2 * 0.75


class FocalLoss(nn.Module):
    def forward(self, logits, targets):
{pick}
        return loss_func(logits, targets).sum()
'''

PICKS = {
    "else of is_cuda": "        if logits.is_cuda:\n            loss_func = focal_cuda\n        else:\n            loss_func = focal_cpu",
    "conditional expression": "        loss_func = focal_cuda if logits.is_cuda else focal_cpu",
    "device.type == 'cpu'": "        if logits.device.type == 'cpu':\n            loss_func = focal_cpu\n        else:\n"
                            "            loss_func = focal_cuda",
    "not is_cuda": "        if not logits.is_cuda:\n            loss_func = focal_cpu\n        else:\n            loss_func = focal_cuda",
}

TRAIN = '''
import torch
from torch import nn

from pkg.loss import FocalLoss


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(16, 8)
        self.loss = FocalLoss()

    def forward(self, x, targets):
        return self.loss(self.cls(x), targets)


def main():
    model = Head().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, t in []:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x.cuda(), t.cuda())
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()


if __name__ == "__main__":
    main()
'''


def findings(tmp_path, pick, extra=""):
    root = write_project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/loss.py": LOSS.replace("{pick}", pick) + extra,
                                          "train.py": TRAIN})
    return hazard_findings(root)


@pytest.mark.parametrize("name", sorted(PICKS))
def test_the_cpu_fallback_is_not_float16(tmp_path, name):
    assert findings(tmp_path, PICKS[name]) == [], name


def test_near_miss_on_the_cuda_side(tmp_path):
    pick = "        if logits.is_cuda:\n            loss_func = focal_cpu\n        else:\n            loss_func = focal_cuda"
    assert ("pkg/loss.py", "AMP201") in findings(tmp_path, pick)


def test_near_miss_also_called_outside_the_test(tmp_path):
    extra = "\n\ndef plain_loss(logits, targets):\n    return focal_cpu(logits, targets).mean()\n"
    assert ("pkg/loss.py", "AMP201") in findings(tmp_path, PICKS["else of is_cuda"], extra)
