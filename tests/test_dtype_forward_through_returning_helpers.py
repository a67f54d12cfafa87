"""A model handed back by a helper that returns it as given (radtts, triage set 18, T18-4: ``model, optimizer,
iteration = load_checkpoint(path, model, optimizer)``, ``model = warmstart(path, model)``, ``model =
apply_gradient_allreduce(model)`` from another module: each ends ``return model``) is still the module built
before it, so ``model(mel, text, attn_prior=attn_prior)`` stays a call of its ``forward`` and the caller's
float32 ``attn_prior`` (a DataLoader batch) is what ``forward`` gets; so does radtts' voice-conversion program,
which unpacks the batch with ``parse_data_from_batch`` imported from train.py (an imported helper's tuple element). AMP102 on ``log(attn_prior + 1e-8)``
fired, the argument taken as "an argument of forward, which runs under fp16 autocast". Near misses (AMP102
stays): the caller passes ``attn_prior.half()``; a helper that returns something else than its parameter
(``return model.module``) cuts the tie."""
import pytest
from cliutil import hazard_findings, write_project

MODEL = '''
import torch
import torch.nn as nn


class AlignmentAttention(nn.Module):
    def __init__(self, n_mel=80, n_text=64, n_att=80):
        super().__init__()
        self.key_proj = nn.Conv1d(n_text, n_att, 1)
        self.query_proj = nn.Conv1d(n_mel, n_att, 1)
        self.log_softmax = nn.LogSoftmax(dim=3)

    def forward(self, queries, keys, attn_prior=None):
        attn = (self.query_proj(queries)[:, :, :, None] - self.key_proj(keys)[:, :, None]) ** 2
        attn = -0.0005 * attn.sum(1, keepdim=True)
        if attn_prior is not None:
            attn = self.log_softmax(attn) + torch.log(attn_prior[:, None] + 1e-8)
        return attn


class TTS(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv1d(64, 64, 3, padding=1)
        self.attention = AlignmentAttention()

    def forward(self, mel, text, attn_prior=None):
        return self.attention(mel, self.encoder(text), attn_prior=attn_prior)
'''
DISTRIBUTED = '''
def apply_gradient_allreduce(module):
    for p in module.parameters():
        p.register_hook(lambda g: g)
    return module
'''
TRAIN = '''
import torch
from torch.utils.data import DataLoader
from model import TTS
from distributed import apply_gradient_allreduce


def parse_batch(batch):
    mel, text, attn_prior = batch["mel"].cuda(), batch["text"].cuda(), batch["attn_prior"].cuda(){cast}
    return mel, text, attn_prior


def load_checkpoint(checkpoint_path, model, optimizer):
    checkpoint_dict = torch.load(checkpoint_path, map_location="cpu")
    model.load_state_dict(checkpoint_dict["state_dict"])
    optimizer.load_state_dict(checkpoint_dict["optimizer"])
    return {returned}, optimizer, checkpoint_dict["iteration"]


def warmstart(checkpoint_path, model):
    model.load_state_dict(torch.load(checkpoint_path)["state_dict"], strict=False)
    return model


def train(dataset, checkpoint_path="", warm="", n_gpus=1):
    model = TTS().cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    if warm != "":
        model = warmstart(warm, model)
    if checkpoint_path != "":
        model, opt, iteration = load_checkpoint(checkpoint_path, model, opt)
    if n_gpus > 1:
        model = apply_gradient_allreduce(model)
    scaler = torch.amp.GradScaler("cuda")
    for batch in DataLoader(dataset, batch_size=4):
        mel, text, attn_prior = parse_batch(batch)
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = -model(mel, text, attn_prior=attn_prior).logsumexp(-1).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
'''


INFER = '''
import torch
from torch.utils.data import DataLoader
from model import TTS
from train import parse_batch


def convert(dataset):
    model = TTS()
    model.load_state_dict(torch.load("tts.pt"))
    model.cuda().eval()
    for batch in DataLoader(dataset, batch_size=1):
        mel, text, attn_prior = parse_batch(batch)
        with torch.autocast("cuda", dtype=torch.float16):
            out = model(mel, text, attn_prior=attn_prior)
        torch.save(out, "out.pt")


if __name__ == "__main__":
    convert([])
'''


def findings(tmp_path, returned="model", cast="", infer=False):
    return hazard_findings(write_project(tmp_path / "p", {
        "model.py": MODEL, "distributed.py": DISTRIBUTED,
        "train.py": TRAIN.replace("{returned}", returned).replace("{cast}", cast),
        **({"infer.py": INFER} if infer else {})}))


@pytest.mark.parametrize("infer", [False, True], ids=["training", "and an inference program"])
def test_the_model_a_helper_hands_back_is_the_module_built(tmp_path, infer):
    # (the inference program unpacks the batch with the training file's helper: its tuple's element is read there)
    assert findings(tmp_path, infer=infer) == []


@pytest.mark.parametrize("infer", [False, True], ids=["training", "and an inference program"])
def test_near_miss_the_caller_passes_a_half_prior(tmp_path, infer):
    assert findings(tmp_path, cast=".half()", infer=infer) == [("model.py", "AMP102")]


def test_near_miss_a_helper_returning_something_else(tmp_path):
    assert findings(tmp_path, returned="model.module") == [("model.py", "AMP102")]
