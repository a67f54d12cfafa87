"""apex's opt level passed as a launcher script's flag value (convasr's `python train.py --fp16 O2`, read by
`apex.amp.initialize(..., opt_level=args.fp16)`, bug B32): O2 is a half model with float32 master weights,
not mixed precision (docs/precision.md, "Evidence in configuration files")."""
import textwrap

from cliutil import write_project

TRAIN = """
import argparse
import torch
from torch import nn
import apex
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", choices=["O0", "O1", "O2", "O3"], default=None)
    args = parser.parse_args()
    model = nn.Conv1d(64, 64, 3)
    optimizer = torch.optim.AdamW(model.parameters())
    if args.fp16:
        model, optimizer = apex.amp.initialize(model, optimizer, opt_level=args.fp16)
    for x in []:
        with apex.amp.scale_loss(model(x).mean(), optimizer) as scaled:
            scaled.backward()
        optimizer.step()
if __name__ == "__main__":
    main()
"""


def _mode(tmp_path, flags):
    from amplint.project import Project
    root = write_project(tmp_path / flags.replace(" ", "_").strip("-") or "none",
                         {"train.py": textwrap.dedent(TRAIN), "scripts/train_jasper.sh": f"python3 train.py {flags} --lr 1e-2\n"})
    return Project(root).regime_for(root / "train.py").mode


def test_apex_levels_given_to_the_fp16_flag(tmp_path):
    assert _mode(tmp_path, "--fp16 O2") == "fp16-master"
    assert _mode(tmp_path, "--fp16 O3") == "fp16"
    # near misses: O1 is autocast-like; a bare --fp16 stays fp16 mixed precision
    assert _mode(tmp_path, "--fp16 O1") == "fp16-mixed"
    assert _mode(tmp_path, "--fp16") == "fp16-mixed"
