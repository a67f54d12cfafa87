"""A Hydra program's command-line overrides in its launcher commands (``trainer_main.py ... use_AMP=True``) override
its config's default (``use_AMP: False``): ProphetNet's AR-diffusion trains with autocast + GradScaler in every
documented run, judged fp32 from config.yaml alone (triage M19-1). Each command is a run: one that overrides nothing
keeps the config's setting. Near misses: no override (fp32), an override turning it off, a config group choice."""
import textwrap

import pytest

from amplint.project import Project, Regime

from cliutil import write_project
from test_hydra_settings import TRAINER

CONFIG = "amp: False\nlr: 0.001\nepochs: 10\n"


def _regime(tmp_path, files):
    p = Project(write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAINER), "conf/config.yaml": CONFIG,
                                               **files}))
    [ep] = p.entry_points()
    return Regime(ep.signals).mode, ep


@pytest.mark.parametrize("files, mode", [
    ({"scripts/train.sh": "torchrun --nproc_per_node=8 ./train.py \\\n  lr=8e-4 epochs=3 amp=True\n"}, "fp16-mixed"),
    ({"scripts/train.sh": "python train.py +amp=true\n"}, "fp16-mixed"),
    # a README's documented command is a run too
    ({"README.md": "# Train\n\n```bash\npython train.py lr=1e-4 amp=true\n```\n"}, "fp16-mixed"),
    # one of the runs turns it on: one of them is float16
    ({"scripts/train.sh": "python train.py lr=1e-4\npython train.py lr=1e-4 amp=true\n"}, "fp16-mixed"),
    # near misses: the config's False stays where no command turns it on
    ({"scripts/train.sh": "python train.py lr=1e-4 epochs=3\n"}, "fp32"),
    ({"scripts/train.sh": "python train.py amp=False\n"}, "fp32"),
    ({"scripts/train.sh": "python train.py lr=1e-4  # amp=true for speed\n"}, "fp32"),
    ({"scripts/train.sh": "python other.py amp=true\npython train.py lr=1e-4\n", "other.py": "print(1)\n"}, "fp32"),
])
def test_command_line_overrides_set_the_runs_config(tmp_path, files, mode):
    got, ep = _regime(tmp_path, files)
    assert got == mode, ep.roles
