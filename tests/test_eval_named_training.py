"""A training loop's own evidence outweighs its file's name: the "evaluation protocols" of DINO / iBOT / BEiT
(``evaluation/eval_cls.py``) fine-tune the whole model, with autocast and a GradScaler in ``train_one_epoch`` beside
backward and the scaler's step. Their file name made that evidence "[inference]" and the program fp32 (ibot, set 13
M13-1: AMP401 on a trained logit scale went unreported)."""
import textwrap

from amplint.project import Project

from cliutil import hazard_findings, write_project

EVAL_CLS = """
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)
        self.logit_scale = nn.Parameter(torch.ones([]))
    def forward(self, x):
        return self.fc(x) * self.logit_scale.exp()
def train_one_epoch(model, loader, optimizer, scaler):
    model.train()
    for x, y in loader:
        with torch.cuda.amp.autocast():
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
def main():
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    loader = [(torch.randn(8, 16).cuda(), torch.randint(0, 4, (8,)).cuda())]
    for epoch in range(10):
        train_one_epoch(model, loader, optimizer, scaler)
if __name__ == "__main__":
    main()
"""

# an evaluation script whose backward computes input gradients (a saliency map) under autocast: no optimizer
# steps anything, so its file name still makes it an evaluation
SALIENCY = """
import torch
import torch.nn as nn
def saliency(model, x):
    x.requires_grad_(True)
    with torch.cuda.amp.autocast():
        score = model(x).max()
    score.backward()
    return x.grad.abs()
def main():
    model = nn.Linear(16, 4).cuda()
    print(saliency(model, torch.randn(8, 16).cuda()))
if __name__ == "__main__":
    main()
"""


def _project(tmp_path, files):
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_fine_tuning_loop_in_an_eval_named_file_is_training(tmp_path):
    root = _project(tmp_path, {"evaluation/eval_cls.py": EVAL_CLS})
    p = Project(root)
    assert p.regime_for(root / "evaluation" / "eval_cls.py").mode == "fp16-mixed"
    assert ("evaluation/eval_cls.py", "AMP401") in hazard_findings(root)


def test_near_miss_an_evaluation_in_the_same_file_stays_inference(tmp_path):
    # an ``evaluate`` under no_grad beside the training loop: its autocast is no training evidence
    source = EVAL_CLS.replace("def main():", "@torch.no_grad()\ndef evaluate(model, x):\n"
                              "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        return model(x)\ndef main():")
    root = _project(tmp_path, {"evaluation/eval_cls.py": source})
    roles = {s["text"]: s["role"] for s in Project(root).facts()[(root / "evaluation" / "eval_cls.py").resolve()]["signals"]}
    assert roles["torch.autocast('cuda', dtype=torch.bfloat16)"] == "inference"
    assert roles["torch.cuda.amp.autocast()"] == "training"


def test_near_miss_an_eval_script_whose_backward_steps_nothing_stays_inference(tmp_path):
    root = _project(tmp_path, {"evaluation/eval_saliency.py": SALIENCY})
    facts = Project(root).facts()[(root / "evaluation" / "eval_saliency.py").resolve()]
    assert [s["role"] for s in facts["signals"]] == ["inference"]
