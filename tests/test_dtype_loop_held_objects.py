"""Metric objects held in a dict and called through a loop variable (ludwig's output features,
triage set 10, T10-3): ``for name, metric_fn in self.metric_functions.items(): metric_fn.update(preds,
targets)``. The project index keeps method calls on a ``for`` target as calls by name
(``ProjectIndex.calls_named``), so the metric's ``update``, which only its subclasses call with
``super().update(preds, target)``, is judged by what those calls pass: the loader's float32 targets.
``abs(target) + 1e-8`` and ``abs(target) + abs(preds) + 1e-8`` are float32, not "an argument of
``update``, which runs under fp16 autocast". Calls of other methods named ``update`` that cannot be
this one (a dict's ``stats.update(other)``) do not count. Near misses: the loop passes the model's
float16 logits for the target, and the metric is called directly with float16 logits."""
import textwrap

import pytest

from amplint.api import lint_source

METRICS = """
import torch
from torch import Tensor

METRICS = {}


def register_metric(name):
    def wrap(cls):
        METRICS[name] = cls
        return cls
    return wrap


class MeanMetric(torch.nn.Module):
    def update(self, preds: Tensor, target: Tensor) -> None:
        self.last = self.get_current_value(preds, target)


@register_metric("mase")
class MASEMetric(MeanMetric):
    def update(self, preds: Tensor, target: Tensor) -> None:
        super().update(preds, target)

    def get_current_value(self, preds: Tensor, target: Tensor) -> Tensor:
        mae = torch.mean(torch.abs(preds - target), dim=-1)
        naive_scale = torch.mean(torch.abs(target), dim=-1) + 1e-8
        return torch.mean(mae / naive_scale)


@register_metric("smape")
class SMAPEMetric(MeanMetric):
    def get_current_value(self, preds: Tensor, target: Tensor) -> Tensor:
        denom = torch.abs(target) + torch.abs(preds) + 1e-8
        return torch.mean(200.0 * torch.abs(preds - target) / denom)
"""

MODEL = """
import torch

from metrics import METRICS, SMAPEMetric


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 4)
        self.metric_functions = {{name: cls() for name, cls in METRICS.items()}}
        self.smape = SMAPEMetric()
        self.stats = {{}}

    def forward(self, x):
        return self.net(x)

    def update_metrics(self, targets, predictions):
        for name, metric_fn in self.metric_functions.items():
            metric_fn = metric_fn.to(predictions.device)
            metric_fn.update(predictions, {looped})
        {direct}
        self.stats.update({{"seen": 1}})
"""

TRAIN = """
import torch

from model import Model

model = Model().cuda()
opt = torch.optim.Adam(model.parameters())
scaler = torch.amp.GradScaler("cuda")
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(80, 16), torch.randn(80, 4)), batch_size=8)
for x, target in loader:
    x, target = x.cuda(), target.cuda()
    with torch.amp.autocast("cuda"):
        preds = model(x)
        loss = torch.nn.functional.mse_loss(preds.float(), target)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    model.update_metrics(target, preds.detach())
"""


def lines(looped="targets", direct="pass"):
    files = {"model.py": textwrap.dedent(MODEL).format(looped=looped, direct=direct), "train.py": TRAIN}
    return sorted(f.line for f in lint_source(textwrap.dedent(METRICS), filename="metrics.py", extra_files=files,
                                              select=("AMP102",)))


@pytest.mark.parametrize("name, kwargs, expected", [
    ("the loader's targets through metric_fn.update in a loop over the dict", {}, []),
    ("near miss: the loop passes the model's float16 logits for the target", {"looped": "predictions * 2"}, [27, 34]),
    # (``MeanMetric.update`` runs ``self.get_current_value``, either subclass's: both are judged float16)
    ("near miss: a metric called directly with float16 logits", {"direct": "self.smape.update(predictions, predictions)"},
     [27, 34]),
])
def test_loop_held_objects(name, kwargs, expected):
    assert lines(**kwargs) == expected, name
