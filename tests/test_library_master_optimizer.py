"""A library's master-weights optimizer wrapped around the project's optimizer keeps float32 master
weights of a half model: apex's ``FP16_Optimizer(FusedAdam(...))`` beside ``model.half()`` is fp16-master,
so AMP101 does not ask for the eps of half parameters (SpanBERT: triage T7-8)."""
import pytest

from training_util import lines

SCRIPT = """
import torch

def main(args):
    model = torch.nn.Linear(16, 2).cuda()
    if args.fp16:
        model.half()
    if args.fp16:
        from apex.optimizers import FP16_Optimizer, FusedAdam
        optimizer = FP16_Optimizer(FusedAdam(model.parameters(), lr=3e-5), dynamic_loss_scale=True)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    for x in args.data:
        loss = model(x.half() if args.fp16 else x).float().pow(2).mean()
        if args.fp16:
            optimizer.backward(loss)
        else:
            loss.backward()
        optimizer.step()

if __name__ == "__main__":
    main(parse())
"""


def test_apex_fp16_optimizer_keeps_master_weights():
    assert lines("AMP101", SCRIPT) == []


def test_near_miss_a_half_model_stepped_by_torch_adamw_alone():
    source = SCRIPT.replace(
        "        from apex.optimizers import FP16_Optimizer, FusedAdam\n"
        "        optimizer = FP16_Optimizer(FusedAdam(model.parameters(), lr=3e-5), dynamic_loss_scale=True)\n",
        "        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)\n")
    assert lines("AMP101", source) != []


# modelscope's GLM trainer (mglm/train_utils.py): the AdamW is built first, then wrapped under `if args.fp16:`
WRAPPED_LATER = """
import torch
from {module} import FP16_Optimizer

def get_optimizer(param_groups, args):
    optimizer = torch.optim.AdamW(param_groups, lr=args.lr)
    if args.fp16:
        optimizer = FP16_Optimizer(optimizer, dynamic_loss_scale=True)
    return optimizer

def main(args):
    model = torch.nn.Linear(16, 2).cuda()
    if args.fp16:
        model.half()
    optimizer = get_optimizer(model.parameters(), args)
    for x in args.data:
        loss = model(x).float().pow(2).mean()
        optimizer.backward(loss)
        optimizer.step()

if __name__ == "__main__":
    main(parse())
"""


@pytest.mark.parametrize("module", ["megatron_util.fp16", "megatron.fp16", "deepspeed.runtime.fp16.fused_optimizer"])
def test_megatron_and_deepspeed_fp16_optimizers_keep_master_weights(module):
    assert lines("AMP101", WRAPPED_LATER.format(module=module)) == []


def test_near_miss_an_fp16_optimizer_of_an_unknown_library_is_not_taken_for_one():
    assert lines("AMP101", WRAPPED_LATER.format(module="mylib.fp16")) != []
