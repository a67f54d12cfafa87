"""The ``except ImportError:`` fallback of a library's class runs only without that library (triage set 17,
T17-4: NEZHA's ``try: from apex.normalization.fused_layer_norm import FusedLayerNorm as BertLayerNorm`` /
``except ImportError: class BertLayerNorm(nn.Module)`` with ``eps=1e-12`` inside the sqrt). Its training
program halves the model under ``if args.fp16:`` and, under the same test, imports apex's ``FP16_Optimizer``
with ``except ImportError: raise``: every float16 run has apex, so the fallback runs only in float32 and
AMP102 on its eps was a false positive. Near misses (the fallback does run in float16, AMP102 stays): a program
that trains in float16 without apex (``model.half()``, no apex), one whose apex import goes on without it (``except
ImportError: FusedAdam = None``), one importing apex only for another option (``if args.local_rank != -1:``),
and a second float16 program that does not import apex."""
import pytest
from cliutil import hazard_findings, write_project

MODELING = '''
import torch
from torch import nn

try:
    from apex.normalization.fused_layer_norm import FusedLayerNorm as BertLayerNorm
except ImportError:

    class BertLayerNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-12):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.bias = nn.Parameter(torch.zeros(hidden_size))
            self.variance_epsilon = eps

        def forward(self, x):
            u = x.mean(-1, keepdim=True)
            s = (x - u).pow(2).mean(-1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.variance_epsilon)
            return self.weight * x + self.bias


class Model(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = BertLayerNorm(hidden, eps=1e-12)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x, labels):
        h = self.LayerNorm(self.dense(x))
        return nn.functional.cross_entropy(self.out(h).float(), labels)
'''

APEX_RUN = '''
import argparse

import torch

from modeling import Model

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
parser.add_argument("--local_rank", type=int, default=-1)


def main():
    args = parser.parse_args()
    model = Model()
    if args.fp16:
        model.half()
    model.cuda()
    params = [p for p in model.parameters()]
{apex}
    else:
        optimizer = torch.optim.Adam(params, lr=1e-4)
    for _ in range(10):
        x = torch.randn(8, 64).cuda()
        if args.fp16:
            x = x.half()
        loss = model(x, torch.randint(0, 2, (8,)).cuda())
        if args.fp16:
            optimizer.backward(loss)
        else:
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
'''

RAISES = '''    if args.fp16:
        try:
            from apex.optimizers import FP16_Optimizer, FusedAdam
        except ImportError:
            raise ImportError("Please install apex to use fp16 training.")
        optimizer = FP16_Optimizer(FusedAdam(params, lr=1e-4, bias_correction=False), dynamic_loss_scale=True)'''
PLAIN = '''    if args.fp16:
        from apex.optimizers import FP16_Optimizer, FusedAdam
        optimizer = FP16_Optimizer(FusedAdam(params, lr=1e-4, bias_correction=False), dynamic_loss_scale=True)'''
GOES_ON = '''    if args.fp16:
        try:
            from apex.optimizers import FP16_Optimizer, FusedAdam
        except ImportError:
            FP16_Optimizer = FusedAdam = None
        optimizer = FP16_Optimizer(FusedAdam(params, lr=1e-4, bias_correction=False), dynamic_loss_scale=True)'''
OTHER_OPTION = '''    if args.local_rank != -1:
        try:
            from apex.parallel import DistributedDataParallel as DDP
        except ImportError:
            raise ImportError("Please install apex to use distributed training.")
        model = DDP(model)
    if args.fp16:
        optimizer = torch.optim.Adam(params, lr=1e-4, eps=1e-4)'''

HALF_RUN = '''
import torch

from modeling import Model


def main():
    model = Model().half().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-4)
    for _ in range(10):
        x = torch.randn(8, 64).cuda().half()
        loss = model(x, torch.randint(0, 2, (8,)).cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
'''


def findings(tmp_path, programs):
    return hazard_findings(write_project(tmp_path / "p", {"modeling.py": MODELING, **programs}))


@pytest.mark.parametrize("apex", [RAISES, PLAIN], ids=["except-raise", "plain import"])
def test_the_fallback_of_a_library_every_float16_run_imports_is_not_float16(tmp_path, apex):
    assert findings(tmp_path, {"run.py": APEX_RUN.replace("{apex}", apex)}) == []


@pytest.mark.parametrize("apex", [GOES_ON, OTHER_OPTION], ids=["import goes on", "another option's import"])
def test_near_miss_a_float16_run_may_lack_the_library(tmp_path, apex):
    assert ("modeling.py", "AMP102") in findings(tmp_path, {"run.py": APEX_RUN.replace("{apex}", apex)})


def test_near_miss_float16_without_the_library(tmp_path):
    assert ("modeling.py", "AMP102") in findings(tmp_path, {"train.py": HALF_RUN})


def test_near_miss_a_second_float16_program_without_the_library(tmp_path):
    assert ("modeling.py", "AMP102") in findings(tmp_path, {"run.py": APEX_RUN.replace("{apex}", RAISES),
                                                           "train.py": HALF_RUN})
