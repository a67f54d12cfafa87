"""``F.normalize`` / ``F.cosine_similarity`` with their default eps on a branch no caller takes
(solo-learn's BYOL / SimSiam / W-MSE losses: ``if simplified: return 2 - 2 * cosine_similarity(...)``
before the ``F.normalize`` path, every training call leaving ``simplified=True``; set-15 triage T15-1,
six false positives). The float16 argument comes from callers that never reach the line, so AMP102 is
not reported there. Near misses: a pure-half caller that takes the normalize path keeps its finding;
under fp16 autocast the path taken is silent because normalize runs in float32 there."""
from cliutil import hazard_findings, write_project

LOSS = '''
import torch.nn.functional as F


def cos_loss(z1, z2, simplified: bool = True):
    if simplified:
        return 2 - 2 * F.cosine_similarity(z1, z2.detach(), dim=-1).mean()
    z1 = F.normalize(z1, dim=-1)
    z2 = F.normalize(z2, dim=-1)
    return 2 - 2 * (z1 * z2.detach()).sum(dim=1).mean()
'''

AUTOCAST = '''
import torch
from torch import nn
from pkg.losses import cos_loss


def main():
    model = nn.Linear(32, 16).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(10):
        x = torch.randn(8, 32, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            z = model(x)
            loss = cos_loss(z, z{passed})
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()


if __name__ == "__main__":
    main()
'''

PURE_HALF = '''
import torch
from torch import nn
from pkg.losses import cos_loss


def main():
    model = nn.Linear(32, 16).cuda().half()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        x = torch.randn(8, 32, device="cuda", dtype=torch.float16)
        z = model(x)
        loss = cos_loss(z, z{passed})
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
'''


def findings(tmp_path, train, passed):
    root = write_project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/losses.py": LOSS,
                                          "train.py": train.replace("{passed}", passed)})
    return sorted(hazard_findings(root))


def test_the_normalize_path_no_caller_takes_is_silent_under_autocast(tmp_path):
    assert findings(tmp_path, AUTOCAST, "") == []


def test_the_cosine_path_no_caller_takes_is_silent(tmp_path):
    # (the caller takes the normalize path: cosine_similarity above it never runs; normalize runs in
    # float32 under autocast)
    assert findings(tmp_path, AUTOCAST, ", simplified=False") == []


def test_near_miss_pure_half_caller_taking_the_normalize_path(tmp_path):
    assert findings(tmp_path, PURE_HALF, ", simplified=False") == [("pkg/losses.py", "AMP102")] * 2


def test_near_miss_pure_half_caller_taking_the_cosine_path(tmp_path):
    assert findings(tmp_path, PURE_HALF, "") == [("pkg/losses.py", "AMP102")]
