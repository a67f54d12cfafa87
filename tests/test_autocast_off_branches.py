"""Code that runs only where autocast is off: the ``else`` of ``if torch.is_autocast_enabled():``,
and a helper's branch that its only autocast caller's literal argument skips (pytorch3d
implicitron's ``calc_bce``: ``calc_bce(p.logit(), gt, pred_logits=True)`` when autocast is on,
``calc_bce(p, gt)`` -> ``F.binary_cross_entropy`` only when it is off; triage T8-1). Near misses:
the probability path called under autocast; the logits flag passed as a variable."""
import pytest

from amplint.api import lint_source

HELPER = """
import torch.nn.functional as F


def calc_bce(pred, gt, pred_logits=False):
    if pred_logits:
        return F.binary_cross_entropy_with_logits(pred, gt)
    return F.binary_cross_entropy(pred, gt)
"""
TRAIN = """
import torch
from metric_utils import calc_bce


def main(model, loader, flag):
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x, gt in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            prob = model(x).sigmoid()
            {body}
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""
BRANCHES = """if torch.is_autocast_enabled():
                loss = calc_bce(prob.logit(), gt, pred_logits={flag})
            else:
                loss = calc_bce(prob, gt)"""


def amp202(body):
    return [(f.path.rsplit("/", 1)[-1], f.line)
            for f in lint_source(HELPER, filename="metric_utils.py", extra_files={"train.py": TRAIN.replace("{body}", body)})
            if f.code == "AMP202"]


def test_the_probability_path_runs_only_where_autocast_is_off():
    assert amp202(BRANCHES.replace("{flag}", "True")) == []


@pytest.mark.parametrize("body", ["loss = calc_bce(prob, gt)", BRANCHES.replace("{flag}", "flag")])
def test_near_miss_the_probability_path_under_autocast(body):
    assert amp202(body) == [("metric_utils.py", 8)]


METRICS = """
import torch

import metric_utils as utils


class ViewMetrics(torch.nn.Module):
    def forward(self, pred, gt):
        {body}
"""
LAUNCHED = """
import torch
from accelerate import Accelerator

from metrics import ViewMetrics


def run(model, loader):
    accelerator = Accelerator()
    metrics = ViewMetrics()
    opt = torch.optim.Adam(model.parameters())
    model, opt = accelerator.prepare(model, opt)
    for x, gt in loader:
        loss = metrics(model(x).sigmoid(), gt)
        accelerator.backward(loss)
        opt.step()
"""
BRANCHES_IN_FORWARD = """if torch.is_autocast_enabled():
            return utils.calc_bce(pred.logit(), gt, pred_logits=True)
        else:
            return utils.calc_bce(pred, gt, pred_logits=False)"""


def launched_amp202(body):
    files = {"metrics.py": METRICS.replace("{body}", body), "train.py": LAUNCHED}
    return [(f.path.rsplit("/", 1)[-1], f.line) for f in lint_source(HELPER, filename="metric_utils.py", extra_files=files)
            if f.code == "AMP202"]


def test_under_a_launcher_the_branches_in_a_module_forward():
    """pytorch3d's real shape (triage repro_1b): the branches sit in a metrics Module's forward and the
    precision is accelerate's, out of sight: only the calls surely made with autocast off count."""
    assert launched_amp202(BRANCHES_IN_FORWARD) == []


def test_near_miss_under_a_launcher_a_plain_call():
    assert launched_amp202("return utils.calc_bce(pred, gt)") == [("metric_utils.py", 8)]
