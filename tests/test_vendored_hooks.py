"""A copy of a third-party training library inside a project (docs/precision.md, "Code no entry point
reaches"): its optimizer hook, which only that library's runner calls and which nothing in the project
builds, is no run of the project (ControlNet's annotator/uniformer/mmcv/, an inference annotator's copy of
mmcv: triage T6-4). The library itself (its hook at its own top package) keeps its behaviour."""
import json
import textwrap

from cliutil import run, write_project

HOOK = """
import torch
class OptimizerHook:
    def after_train_iter(self, runner):
        runner.outputs["loss"].backward()
        runner.optimizer.step()
class Fp16OptimizerHook(OptimizerHook):
    def __init__(self):
        self.loss_scaler = torch.cuda.amp.GradScaler()
    def after_train_iter(self, runner):
        self.loss_scaler.scale(runner.outputs["loss"]).backward()
        self.loss_scaler.step(runner.optimizer)
        self.loss_scaler.update()
"""
# an op of the copied library; only an inference annotator runs it
SAMPLING = """
import torch
class FarthestSampling(torch.autograd.Function):
    @staticmethod
    def forward(ctx, dist, n):
        temp = dist.new_zeros(dist.shape[:2]).fill_(1e10)
        return temp
"""
ANNOTATOR = """
import torch
from annotator.seg.mmcv.ops.sampling import FarthestSampling
class Detector:
    @torch.no_grad()
    def __call__(self, points):
        return FarthestSampling.apply(points, 16)
"""
TRAIN_FP32 = """
import torch
from torch import nn
model = nn.Linear(8, 8)
opt = torch.optim.AdamW(model.parameters())
for x in [torch.randn(2, 8)]:
    model(x).sum().backward()
    opt.step()
"""


def _files(lib="annotator/seg/mmcv", **extra):
    files = {"train.py": TRAIN_FP32, "annotator/seg/__init__.py": "", f"{lib}/__init__.py": "",
             f"{lib}/runner/__init__.py": "from .hooks import OptimizerHook, Fp16OptimizerHook\n",
             f"{lib}/runner/hooks.py": HOOK, f"{lib}/ops/__init__.py": "", f"{lib}/ops/sampling.py": SAMPLING,
             "annotator/detector.py": ANNOTATOR.replace("annotator.seg.mmcv", lib.replace("/", "."))}
    files.update(extra)
    return {k: textwrap.dedent(v) for k, v in files.items()}


def _findings(root):
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [(f["filename"].replace("\\", "/").rsplit("/", 1)[-1], f["code"])
            for f in json.loads(r.out) if f["code"] != "AMP501"]


def test_a_vendored_librarys_hook_nothing_builds_gives_no_precision(tmp_path):
    from amplint.project import Project
    root = write_project(tmp_path / "p", _files())
    assert _findings(root) == []  # the op's 1e10 fill is judged under the project's fp32 training
    p = Project(root)
    assert p.regime_for(root / "annotator/seg/mmcv/ops/sampling.py").mode == "fp32"
    assert p.regime_for(root / "annotator/seg/mmcv/runner/hooks.py").mode == "fp32"
    out = run(["check", "--no-cache", "--show-settings", "."], root).out
    assert "a copy of a third-party library's hook that nothing in the project builds" in out
    # under a directory named for vendoring, whatever the library's name
    root = write_project(tmp_path / "v", _files(lib="annotator/seg/third_party/runlib"))
    assert _findings(root) == []


def test_a_vendored_hook_the_projects_own_code_builds_is_its_run(tmp_path):
    # near miss: a training script of the project builds the copied hook: that run trains in fp16 autocast
    build = ("from annotator.seg.mmcv.runner.hooks import Fp16OptimizerHook\n\n"
             "if __name__ == '__main__':\n    hook = Fp16OptimizerHook()\n")
    root = write_project(tmp_path / "p", _files(**{"tools/train_seg.py": build}))
    assert ("sampling.py", "AMP103") in _findings(root)


def test_the_library_itself_keeps_its_hooks_precision(tmp_path):
    # near misses: mmcv (or timm, mmengine, ignite) as the project: its hook is its users' API, at its top package
    from amplint.project import Project
    for lib in ("mmcv", "src/mmcv"):
        files = _files(lib=lib)
        del files["train.py"], files["annotator/detector.py"], files["annotator/seg/__init__.py"]
        root = write_project(tmp_path / lib.replace("/", "_"), files)
        p = Project(root)
        assert [p.vendored_hook(ep) for ep in p.entry_points()] == [False]
        out = run(["check", "--no-cache", "--show-settings", "."], root).out
        assert "hooks.py:4 (after_train_iter): fp16-mixed (fp16 mixed precision (autocast))" in out
