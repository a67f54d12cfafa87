"""apex ``amp.initialize`` with its ``opt_level`` picked by a conditional expression (maskrcnn-benchmark's
tools/train_net.py: ``amp_opt_level = 'O1' if use_mixed_precision else 'O0'`` then ``amp.initialize(model, optimizer,
opt_level=amp_opt_level)``): float16 is one of the runs (O1), the other (O0) is float32, as for any keyword set by a
conditional expression. Near miss: a literal ``opt_level="O1"`` is the run's precision, not one of several."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN = """
import torch
from apex import amp


def main(use_mixed_precision):
    model = torch.nn.Linear(8, 8).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {level}
    model, optimizer = amp.initialize(model, optimizer, opt_level={value})
    for _ in range(10):
        loss = model(torch.randn(4, 8).cuda()).sum()
        with amp.scale_loss(loss, optimizer) as scaled:
            scaled.backward()
        optimizer.step()


if __name__ == "__main__":
    main(True)
"""


@pytest.mark.parametrize("level, value, one_of", [
    ("amp_opt_level = 'O1' if use_mixed_precision else 'O0'", "amp_opt_level", True),
    ("", "'O1' if use_mixed_precision else 'O0'", True),
    # near miss: the level written as a literal
    ("", '"O1"', False),
])
def test_a_conditional_apex_level_is_one_of_its_branches(tmp_path, level, value, one_of):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN.format(level=level, value=value))})
    (ep,) = Project(root).entry_points()
    (sig,) = [s for s, ev in ep.signals if "amp.initialize" in ev.what]
    assert sig.dtype == "float16"
    assert sig.conditional is one_of
    if one_of:
        assert "`opt_level` is one of 'O1', 'O0' (if use_mixed_precision)" in sig.condition
