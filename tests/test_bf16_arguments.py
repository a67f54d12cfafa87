"""Under bf16 autocast, a tensor argument of model code whose callers are out of sight (a
criterion's ``forward``) is bfloat16, as it is float16 under fp16 autocast: only the rules that judge
bfloat16 read it, for ``log(1 - p)`` of a sigmoid that rounds to 1.0 above about 6.2 (rf-detr's
hand-written focal BCE, fixed upstream with F.logsigmoid after an inf loss in bf16 training)."""
import textwrap

import pytest

from training_util import lines

TRAIN = textwrap.dedent("""
    import torch
    from criterion import SetCriterion
    def train(model, loader, optimizer):
        criterion = SetCriterion()
        for x, y in loader:
            with torch.autocast("cuda", dtype=DTYPE):
                loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
""")

CRITERION = """
import torch
import torch.nn.functional as F

class SetCriterion(torch.nn.Module):
    def forward(self, outputs, targets):
        prob = outputs["pred_logits"].sigmoid()
        neg_weights = prob ** 2
        LOSS
        return loss.sum()
"""
HAND_WRITTEN = "loss = -targets * prob.log() - neg_weights * (1 - prob).log()"


@pytest.mark.parametrize("dtype, loss, reported", [
    ("torch.bfloat16", HAND_WRITTEN, True),
    ("torch.float16", HAND_WRITTEN, True),
    # near misses: from the logits, nothing rounds; log(p) alone is safe in bfloat16's range
    ("torch.bfloat16", "loss = -targets * F.logsigmoid(outputs['pred_logits'])", False),
    ("torch.bfloat16", "loss = -targets * prob.log()", False),
])
def test_a_criterion_argument_under_bf16_autocast(dtype, loss, reported):
    source = CRITERION.replace("LOSS", loss)
    found = lines("AMP202", source, filename="criterion.py",
                  extra_files={"train.py": TRAIN.replace("DTYPE", dtype)}) + \
        lines("AMP201", source, filename="criterion.py", extra_files={"train.py": TRAIN.replace("DTYPE", dtype)})
    assert bool(found) == reported, found
