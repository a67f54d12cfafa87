"""The dtype of a project module's call is what its ``forward`` returns: a soft alignment returned
by ``nn.Softmax`` / ``torch.softmax`` is float32 under fp16 autocast (an fp32-list op), so a loss
that takes ``log(clamp(soft, min=1e-12))`` of it is not judged float16 (DeepLearningExamples'
FastPitch aligner, coqui TTS; T5-15). The same for a tuple element of the forward's returns
(``attn_soft, attn_logprob = self.attention(...)``) and for a module defined in another file.
Near misses: a forward returning a layer's output (float16 under autocast) stays reported, and
so does a forward whose float32 return is read only with autocast off (a matmul of float32
inputs is float16 under autocast)."""
import textwrap

import pytest

from amplint.api import lint_source

ALIGNER = """
import torch
from torch import nn


class Aligner(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.key_proj = nn.Conv1d(dim, dim, 1)
        self.softmax = nn.Softmax(dim=3)

    def forward(self, queries, keys):
        keys_enc = self.key_proj(keys)
        attn = -((queries[:, :, :, None] - keys_enc[:, :, None]) ** 2).sum(1, keepdim=True)
        return {returned}
"""
TRAIN = """
import torch
from torch import nn
{imports}

class BinarizationLoss(nn.Module):
    def forward(self, hard_attention, soft_attention, eps=1e-12):
        log_sum = torch.log(torch.clamp(soft_attention[hard_attention == 1], min=eps)).sum()
        return -log_sum / hard_attention.sum()


def train(loader, dim=80):
    aligner = Aligner(dim).cuda()
    kl = BinarizationLoss()
    optimizer = torch.optim.Adam(aligner.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for mel, text, hard in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            {call}
            loss = kl(hard, soft)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""
CALL = "soft = aligner(mel, text)"


def amp102(returned, call=CALL, other_file=False):
    aligner = textwrap.dedent(ALIGNER.format(returned=returned))
    if other_file:
        train = textwrap.dedent(TRAIN.format(imports="from aligner import Aligner\n", call=call))
        findings = lint_source(train, filename="train.py", extra_files={"aligner.py": aligner})
    else:
        train = textwrap.dedent(TRAIN.format(imports="", call=call))
        findings = lint_source(aligner + train, filename="train.py")
    return [f for f in findings if f.code == "AMP102"]


@pytest.mark.parametrize("other_file", [False, True])
@pytest.mark.parametrize("returned", ["self.softmax(attn)", "torch.softmax(attn, dim=3)",
                                      "torch.log_softmax(attn, dim=3).exp()", "self.key_proj(keys).float()"])
def test_a_module_returning_float32_gives_float32(returned, other_file):
    assert amp102(returned, other_file=other_file) == []


@pytest.mark.parametrize("other_file", [False, True])
def test_near_miss_a_module_returning_a_layer_output(other_file):
    findings = amp102("self.key_proj(attn)", other_file=other_file)
    assert len(findings) == 1 and "soft_attention" in findings[0].message


def test_tuple_element_of_a_forward():
    returned = "self.softmax(attn), attn"
    call = "soft, logprob = aligner(mel, text)"
    assert amp102(returned, call=call) == []
    # the other element is the raw scores: float32 too (** is on the fp32 list), but the first element
    # of a tuple whose softmax element is a layer output stays float16
    assert len(amp102("self.key_proj(attn), attn", call=call)) == 1


def test_near_miss_a_float32_return_read_with_autocast_off():
    """A forward that opens an autocast region of its own is read with autocast off outside it, where
    ``q.float() @ k.float()`` is float32; called under the training step's fp16 autocast, that
    matmul runs in float16: the output stays float16 for the loss."""
    returned = "q.float() @ k.float()"
    aligner = ALIGNER.replace("        return {returned}", textwrap.indent(textwrap.dedent("""
        with torch.autocast("cuda", dtype=torch.bfloat16):
            q, k = self.key_proj(queries), self.key_proj(keys)
        return {returned}"""), "        "))
    src = textwrap.dedent(aligner.format(returned=returned)) + textwrap.dedent(TRAIN.format(imports="", call=CALL))
    assert len([f for f in lint_source(src, filename="train.py") if f.code == "AMP102"]) == 1
    ok = src.replace("q.float() @ k.float()", "torch.softmax(q.float() @ k.float(), dim=-1)").replace(
        'with torch.autocast("cuda", dtype=torch.bfloat16):', "if True:")
    assert [f for f in lint_source(ok, filename="train.py") if f.code == "AMP102"] == []


def test_inherited_forward_in_another_file():
    base = textwrap.dedent(ALIGNER.format(returned="self.softmax(attn)"))
    child = "from aligner import Aligner\n\n\nclass MyAligner(Aligner):\n    pass\n"
    train = textwrap.dedent(TRAIN.format(imports="from myaligner import MyAligner\n", call=CALL)).replace(
        "Aligner(dim)", "MyAligner(dim)")
    findings = lint_source(train, filename="train.py", extra_files={"aligner.py": base, "myaligner.py": child})
    assert [f for f in findings if f.code == "AMP102"] == []
    near = train.replace("from myaligner import MyAligner", "from aligner import Aligner as MyAligner")
    base_layer = base.replace("return self.softmax(attn)", "return self.key_proj(attn)")
    findings = lint_source(near, filename="train.py", extra_files={"aligner.py": base_layer})
    assert len([f for f in findings if f.code == "AMP102"]) == 1


def test_tuple_element_of_a_forward_through_a_name():
    """``y_pred = aligner(mel, text)`` then ``soft, logprob = y_pred`` (FastPitch's training step):
    the element as if unpacked from the call."""
    call = "y_pred = aligner(mel, text)\n            soft, logprob = y_pred"
    assert amp102("self.softmax(attn), attn", call=call) == []
    assert len(amp102("self.key_proj(attn), attn", call=call)) == 1
