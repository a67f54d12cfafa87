"""A module built only for a Dataset runs in the data pipeline: the dataset calls it in
``__getitem__`` on the data loader's workers, on float32 data, never under the training step's
autocast (FunASR's Whisper front end, ludwig's audio features: triage set 10, T10-4). Every
construction the project index sees must be handed to a ``Dataset`` subclass (an argument of its
construction, or a local used only so) or sit in a ``Dataset``'s method.
Near misses: the same front end also handed to the model, built in the training step, and a class
nothing builds (no construction seen)."""
import textwrap

import pytest

from amplint.api import lint_source

FRONTEND = """
import torch


class WhisperFrontend(torch.nn.Module):
    def __init__(self, n_mels=80, n_fft=400):
        super().__init__()
        self.n_fft = n_fft
        self.proj = torch.nn.Linear(n_fft // 2 + 1, n_mels)

    def forward(self, audio):
        window = torch.hann_window(self.n_fft)
        stft = torch.stft(audio, self.n_fft, 160, window=window, return_complex=True)
        magnitudes = stft[..., :-1].abs() ** 2
        mel_spec = self.proj(magnitudes.T)
        return torch.clamp(mel_spec, min=1e-10).log10()
"""

DATASET = """
import torch
from frontend import WhisperFrontend


class AudioDataset(torch.utils.data.Dataset):
    def __init__(self, frontend=None):
        self.frontend = frontend if frontend is not None else {own}

    def __len__(self):
        return 100

    def __getitem__(self, index):
        audio = torch.randn(16000)
        return self.frontend(audio), torch.tensor(index % 10)
"""

TRAIN = """
import torch

from dataset import AudioDataset
from frontend import WhisperFrontend

model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(10)).cuda()
opt = torch.optim.Adam(model.parameters())
scaler = torch.amp.GradScaler("cuda")
{build}
for feats, labels in loader:
    feats, labels = feats.cuda(), labels.cuda()
    with torch.amp.autocast("cuda", dtype=torch.float16):
        {step}
        loss = torch.nn.functional.cross_entropy(model(feats), labels)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def codes(build, step="pass", own="None"):
    files = {"dataset.py": textwrap.dedent(DATASET).format(own=own),
             "train.py": textwrap.dedent(TRAIN).format(build=build, step=step)}
    return [f.code for f in lint_source(textwrap.dedent(FRONTEND), filename="frontend.py", extra_files=files,
                                        select=("AMP102",))]


LOADER = "loader = torch.utils.data.DataLoader(AudioDataset(WhisperFrontend()), batch_size=4)"
LOCAL = "fe = WhisperFrontend()\nloader = torch.utils.data.DataLoader(AudioDataset(fe), batch_size=4)"


@pytest.mark.parametrize("name, kwargs, expected", [
    ("built as a Dataset's argument", {"build": LOADER}, []),
    ("built into a local handed to a Dataset", {"build": LOCAL}, []),
    ("built in the Dataset's __init__", {"build": "loader = AudioDataset()", "own": "WhisperFrontend()"}, []),
    ("near miss: the local is also the model's", {"build": LOCAL + "\nextra = fe"}, ["AMP102"]),
    ("near miss: also built in the training step", {"build": LOADER, "step": "feats = WhisperFrontend()(feats)"},
     ["AMP102"]),
    ("near miss: no construction seen", {"build": "loader = AudioDataset()"}, ["AMP102"]),
])
def test_dataset_held_modules(name, kwargs, expected):
    assert codes(**kwargs) == expected, name
