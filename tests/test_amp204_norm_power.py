"""AMP204 on a power of a float16 norm: fairscale's OSS.clip_grad_norm squared the norm of half
gradients (``local_norm ** norm_type``) before summing it across ranks; a norm above 256 squared
is inf in float16. Near misses: a float32 norm, a root, autocast (norm and ** run in float32)."""
import textwrap

import pytest

from amplint.api import lint_source

HALF_MODEL = textwrap.dedent("""
    import torch
    from torch import nn
    from clip import clip_grad_norm
    def main(loader):
        model = nn.Linear(512, 512).cuda().half()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            loss = model(x).float().square().mean()
            loss.backward()
            clip_grad_norm(model.parameters(), 1.0)
            opt.step()
    """)


def clip(norm, power="local_norm ** norm_type"):
    return textwrap.dedent(f"""
    import torch
    def clip_grad_norm(params, max_norm, norm_type=2.0):
        params = [p for p in params if p.grad is not None]
        local_norm = {norm}
        total_norm = {power}
        return total_norm ** (1.0 / norm_type)
    """)


def found(source, extra=None):
    return [(f.line, f.message) for f in lint_source(source, filename="clip.py",
                                                     extra_files=extra or {"train.py": HALF_MODEL}) if f.code == "AMP204"]


STACKED = "torch.norm(torch.stack([torch.norm(p.grad.detach(), norm_type) for p in params]), norm_type)"


@pytest.mark.parametrize("norm, power", [
    (STACKED, "local_norm ** norm_type"),
    ("torch.norm(p.grad)", "local_norm ** 2"),
    ("p.grad.norm()", "local_norm ** 2"),
    ("torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in params]))", "local_norm ** norm_type"),
])
def test_a_power_of_a_norm_of_half_gradients(norm, power):
    [(line, message)] = found(clip(norm, power))
    assert line == 6 and "raises a float16 norm to a power" in message and "256" in message


@pytest.mark.parametrize("name, norm, power", [
    ("the fix: a float32 norm", STACKED.replace("norm_type)", "norm_type, dtype=torch.float32)"), "local_norm ** norm_type"),
    ("a float32 copy first", "torch.norm(torch.stack([torch.norm(p.grad.float(), norm_type) for p in params]))",
     "local_norm ** norm_type"),
    ("a root, not a power", STACKED, "local_norm ** 0.5"),
    ("a power of something else", STACKED, "max_norm ** 2"),
])
def test_near_misses(name, norm, power):
    assert found(clip(norm, power)) == [], name


def test_near_miss_under_autocast_the_norm_is_float32():
    mixed = HALF_MODEL.replace(".cuda().half()", ".cuda()").replace(
        "loss = model(x).float().square().mean()",
        "with torch.autocast('cuda'):\n                loss = model(x).float().square().mean()")
    assert found(clip(STACKED), {"train.py": mixed}) == []


EMBEDDER = textwrap.dedent("""
    import torch
    from torch import nn
    class SpeakerEmbedder(nn.Module):
        def get_mel(self, y):
            y = torch.stft(y, n_fft=512, window=torch.hann_window(512).to(y))
            return torch.norm(y, dim=-1, p=2) ** 2
        def forward(self, wav):
            return self.get_mel(wav)
    """)


@pytest.mark.parametrize("where, expected", [
    ("preprocessing/speaker_embedder.py", []),  # fairseq speech_synthesis/preprocessing: run over the data set
    ("models/speaker_embedder.py", [7]),  # near miss: the same module among the models of a half project
])
def test_a_module_under_a_preprocessing_directory_is_no_model_code(where, expected):
    # (the training imports the module: code no training reaches is not judged as a half model's)
    train = HALF_MODEL.replace("from clip import clip_grad_norm", f"import {where[:-3].replace('/', '.')}").replace(
        "clip_grad_norm(model.parameters(), 1.0)", "")
    out = [f.line for f in lint_source(EMBEDDER, filename=where, extra_files={"train.py": train}) if f.code == "AMP204"]
    assert out == expected
