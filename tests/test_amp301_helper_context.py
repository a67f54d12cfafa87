"""AMP301 through an autocast context a project helper returns (physicsnemo AeroJEPA, real-bug set 16, B16-2:
``with get_autocast_context(device, precision):`` in ``train.py``, the helper in ``src/runtime.py`` returning
``torch.autocast("cuda", dtype=torch.float16)`` for ``"fp16"``; fixed upstream by pairing it with a GradScaler),
and steps that only time or profile."""
import json
import textwrap

from cliutil import run, write_project

RUNTIME = """
import contextlib

import torch


def get_autocast_context(device, precision):
    if device.type != "cuda":
        return contextlib.nullcontext()
    if precision == "bf16":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    if precision == "fp16":
        return torch.autocast(device_type="cuda", dtype=torch.float16)
    return contextlib.nullcontext()
"""

TRAIN = """
import argparse

import torch

from src.runtime import get_autocast_context


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    args = parser.parse_args()
    device = torch.device("cuda")
    model = torch.nn.Linear(8, 1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(10):
        x, y = torch.randn(4, 8, device=device), torch.randn(4, 1, device=device)
        optimizer.zero_grad()
        with get_autocast_context(device, args.precision):
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def _amp301(tmp_path, files):
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--select", "AMP301", "--output-format", "json", "."], root)
    return [(f["filename"].replace("\\", "/").split("/p/", 1)[-1], f["location"]["row"]) for f in json.loads(r.out)]


def test_a_helper_in_a_sibling_package_returning_a_float16_autocast_among_others(tmp_path):
    found = _amp301(tmp_path, {"aero/train.py": TRAIN, "aero/src/runtime.py": RUNTIME, "aero/src/__init__.py": ""})
    assert found == [("aero/train.py", 21)]


def test_near_miss_a_helper_returning_only_bfloat16(tmp_path):
    runtime = RUNTIME.replace("dtype=torch.float16", "dtype=torch.bfloat16")
    assert _amp301(tmp_path, {"aero/train.py": TRAIN, "aero/src/runtime.py": runtime, "aero/src/__init__.py": ""}) == []


def test_near_miss_the_helper_context_with_a_grad_scaler_in_the_loop(tmp_path):
    train = TRAIN.replace("    optimizer = torch", "    scaler = torch.amp.GradScaler('cuda')\n    optimizer = torch") \
        .replace("        loss.backward()\n        optimizer.step()\n",
                 "        scaler.scale(loss).backward()\n        scaler.step(optimizer)\n        scaler.update()\n")
    assert _amp301(tmp_path, {"aero/train.py": train, "aero/src/runtime.py": RUNTIME, "aero/src/__init__.py": ""}) == []


def test_a_profiling_script_is_no_training_run(tmp_path):
    files = {"profiling/train.py": TRAIN, "profiling/src/runtime.py": RUNTIME, "profiling/src/__init__.py": ""}
    assert _amp301(tmp_path, files) == []


def test_a_function_that_measures_speed_is_no_training_run(tmp_path):
    train = TRAIN.replace("def main():", "def measure_perf():").replace("    main()", "    measure_perf()")
    assert _amp301(tmp_path, {"aero/train.py": train, "aero/src/runtime.py": RUNTIME, "aero/src/__init__.py": ""}) == []
