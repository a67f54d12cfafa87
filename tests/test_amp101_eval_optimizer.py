"""AMP101 on an optimizer built by ``eval`` of a string (M17-1, sentiment-discovery's finetune_classifier.py):
``eval('torch.optim.' + optims[args.optim.lower()])(model.parameters(), lr=args.lr)`` with ``optims = {'adam': 'Adam',
'sgd': 'SGD'}`` after ``if args.fp16: model.half()`` and no master-weights wrapper is a plain Adam, default eps 1e-8,
on float16 parameters. Near misses: the table names no optimizer taking an eps (SGD only), the option's default in the
file picks SGD, and an eval'd Adam whose model stays float32."""
import json
import textwrap

import pytest

from cliutil import run, write_project

FINETUNE = """
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
parser.add_argument("--lr", type=float, default=2e-5)
{optim_option}


def main():
    args = parser.parse_args()
    model = torch.nn.Linear(8, 2).cuda()
    {cast}
    optims = {table}
    optim = eval("torch.optim." + optims[args.optim.lower()])(model.parameters(), lr=args.lr)
    for _ in range(10):
        x = torch.randn(4, 8).cuda()
        loss = torch.nn.functional.cross_entropy(model(x).float(), torch.randint(0, 2, (4,)).cuda())
        optim.zero_grad()
        loss.backward()
        optim.step()


if __name__ == "__main__":
    main()
"""

TABLE = '{"adam": "Adam", "sgd": "SGD"}'
HALF = "if args.fp16:\n        model.half()"


@pytest.mark.parametrize("optim_option, cast, table, codes", [
    ("", HALF, TABLE, ["AMP101"]),  # the option defined in another file (as in the real project): Adam is one of them
    ('parser.add_argument("--optim", default="Adam")', HALF, TABLE, ["AMP101"]),
    # near misses
    ("", HALF, '{"sgd": "SGD"}', []),
    ('parser.add_argument("--optim", default="SGD")', HALF, TABLE, []),
    ("", "", TABLE, []),
])
def test_an_optimizer_built_by_eval(tmp_path, optim_option, cast, table, codes):
    src = FINETUNE.format(optim_option=optim_option, cast=cast, table=table)
    root = write_project(tmp_path / "p", {"finetune.py": textwrap.dedent(src)})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    found = json.loads(r.out)
    found = found if isinstance(found, list) else found["findings"]
    assert sorted(f["code"] for f in found if f["code"] != "AMP501") == codes, r.out
    if codes:
        assert "Adam default eps=1e-8" in next(f["message"] for f in found if f["code"] == "AMP101")
