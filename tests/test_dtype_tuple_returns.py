"""Arguments whose callers pass float32 through a tuple a helper returns (stable-dreamfusion's rays,
seen in the session-5 triage): ``rays_o, rays_d = get_rays(poses.float())`` then, under fp16
autocast, ``model.render(rays_o, rays_d)`` with ``model = Field().cuda()``. Autocast casts the inputs
of its ops, never the arguments of a method: ``rays_d`` is float32 in ``near_far``. What the dtype
model needs: the element of a same-file helper's tuple return that an unpacking takes, and calls
through an instance built as ``Cls(...).cuda()``.

Near misses: the element is a value of unknown dtype (the regime decides, as before); a starred
unpacking."""
import pytest

from training_util import lines

RAYS = """
import torch
from torch import nn


def get_rays(poses, w):
    return {ret}


def near_far(rays_o, rays_d, bound):
    return (-bound - rays_o) / (rays_d + 1e-15)


class Field(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def render(self, rays_o, rays_d):
        return self.lin(rays_o * near_far(rays_o, rays_d, 1.0))


def train(loader, w):
    model = Field().cuda().train()
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for poses in loader:
        {unpack} = get_rays(poses.cuda().float(), w)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model.render(rays_o, rays_d).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def source(ret="poses[..., :3], poses[..., 3:]", unpack="rays_o, rays_d"):
    return RAYS.replace("{ret}", ret).replace("{unpack}", unpack)


@pytest.mark.parametrize("name, ret", [
    ("slices of the float32 poses", "poses[..., :3], poses[..., 3:]"),
    ("an explicit float32 cast", "poses[..., :3], poses[..., 3:].float()"),
])
def test_float32_tuple_elements_reach_the_helper(name, ret):
    assert lines("AMP102", source(ret=ret)) == [], name


@pytest.mark.parametrize("name, ret, unpack", [
    ("an element of unknown dtype (the regime decides)", "poses[..., :3], w", "rays_o, rays_d"),
    ("a starred unpacking", "poses[..., :3], poses[..., 3:]", "rays_o, *rays_d"),
])
def test_near_misses(name, ret, unpack):
    out = lines("AMP102", source(ret=ret, unpack=unpack))
    assert out == [11], name
