"""A configuration file that selects the class to train by its registered name and states the precision is the
evidence of the files of the classes it selects, not of another config's classes (threestudio: every magic123
config says `system_type: "magic123-system"` and `trainer.precision: 32`, the dreamfusion ones `16-mixed`;
systems/magic123.py's `F.binary_cross_entropy` got an AMP202 from dreamfusion's autocast; docs/precision.md,
"Evidence in configuration files"; triage T8-3)."""
import textwrap

from cliutil import write_project

LAUNCH = """
import sys
import pytorch_lightning as pl
from omegaconf import OmegaConf
import proj
def main(path):
    cfg = OmegaConf.load(path)
    system = proj.find(cfg.system_type)(cfg.system)
    pl.Trainer(**cfg.trainer).fit(system)
if __name__ == "__main__":
    main(sys.argv[1])
"""
PROJ = """
__modules__ = {}
def register(name):
    def decorator(cls):
        __modules__[name] = cls
        return cls
    return decorator
def find(name):
    return __modules__[name]
from . import systems, utils  # noqa: E402,F401
"""
SYSTEM = """
import pytorch_lightning as pl
import torch.nn.functional as F
import proj
@proj.register("{name}-system")
class System(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        out = self.renderer(batch["rays"])
        return F.binary_cross_entropy(out["opacity"].clamp(1e-5, 1 - 1e-5), batch["mask"])
"""
CONFIG = 'system_type: "{name}-system"\nsystem:\n  lr: 0.01\ntrainer:\n  max_steps: 100\n  precision: {precision}\n'


def _modes(tmp_path, magic123_precision="32"):
    from amplint.project import Project
    files = {"launch.py": LAUNCH, "proj/__init__.py": PROJ, "proj/utils.py": "def helper():\n    return 1\n",
             "proj/systems/__init__.py": "from . import dreamfusion, magic123  # noqa: F401\n",
             "configs/dreamfusion.yaml": CONFIG.format(name="dreamfusion", precision="16-mixed"),
             "configs/magic123.yaml": CONFIG.format(name="magic123", precision=magic123_precision)}
    for name in ("dreamfusion", "magic123"):
        files[f"proj/systems/{name}.py"] = SYSTEM.replace("{name}", name)
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    project = Project(root)
    return {f: project.regime_for(root / f).mode for f in
            ("proj/systems/magic123.py", "proj/systems/dreamfusion.py", "proj/utils.py")}


def test_a_class_only_fp32_configs_select_is_judged_in_fp32(tmp_path):
    assert _modes(tmp_path) == {"proj/systems/magic123.py": "fp32",
                                # near misses: the class the 16-mixed config selects, and code every run shares
                                "proj/systems/dreamfusion.py": "fp16-mixed", "proj/utils.py": "fp16-mixed"}


def test_near_miss_both_configs_select_mixed_precision(tmp_path):
    assert _modes(tmp_path, magic123_precision="16-mixed")["proj/systems/magic123.py"] == "fp16-mixed"
