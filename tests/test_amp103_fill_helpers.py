"""AMP103 through a library's masked-fill helper: allennlp's ``util.replace_masked_values(x, mask,
-1e7)`` is ``x.masked_fill(~mask, -1e7)`` (allennlp-models' BiDAF, fixed upstream with
``min_value_of_dtype``)."""
import pytest

from training_util import fixed, found, lines

MODULE = """
import torch
from torch import nn
{imports}


class SpanHead(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.start = nn.Linear(dim, 1)

    def forward(self, x, mask):
        logits = self.start(x).squeeze(-1)
        return {call}


def main(loader):
    model = SpanHead().cuda()
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x, mask in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, mask).logsumexp(-1).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""
UTIL = "from allennlp.nn import util"


def source(call, imports=UTIL):
    return MODULE.replace("{imports}", imports).replace("{call}", call)


@pytest.mark.parametrize("name, imports, call", [
    ("replace_masked_values, positional", UTIL, "util.replace_masked_values(logits, mask, -1e7)"),
    ("replace_masked_values, keywords, from-import", "from allennlp.nn.util import replace_masked_values",
     "replace_masked_values(tensor=logits, mask=mask, replace_with=-1e32)"),
    ("masked_max's min_val (allennlp 0.9)", UTIL, "util.masked_max(logits, mask, dim=-1, min_val=-1e7)"),
    ("masked_softmax, memory efficient, its fill value", UTIL,
     "util.masked_softmax(logits, mask, -1, True, -1e32)"),
])
def test_fill_value_beyond_float16_passed_to_a_helper(name, imports, call):
    (line, message), = found("AMP103", source(call, imports))
    assert line == 14, name
    assert "float16" in message and "masked_fill" in message, name


@pytest.mark.parametrize("name, imports, call", [
    ("a value float16 holds", UTIL, "util.replace_masked_values(logits, mask, -1e4)"),
    ("the dtype's own minimum (allennlp-models' fix)", UTIL,
     "util.replace_masked_values(logits, mask, util.min_value_of_dtype(logits.dtype))"),
    ("masked_softmax without memory_efficient multiplies by the mask", UTIL,
     "util.masked_softmax(logits, mask, dim=-1, mask_fill_value=-1e32)"),
    ("masked_log_softmax takes no fill value", UTIL, "util.masked_log_softmax(logits, mask, -1)"),
    ("another library's helper of that name", "from mylib import replace_masked_values",
     "replace_masked_values(logits, mask, -1e7)"),
])
def test_near_misses_stay_silent(name, imports, call):
    assert lines("AMP103", source(call, imports), extra_files={"mylib.py": "def replace_masked_values(t, m, v): return t\n"}) == [], name


def test_fp32_training_is_silent():
    text = source("util.replace_masked_values(logits, mask, -1e7)")
    text = text[:text.index("    scaler = ")] + """    for x, mask in loader:
        loss = model(x, mask).logsumexp(-1).mean()
        loss.backward()
        opt.step()
"""
    assert lines("AMP103", text) == []


def test_fix_uses_the_tensors_finfo():
    after = fixed(source("util.replace_masked_values(logits, mask, -1e7)"))
    assert "util.replace_masked_values(logits, mask, torch.finfo(logits.dtype).min)" in after


# ---- torch's other writers of a scalar (each raises "value cannot be converted to type c10::Half
# without overflow" on a float16 tensor) ------------------------------------------------------------

@pytest.mark.parametrize("name, call", [
    ("fill_diagonal_ (a contrastive loss masking self-similarity)", "(logits[:, :, None] @ logits[:, None, :]).fill_diagonal_(-1e9)"),
    ("new_full", "logits.new_full(logits.shape, -1e9)"),
    ("index_fill", "logits.index_fill(1, idx, -1e9)"),
    ("F.pad's value", "F.pad(logits, (0, 1), value=-1e9)"),
])
def test_torch_writers_of_a_scalar(name, call):
    text = source(call, imports="import torch.nn.functional as F\nidx = torch.tensor([0])")
    (line, message), = found("AMP103", text)
    assert line == 15 and "float16" in message, name


@pytest.mark.parametrize("name, call", [
    ("new_full in float32", "logits.new_full(logits.shape, -1e9, dtype=torch.float32)"),
    ("F.pad with -inf", "F.pad(logits, (0, 1), value=float('-inf'))"),
    ("index_fill with a value float16 holds", "logits.index_fill(1, idx, -1e4)"),
])
def test_torch_writers_near_misses(name, call):
    text = source(call, imports="import torch.nn.functional as F\nidx = torch.tensor([0])")
    assert lines("AMP103", text) == [], name
    assert lines("AMP103", source("F.pad(logits, (0, 1), value=-1e9)", imports="import torch.nn.functional as F")
                 .replace("torch.float16", "torch.bfloat16").replace('scaler = torch.amp.GradScaler("cuda")', "")) == []
