"""When the library policy looks at code no training entry point reaches (docs/precision.md): in a
library, whose users pick the precision, it does; in a project whose own training runs say their
precision (programs with precision evidence: Amphion's recipes, physicsnemo's examples, LlamaGen's
train scripts), code none of them reaches is run by none of its trainings and is not judged in
float16 (set 10: Amphion's unbuilt ForwardAttentionV2 and MaskGCT's Gumbel ``log``, physicsnemo's EFI
metric, LlamaGen's unused VectorQuantizer). Near misses: a package whose only trainings are its own
loops (speechbrain's ``Brain.fit``, ParlAI's agents, here beside a program with no precision evidence),
a library with no entry point, a program whose only evidence is a launcher's, ``assume-precision``."""
import json
import textwrap

from amplint.project import Project

from cliutil import run, write_project

# a fill beyond ±65504 on a matmul output: raises under any float16 use (AMP103)
UNUSED = """
import torch
from torch import nn


class Attention(nn.Module):
    def forward(self, q, k, mask):
        scores = torch.matmul(q, k.transpose(-1, -2))
        return scores.masked_fill(mask, -1e9).softmax(-1)
"""

# the Gumbel log of MaskGCT / a library helper: the guard is 0 in float16 (AMP102)
LOG = """
import torch


def log(t, eps=1e-10):
    return torch.log(t + eps)
"""

STEP = """
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""

# two trainings that disagree (fp16 autocast, bf16 autocast): code neither reaches is not theirs
FP16_PROGRAM = ("import torch\nfrom net import Net\n\n\ndef main(loader):\n    model = Net()\n"
                "    opt = torch.optim.AdamW(model.parameters())\n    with torch.autocast('cuda', dtype=torch.float16):\n"
                + textwrap.indent(STEP, "    ") + "\n\nif __name__ == '__main__':\n    main([])\n")
BF16_PROGRAM = FP16_PROGRAM.replace("torch.float16", "torch.bfloat16")
NET = "from torch import nn\n\n\nclass Net(nn.Linear):\n    pass\n"


def _codes(root, *argv):
    r = run(["check", "--no-cache", "--output-format", "json", *argv, "."], root)
    return sorted((f["filename"].replace("\\", "/").split("/")[-1], f["code"], "any float16 use" in f["message"])
                  for f in json.loads(r.out) if f["code"] not in ("AMP501", "AMP301"))  # (AMP301: no GradScaler: not asked here)


def _research_repo(tmp_path, extra=None):
    files = {"net.py": NET, "train_a.py": FP16_PROGRAM, "train_b.py": BF16_PROGRAM,
             "models/__init__.py": "", "models/unused.py": UNUSED, "models/gumbel.py": LOG}
    files.update(extra or {})
    return write_project(tmp_path, {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_research_repos_unreached_model_is_not_judged_in_float16(tmp_path):
    root = _research_repo(tmp_path / "repo")
    assert _codes(root) == []
    p = Project(root)
    assert len(p.own_runs_saying_precision()) == 2 and not p.users_pick_precision()
    r = p.regime_for(root / "models/unused.py")
    assert not r.library and r.mode == "fp32" and "own training runs say their precision" in r.scope
    out = run(["check", "--no-cache", "models/unused.py"], root).out + run(["check", "--no-cache", "--show-settings", "."], root).out
    last = run(["check", "--no-cache", "--output-format", "concise", "."], root).out.splitlines()[-1]
    assert last.startswith("Assumed precision: ") and not last.startswith("Assumed precision: not run"), last
    assert "no training run of the project reaches 3 files (not judged in float16)" in last, last
    assert "not judged in float16" in out and "not run: 3" in out and "3 of them: not run by the project's trainings" in out, out


def test_a_configured_assumption_still_judges_it(tmp_path):
    root = _research_repo(tmp_path / "repo")
    (root / "pyproject.toml").write_text('[tool.amplint]\nassume-precision = "fp16-mixed"\n')
    assert ("unused.py", "AMP103") in [f[:2] for f in _codes(root)]


def test_near_miss_a_library_with_no_entry_point_keeps_the_look(tmp_path):
    root = write_project(tmp_path / "lib", {"pkg/__init__.py": "", "pkg/attention.py": textwrap.dedent(UNUSED),
                                             "pkg/ops.py": textwrap.dedent(LOG)})
    assert _codes(root) == [("attention.py", "AMP103", True), ("ops.py", "AMP102", True)]
    assert Project(root).users_pick_precision()


def test_near_miss_a_package_trained_only_by_its_own_loops_keeps_the_look(tmp_path):
    # speechbrain / ParlAI: the package's trainer classes hold the precision evidence (fp16 in one, bf16 in
    # another); its users' programs run them. A program of the project with no precision evidence (ParlAI's
    # MTurk task) says nothing of the rest.
    loop = ("import torch\n\n\nclass Trainer:\n    def fit(self, model, opt, loader):\n"
            "        with torch.autocast('cuda', dtype=torch.float16):\n" + textwrap.indent(STEP, "        ") + "\n")
    files = {"pkg/__init__.py": "", "pkg/trainer.py": loop,
             "pkg/trainer_bf16.py": loop.replace("float16", "bfloat16").replace("class Trainer", "class BTrainer"),
             "pkg/attention.py": UNUSED, "pkg/ops.py": LOG,
             "projects/task/run.py": "import torch\nfrom torch import nn\n\n\ndef main(loader):\n    model = nn.Linear(2, 2)\n"
                                     "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + STEP
                                     + "\n\nif __name__ == '__main__':\n    main([])\n"}
    root = write_project(tmp_path / "pkg", {k: textwrap.dedent(v) for k, v in files.items()})
    p = Project(root)
    assert len(p.entry_points()) == 3 and p.users_pick_precision()
    assert ("attention.py", "AMP103", True) in _codes(root) and ("ops.py", "AMP102", True) in _codes(root)


def test_near_miss_a_launchers_precision_is_the_users(tmp_path):
    # gateloop-transformer's train.py: Accelerator() with no mixed_precision; `accelerate launch` picks
    launched = ("import torch\nfrom accelerate import Accelerator\nfrom net import Net\n\n\ndef main(loader):\n"
                "    accelerator = Accelerator()\n    model = Net()\n    opt = torch.optim.AdamW(model.parameters())\n"
                "    model, opt = accelerator.prepare(model, opt)\n" + STEP.replace("loss.backward()", "accelerator.backward(loss)")
                + "\n\nif __name__ == '__main__':\n    main([])\n")
    root = _research_repo(tmp_path / "repo", {"train_a.py": launched})
    p = Project(root)
    assert [n for n in p.own_runs_saying_precision() if "train_a" in n] == []
