"""AMP301 when the backward sits in a helper the autocast loop calls with its loss
(my-kaggle-template 5ffa878, real-bug set 13, M13-3: ``engine.step(model, optimizer, loss, ...,
scaler=scaler)`` after the float16 forward, the helper running ``loss.backward(); optimizer.step()``
whenever ``scaler`` is None, and no GradScaler built anywhere). Near misses: a GradScaler built and
handed in, a caller with no autocast or with bfloat16 autocast."""
from cliutil import hazard_findings, write_project

ENGINE = '''
from torch import nn


def step(model, optimizer, loss, max_norm{scaler_param}):
{body}
    optimizer.zero_grad()
'''

PLAIN = """    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
    optimizer.step()"""

BRANCHED = """    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        optimizer.step()"""

TRAIN = '''
import torch
from torch import nn

import engine
from thirdparty import make_scaler


def train_one_epoch(model, loader, optimizer, criterion, scaler=None):
    for x, y in loader:
        with torch.autocast("cuda", dtype={dtype}):
            loss = criterion(model(x.cuda()), y.cuda())
        engine.step(model, optimizer, loss, 1.0{passed})


def main():
    model = nn.Linear(16, 4).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train_one_epoch(model, [], optimizer, nn.CrossEntropyLoss(){built})


if __name__ == "__main__":
    main()
'''


def findings(tmp_path, body=PLAIN, dtype="torch.float16", passed="", built=""):
    engine = ENGINE.replace("{body}", body).replace("{scaler_param}", ", scaler=None" if body is BRANCHED else "")
    train = TRAIN.replace("{dtype}", dtype).replace("{passed}", passed).replace("{built}", built)
    root = write_project(tmp_path / "p", {"src/engine.py": engine, "src/train.py": train})
    return hazard_findings(root)


def test_backward_in_a_helper_of_an_fp16_autocast_loop(tmp_path):
    assert findings(tmp_path) == [("src/engine.py", "AMP301")]


def test_the_scaler_branch_of_a_helper_no_scaler_ever_reaches(tmp_path):
    assert findings(tmp_path, BRANCHED, passed=", scaler=scaler") == [("src/engine.py", "AMP301")]


def test_near_miss_a_grad_scaler_built_and_handed_in(tmp_path):
    assert findings(tmp_path, BRANCHED, passed=", scaler=scaler", built=', torch.amp.GradScaler("cuda")') == []


def test_near_miss_a_scaler_from_code_the_project_does_not_show(tmp_path):
    # (no GradScaler is built in the project, but the helper's scaler is handed in: the scaled path runs)
    assert findings(tmp_path, BRANCHED, passed=", scaler=scaler", built=", make_scaler()") == []


def test_near_miss_bfloat16_autocast(tmp_path):
    assert findings(tmp_path, dtype="torch.bfloat16") == []


def test_near_miss_no_autocast_at_the_call(tmp_path):
    root = write_project(tmp_path / "p", {"src/engine.py": ENGINE.replace("{body}", PLAIN).replace("{scaler_param}", ""),
                                          "src/train.py": "import torch\nimport engine\n\n\ndef fit(model, opt, loader):\n"
                                                          "    for x, y in loader:\n        loss = model(x, y)\n"
                                                          "        engine.step(model, opt, loss, 1.0)\n"
                                                          "    with torch.autocast('cuda', dtype=torch.float16):\n"
                                                          "        return model(x, y)\n"})
    assert hazard_findings(root) == []
