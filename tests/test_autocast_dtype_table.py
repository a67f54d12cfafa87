"""An autocast whose dtype is looked up in a dict of dtypes by a setting of the program's YAML
(`torch.autocast(dtype=dtype_map[cfg.training.amp_precision])` with `dtype_map = {"float32": torch.float32,
"bfloat16": torch.bfloat16, "float16": torch.float16}` and the program's `exp/config.yaml` saying
`amp_precision: bfloat16`, triage T15-4): the YAML's value picks the dtype, as for `dtype=getattr(torch, cfg.dtype)`.
Near misses: a YAML that says float16, and a program whose YAML does not hold the setting (float16 stays)."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

MAIN = """
import torch
from omegaconf import OmegaConf

{table}


def main(cfg):
    model = torch.nn.Linear(16, 16).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.training.lr)
    for _ in range(10):
        x = torch.randn(4, 16, device="cuda")
        {amp_dtype}
        with torch.autocast(device_type="cuda", dtype={dtype}, enabled=cfg.training.enable_mixed_precision):
            loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main(OmegaConf.load("exp/config.yaml"))
"""
CONFIG = """
training:
  {key}: {value}
  enable_mixed_precision: {enabled}
  lr: 0.001
"""
LITERAL = 'dtype_map = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}'
CALL = "dtype_map = dict(float32=torch.float32, bfloat16=torch.bfloat16, float16=torch.float16)"


def _modes(tmp_path, table=LITERAL, local=False, key="amp_precision", value="bfloat16", enabled="true"):
    lookup = "dtype_map[cfg.training.amp_precision]"
    main = MAIN.format(table=table, amp_dtype=f"amp_dtype = {lookup}" if local else "",
                       dtype="amp_dtype" if local else lookup)
    root = write_project(tmp_path / "p", {
        "exp/main.py": textwrap.dedent(main),
        "exp/config.yaml": textwrap.dedent(CONFIG).format(key=key, value=value, enabled=enabled),
    })
    p = Project(root)
    return root, {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}


@pytest.mark.parametrize("table, local", [(LITERAL, False), (CALL, False), (LITERAL, True)])
def test_the_yaml_picks_the_autocast_dtype_from_the_table(tmp_path, table, local):
    root, modes = _modes(tmp_path, table, local)
    assert modes == {"main.py": "bf16"}, modes
    r = run(["check", "--no-cache", "--show-settings", "."], root)
    assert "dtype bfloat16: `amp_precision: bfloat16` in the program's YAML" in r.out, r.out


def test_a_yaml_that_says_float16_keeps_fp16_mixed(tmp_path):
    _, modes = _modes(tmp_path, value="float16")
    assert modes == {"main.py": "fp16-mixed"}, modes


def test_a_yaml_without_the_setting_keeps_fp16_mixed(tmp_path):
    # the program's YAML names another precision key: the run's dtype is not known, float16 is kept
    _, modes = _modes(tmp_path, key="weight_precision")
    assert modes == {"main.py": "fp16-mixed"}, modes


def test_a_yaml_that_switches_the_autocast_off_is_fp32(tmp_path):
    _, modes = _modes(tmp_path, value="float16", enabled="false")
    assert modes == {"main.py": "fp32"}, modes


# xlstm's real shape: an annotated table, and configs beside the program that it is given by `--config` (no path in
# its code): the configs' value, when they agree
MAIN_BY_CONFIG = """
from argparse import ArgumentParser

import torch
from omegaconf import OmegaConf

torch_dtype_map: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def main(cfg):
    model = torch.nn.Linear(16, 16).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x in []:
        with torch.autocast(device_type="cuda", dtype=torch_dtype_map[cfg.training.amp_precision],
                            enabled=cfg.training.enable_mixed_precision):
            loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    parser = ArgumentParser()
    parser.add_argument("--config", default="parity_small")
    args = parser.parse_args()
    with open(args.config) as fp:
        main(OmegaConf.create(fp.read()))
"""


@pytest.mark.parametrize("values, mode", [
    (["bfloat16", "bfloat16"], "bf16"),
    (["bfloat16", "float16"], "fp16-mixed"),  # near miss: the configs disagree
])
def test_the_programs_configs_pick_the_autocast_dtype_from_an_annotated_table(tmp_path, values, mode):
    files = {"experiments/main.py": textwrap.dedent(MAIN_BY_CONFIG)}
    for i, v in enumerate(values):
        files[f"experiments/parity_{i}.yaml"] = textwrap.dedent(CONFIG).format(key="amp_precision", value=v,
                                                                                 enabled="true")
    p = Project(write_project(tmp_path / "p", files))
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"main.py": mode}, modes
