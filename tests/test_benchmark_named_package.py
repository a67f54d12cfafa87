"""A project whose own package is named for the benchmark it ships (maskrcnn-benchmark's `maskrcnn_benchmark/`,
triage T16-1): its files are the project's code, so `tools/train_net.py` running the package's `do_train` (apex
`amp.scale_loss`) is a training entry point. Near misses: a `benchmarks/` directory and a `speed_benchmark/` below the
top stay benchmark code (their backward is a measurement, not training)."""
import textwrap

import pytest

from cliutil import entry_point_reach, write_project

TRAINER = """
from apex import amp


def do_train(model, data_loader, optimizer):
    model.train()
    for images, targets in data_loader:
        losses = model(images, targets).sum()
        optimizer.zero_grad()
        with amp.scale_loss(losses, optimizer) as scaled_losses:
            scaled_losses.backward()
        optimizer.step()
"""
TRAIN_NET = """
import torch
from apex import amp
from {package}.trainer import do_train


def main():
    model = torch.nn.Linear(8, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    do_train(model, [], optimizer)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("package, trains", [
    ("maskrcnn_benchmark", True),  # the project's package
    ("detection", True),
    ("benchmarks", False),  # a benchmark directory at the top
    ("tools.speed_benchmark", False),  # a benchmark directory below it
])
def test_a_package_named_for_its_benchmark_holds_training_code(tmp_path, package, trains):
    folder = package.replace(".", "/")
    root = write_project(tmp_path / "p", {
        f"{folder}/__init__.py": "",
        f"{folder}/trainer.py": textwrap.dedent(TRAINER),
        "tools/train_net.py": textwrap.dedent(TRAIN_NET).format(package=package),
    })
    reach = entry_point_reach(root)
    assert ("tools/train_net.py" in reach) is trains, reach
