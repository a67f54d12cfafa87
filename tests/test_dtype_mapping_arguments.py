"""An argument indexed by a string (``features["token_embeddings"]``) is a mapping: a batch or a
features dict whose entries are masks, ids, input data and layer outputs alike (a transformer's last
hidden state leaves a LayerNorm: float32 under autocast). Under fp16 autocast nothing says such an
entry is float16 (a model's predictions, `outputs["pred_logits"]`, excepted), so a pooling module's ``-1e9`` fill and its ``clamp(count, min=1e-9)`` of a token
count are not reported (sentence-transformers' Pooling). Near misses: a tensor argument indexed by a
mask is still taken float16 under fp16 autocast; in a half model (pure fp16) every entry is float16
and both are reported."""
import textwrap

import pytest

from amplint.api import lint_source
from conftest import HALF_TRAINING

SRC = """
import torch
from torch import nn


class Pool(nn.Module):
    def forward({params}):
        {emb}
        mask = {mask}.unsqueeze(-1).expand(emb.size()).to(emb.dtype)
        emb[mask == 0] = -1e9
        if {has_weights}:
            count = {weights}.unsqueeze(-1)
        else:
            count = mask.sum(1)
        count = torch.clamp(count, min=1e-9)
        return torch.max(emb, 1)[0], (emb * mask).sum(1) / count
"""
AUTOCAST_TRAINING = """

def train(model, pool, loader, opt):
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = pool(model(batch)).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""
MAPPING = dict(emb='emb = features["token_embeddings"]', mask='features["attention_mask"]',
               has_weights='"token_weights_sum" in features', weights='features["token_weights_sum"]')
TENSORS = dict(params="self, emb: torch.Tensor, attention_mask, weights=None", emb="pass",
               mask="attention_mask", has_weights="weights is not None", weights="weights")


def findings(params="self, features", files=None, **parts):
    src = textwrap.dedent(SRC).replace("{params}", params) + ("" if files else AUTOCAST_TRAINING)
    for k, v in {**MAPPING, **parts}.items():
        src = src.replace("{" + k + "}", v)
    return [(f.code, f.line) for f in lint_source(src, filename="snippet.py", extra_files=files)
            if f.code in ("AMP102", "AMP103")]


@pytest.mark.parametrize("params", ["self, features", "self, features: dict[str, torch.Tensor]",
                                    "self, features: 'Dict[str, Tensor]'"])
def test_entries_of_a_features_dict_are_not_taken_float16(params):
    assert findings(params) == []


def test_near_miss_tensor_arguments_under_fp16_autocast():
    assert findings(**TENSORS) == [("AMP103", 10), ("AMP102", 15)]


def test_near_miss_predictions_from_an_outputs_dict():
    # rf-detr's IA-BCE loss: `src_logits = outputs["pred_logits"]`, a final Linear's output
    src = textwrap.dedent("""
        import torch
        from torch import nn


        class Criterion(nn.Module):
            def forward(self, outputs, targets):
                prob = outputs["pred_logits"].sigmoid()
                return -(targets * prob.log() + (1 - targets) * (1 - prob).log()).mean()
        """) + AUTOCAST_TRAINING.replace("pool(model(batch))", "pool(model(batch), batch)")
    assert [f.code for f in lint_source(src, filename="snippet.py") if f.code == "AMP202"] == ["AMP202"]


def test_near_miss_a_half_model():
    assert findings(files={"train_half.py": HALF_TRAINING}) == [("AMP103", 10), ("AMP102", 15)]
