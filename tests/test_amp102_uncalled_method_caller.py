"""A helper's default eps judged through a method nothing calls (triage set 21, T21-5: alphafold3-pytorch's
``log(t, eps=1e-20)``; ``ElucidatedAtomDiffusion.c_noise(sigma)`` calls ``log(sigma)`` with the default
and nothing in the project calls ``c_noise``; the diffusion's ``forward`` calls ``log`` with its own eps on
a float32 noise level). AMP102 fired on the default: ``sigma`` of the uncalled method was taken float16
from the regime (library policy, fp16 autocast). A call in a method no code of the project calls never
runs: the calls that run say what the helper gets. Near misses (AMP102 stays): the method is called on
a float16 value; a training step calls it by name in another file; it is looked up with
``getattr(self, name)``; the class is a framework's subclass (its machinery may call the method); the
helper's only default-eps call is in the uncalled method (nothing else says: judged as before)."""
import pytest
from cliutil import hazard_findings, write_project

from amplint.context.callers import _COMPUTED_SELF_ATTRIBUTE

PYPROJECT = '[project]\nname = "af"\nversion = "0.1"\n\n[tool.setuptools]\npackages = ["af"]\n'

MODEL = '''
import torch
import torch.nn as nn
{imports}


def log(t, eps=1e-20):
    return torch.log(t.clamp(min=eps))


class Diffusion({base}):
    def __init__(self, dim=16, sigma_data=16.0):
        super().__init__()
        self.net = nn.Linear(dim, dim)
        self.sigma_data = sigma_data
        self.fourier = nn.Linear(1, dim)

    def c_noise(self, sigma):
        return log(sigma) * 0.25

    def noise_distribution(self, batch_size):
        return (-1.2 + 1.5 * torch.randn((batch_size,))).exp() * self.sigma_data

    def forward(self, atom_pos):
        sigmas = self.noise_distribution(atom_pos.shape[0]).type(atom_pos.dtype)
        embed = self.fourier({embed}[:, None] * 0.25)
        noised = atom_pos + sigmas[:, None] * torch.randn_like(atom_pos)
        {extra}
        return ((self.net(noised + embed) - atom_pos) ** 2).mean()
'''

TRAINER = '''
import torch

from af.model import Diffusion


class Trainer:
    def __init__(self, model: Diffusion, dataloader, fp16: bool = False):
        self.model = model
        self.fp16 = fp16
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        self.scaler = torch.amp.GradScaler("cuda", enabled=fp16)
        self.dataloader = dataloader

    def __call__(self):
        for atom_pos in self.dataloader:
            with torch.autocast("cuda", enabled=self.fp16):
                loss = self.model(atom_pos)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad()
'''

CALLS_BY_NAME = '''
import torch

from af.model import Diffusion


def denoise_step(model: Diffusion, x):
    with torch.autocast("cuda"):
        return model.c_noise(model.net(x).sigmoid())
'''


EMBED = "log(sigmas / self.sigma_data, eps=1e-20)"


def project(tmp_path, base="nn.Module", imports="", embed=EMBED, extra="", files=None):
    model = MODEL.format(base=base, imports=imports, embed=embed, extra=extra)
    tree = {"pyproject.toml": PYPROJECT, "af/__init__.py": "", "af/model.py": model, "af/trainer.py": TRAINER,
            **(files or {})}
    return hazard_findings(write_project(tmp_path / "p", tree, marker=None))


def test_a_default_eps_call_in_a_method_nothing_calls_never_runs(tmp_path):
    assert project(tmp_path) == []


KEPT = {
    "the method is called on a float16 value": dict(extra="self.c_noise(self.net(noised).sigmoid())"),
    "called by name in another file": dict(files={"af/steps.py": CALLS_BY_NAME}),
    "looked up by a computed name": dict(extra='getattr(self, "c_" + "noise")(self.net(noised).sigmoid())'),
    "a framework's subclass": dict(base="LightningModule", imports="from lightning import LightningModule"),
    "the uncalled method's call is the only one": dict(embed="(sigmas / self.sigma_data)"),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_near_miss_the_default_eps_call_may_run(tmp_path, name):
    found = project(tmp_path, **KEPT[name])
    assert ("af/model.py", "AMP102") in found, (name, found)


def test_computed_self_attribute_lookups():
    assert _COMPUTED_SELF_ATTRIBUTE.search('getattr(self, "forward_" + mode)')
    assert _COMPUTED_SELF_ATTRIBUTE.search("getattr(self, f'c_{name}')(x)")
    assert _COMPUTED_SELF_ATTRIBUTE.search("getattr(self, name)")
    assert not _COMPUTED_SELF_ATTRIBUTE.search('getattr(self, "sigma_data", 1.0)')
    assert not _COMPUTED_SELF_ATTRIBUTE.search("getattr(self, 'scale')")
    assert _COMPUTED_SELF_ATTRIBUTE.search("getattr(self, hook_name, None)")
    assert not _COMPUTED_SELF_ATTRIBUTE.search("getattr(model, name)")
    assert not _COMPUTED_SELF_ATTRIBUTE.search("(not exists(flag) or getattr(self, flag, False))")
    assert not _COMPUTED_SELF_ATTRIBUTE.search("getattr(self, key, 0)")
