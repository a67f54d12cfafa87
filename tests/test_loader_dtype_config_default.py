"""A model loader's `dtype=` read through a config object's attribute whose class gives it a half default
(fairseq2's examples: `load_model(name, dtype=config.amp_dtype if config.amp else torch.float32)` with the
dataclass field `amp_dtype: torch.dtype = torch.float16`, in another file or the same one): the model trains
with float16 parameters under autocast, and AdamW's `eps=1e-8` on them is AMP101 (docs/precision.md,
"Evidence in configuration files"; held-out bug B40, fixed upstream by always loading float32)."""
import textwrap

from cliutil import run, write_project

CONFIG = """
from dataclasses import dataclass
import torch
@dataclass
class TrainConfig:
    lr: float = 3e-5
    amp: bool = True
    amp_dtype: torch.dtype = {default}
"""
MODELS = """
import torch
def load_model(name, device="cuda", dtype=torch.float32):
    return torch.nn.Linear(8, 8).to(device=device, dtype=dtype)
"""
TRAIN = """
import torch
{config_import}
from models import load_model
def main({signature}):
    {make_config}
    model = load_model("tiny", dtype={dtype})
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, eps=1e-8)
    scaler = torch.amp.GradScaler("cuda", enabled=config.amp)
    for _ in range(10):
        with torch.autocast("cuda", dtype=config.amp_dtype, enabled=config.amp):
            loss = model(torch.randn(4, 8)).square().mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
if __name__ == "__main__":
    main()
"""
CONDITIONAL = "config.amp_dtype if config.amp else torch.float32"


def _amp101(tmp_path, default="torch.float16", dtype=CONDITIONAL, same_file=False, annotated=False,
            config_import="from config import TrainConfig"):
    train = TRAIN.replace("{dtype}", dtype)
    train = train.replace("{signature}", "config: TrainConfig = None" if annotated else "")
    train = train.replace("{make_config}", "pass" if annotated else "config = TrainConfig()")
    files = {"models.py": MODELS}
    if same_file:
        train = train.replace("{config_import}", CONFIG.replace("{default}", default))
    else:
        train = train.replace("{config_import}", config_import)
        files["config.py"] = CONFIG.replace("{default}", default)
    files["train.py"] = train
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    result = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP101", "train.py"], root)
    return [line for line in result.out.splitlines() if "AMP101" in line]


def test_a_loaders_dtype_from_a_config_class_in_another_file_is_a_half_model(tmp_path):
    found = _amp101(tmp_path)
    assert len(found) == 1 and "train.py:8:" in found[0], found


def test_an_annotated_config_parameter_and_a_class_in_the_same_file(tmp_path):
    assert len(_amp101(tmp_path / "a", annotated=True)) == 1
    assert len(_amp101(tmp_path / "b", same_file=True)) == 1


def test_near_miss_the_upstream_fix_loads_float32(tmp_path):
    assert _amp101(tmp_path, dtype="torch.float32") == []


def test_near_miss_a_bfloat16_default(tmp_path):
    # eps=1e-8 is a normal number in bfloat16 (float32's exponent range)
    assert _amp101(tmp_path, default="torch.bfloat16") == []


def test_near_miss_a_config_class_outside_the_project(tmp_path):
    # nothing says what an installed library's config holds: autocast with float32 parameters, as before
    assert _amp101(tmp_path, config_import="from omegaconf import DictConfig as TrainConfig") == []
