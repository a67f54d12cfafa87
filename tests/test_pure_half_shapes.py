"""Pure-half training written in shapes the precision facts used to miss (unseen set 11, cifar10-airbench): a
training file whose name holds "bench" inside a word (``airbench94.py``: a CIFAR-10 speedrun, not a benchmark
script); a half cast of the modules a loop walks (``for mod in self.modules(): ... mod.half()``, BatchNorm kept
float); a model a helper casts and returns (``def make_net(): net = net.half(); return net``). Each trains float16
parameters with Adam's default eps: AMP101. And an LR range test stopping at the diverging loss is not AMP304."""
import json
import textwrap

import pytest

from cliutil import run, write_project

LOOP = """
import torch
from torch import nn


{net}


def main(loader, epochs=10):
    model = {build}
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for inputs, labels in loader:
            loss = nn.functional.cross_entropy(model(inputs), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main(loader=[])
"""

MODULES_LOOP = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = nn.BatchNorm2d(8)
        for mod in self.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.float()
            else:
                mod.half()
"""

HELPER = """
def make_net():
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.LazyLinear(10))
    net = net.half().cuda()
    return net


def load_vae():
    vae = nn.Conv2d(3, 3, 1)
    vae = vae.half()
    return vae
"""


def _codes(tmp_path, name, net, build):
    root = write_project(tmp_path / "p", {name: textwrap.dedent(LOOP.format(net=net, build=build))})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [(f["code"], f["location"]["row"]) for f in json.loads(r.out)]


@pytest.mark.parametrize("name", ["airbench94.py", "airbench/train.py", "train.py"])
def test_a_word_holding_bench_is_no_benchmark(tmp_path, name):
    found = _codes(tmp_path, name, "", "nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.LazyLinear(10)).half()")
    assert [c for c, _ in found] == ["AMP101"]


@pytest.mark.parametrize("name", ["benchmark.py", "benchmarks/train.py", "bench_step.py", "run_benchmark.py"])
def test_near_miss_a_benchmark_script_is_no_training_evidence(tmp_path, name):
    found = _codes(tmp_path, name, "", "nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.LazyLinear(10)).half()")
    assert found == []


def test_a_half_cast_of_the_modules_a_loop_walks_makes_half_parameters(tmp_path):
    assert [c for c, _ in _codes(tmp_path, "train.py", MODULES_LOOP, "Net().cuda()")] == ["AMP101"]


def test_near_miss_a_loop_casting_its_modules_back_to_float_is_no_half_cast(tmp_path):
    net = MODULES_LOOP.replace("mod.half()", "mod.float()")
    assert _codes(tmp_path, "train.py", net, "Net().cuda()") == []


def test_a_model_a_helper_casts_and_returns_is_the_one_its_caller_binds(tmp_path):
    assert [c for c, _ in _codes(tmp_path, "train.py", HELPER, "make_net()")] == ["AMP101"]


def test_near_miss_a_frozen_half_model_from_another_helper_is_not_the_optimizers(tmp_path):
    # `vae = load_vae()` is cast to half and returned; the optimizer trains a float32 model
    build = "nn.Linear(4, 4)\n    vae = load_vae()"
    assert _codes(tmp_path, "train.py", HELPER.replace("make_net", "unused_net"), build) == []


LR_RANGE = """
import torch


def {name}(model, train_loader, optimizer, num_it=100):
    scaler = torch.amp.GradScaler("cuda")
    losses = []
    for batch_idx, (images, targets) in enumerate(train_loader):
        optimizer.zero_grad()
        with torch.amp.autocast("cuda"):
            train_loss = model(images, targets)
        scaler.scale(train_loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if not torch.isfinite(train_loss):
            if batch_idx == 0:
                raise ValueError("loss value is NaN or inf.")
            break
        losses.append(train_loss.item())
    return losses
"""


@pytest.mark.parametrize("name, codes", [("record_lr", []), ("lr_find", []), ("train_one_epoch", ["AMP304"])])
def test_an_lr_range_test_stops_at_divergence_by_design(tmp_path, name, codes):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(LR_RANGE.format(name=name))})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    assert [f["code"] for f in json.loads(r.out)] == codes
