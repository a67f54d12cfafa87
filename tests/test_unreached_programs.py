"""Code no training entry point reaches, in a project that trains (docs/precision.md, "Code no entry point
reaches"): what only programs that do not train import, an inference program among them (dinov2's
hub/, built by hubconf.py), is library code, judged by the library policy; what nothing imports (a model a registry
loads at run time) or what a training program imports keeps the project's precision. Also: a half
cast taken only on old torch versions is one of the options (LAVIS's vendored mmcv)."""
import json
import textwrap

from cliutil import run, write_project

TRAIN = """
import torch
from pkg.model import Net
def main(loader):
    model = Net()
    opt = torch.optim.AdamW(model.parameters())
    scaler = torch.cuda.amp.GradScaler()
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""

MODEL = """
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
    def forward(self, x):
        return self.fc(x)
"""

# an inference model of the hub: an unclamped learnable logit scale (AMP401 under fp16 training) and a
# public helper whose guard rounds to 0 in float16 (a hazard under any float16 use)
HUB_MODEL = """
import math
import torch
from torch import nn
def log(t, eps=1e-20):
    return t.clamp(min=eps).log()
class TextModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
    def forward(self, image, text):
        a = self.proj(image)
        b = self.proj(text)
        return self.logit_scale.exp() * a @ b.t()
"""

HUBCONF = "from pkg.hub.text import TextModel\n\ndef text_model():\n    return TextModel()\n"


def _findings(root):
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [(f["filename"].replace("\\", "/").split("/p/", 1)[-1], f["code"], f["message"])
            for f in json.loads(r.out) if f["code"].startswith("AMP") and f["code"] != "AMP501"]


def _project(tmp_path, **extra):
    files = {"train.py": TRAIN, "pkg/__init__.py": "", "pkg/model.py": MODEL, "pkg/hub/__init__.py": "",
             "pkg/hub/text.py": HUB_MODEL}
    files.update(extra)
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_what_only_programs_that_do_not_train_import_is_library_code(tmp_path):
    # dinov2: hubconf.py builds hub/text's inference model; the training (fp16 with a GradScaler) never
    # imports it: no AMP401 on its logit scale; and since that training, the project's own run, says its
    # precision, the guard that rounds to 0 is not judged in float16 either (docs/precision.md)
    found = _findings(_project(tmp_path, **{"hubconf.py": HUBCONF}))
    assert [c for path, c, _ in found if path == "pkg/hub/text.py"] == []
    r = run(["check", "--no-cache", "--show-settings", "."], tmp_path / "p")
    assert "2 of them: programs that do not train, or files only such programs import (not run): " \
        "hubconf.py" in r.out


def test_what_nothing_or_a_training_program_imports_keeps_the_projects_precision(tmp_path):
    # near miss (fairseq's models, loaded by a registry at run time): nothing imports the module
    found = _findings(_project(tmp_path / "registry"))
    assert ("pkg/hub/text.py", "AMP401") in [(p, c) for p, c, _ in found]
    # near miss (LAVIS's train.py hands the model to a runner the scan does not recognise): a program
    # named for training imports it
    driver = "from pkg.hub.text import TextModel\n\nif __name__ == '__main__':\n    TextModel()\n"
    found = _findings(_project(tmp_path / "driver", **{"train_text.py": driver}))
    assert ("pkg/hub/text.py", "AMP401") in [(p, c) for p, c, _ in found]
    # near miss (transformers: convert_clip_original_pytorch_to_hf.py is the only static importer of
    # modeling_clip, which users train through the Trainer): a conversion script says nothing of how the
    # model runs
    convert = "from pkg.hub.text import TextModel\n\nif __name__ == '__main__':\n    TextModel().state_dict()\n"
    found = _findings(_project(tmp_path / "convert", **{"pkg/hub/convert_text_to_hf.py": convert}))
    assert ("pkg/hub/text.py", "AMP401") in [(p, c) for p, c, _ in found]


def test_a_half_cast_for_old_torch_versions_is_one_of_the_options(tmp_path):
    # LAVIS's vendored mmcv: wrap_fp16_model casts the model to half only below torch 1.6; above it the
    # hook's GradScaler and autocast train in mixed precision (no AMP101 on the runner's AdamW)
    hook = TRAIN.replace("    model = Net()\n",
                         "    model = Net()\n"
                         "    if digit_version(TORCH_VERSION) < digit_version('1.6.0'):\n"
                         "        model.half()\n")
    found = _findings(_project(tmp_path / "old", **{"train.py": hook}))
    assert "AMP101" not in [c for _, c, _ in found]
    # near miss: the same half cast on every torch version is a pure-half model (AMP101 on AdamW's eps)
    pure = TRAIN.replace("    model = Net()\n", "    model = Net()\n    model.half()\n")
    found = _findings(_project(tmp_path / "pure", **{"train.py": pure}))
    assert "AMP101" in [c for _, c, _ in found]


_HOOKS = {
    "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
    "pkg/__init__.py": "",
    "pkg/vendor/__init__.py": "",
    "pkg/vendor/bricks.py": "import torch\ndef attention(q, k):\n    return (q @ k.transpose(-2, -1)).softmax(-1)\n",
    "pkg/vendor/hooks.py": """
        import torch
        from pkg.vendor import bricks
        class OptimizerHook:
            def after_train_iter(self, runner):
                runner.outputs["loss"].backward()
                runner.optimizer.step()
        class Fp16OptimizerHook(OptimizerHook):
            def before_run(self, runner):
                self.scaler = torch.cuda.amp.GradScaler()
            def after_train_iter(self, runner):
                self.scaler.scale(runner.outputs["loss"]).backward()
                self.scaler.step(runner.optimizer)
    """,
}


def test_a_vendored_hook_no_file_of_the_project_builds_is_the_vendored_librarys_loop(tmp_path):
    # LAVIS's vendored mmcv (an annotator's inference dependency): its optimizer hooks train only when an mmcv
    # runner built from a config runs them, which nothing in LAVIS does; the files they reach are library code
    from amplint.project import Project
    root = write_project(tmp_path / "vendored", {k: textwrap.dedent(v) for k, v in _HOOKS.items()}, marker=None)
    p = Project(root)
    assert p.regime_for(root / "pkg/vendor/bricks.py").scope.startswith("library code")
    # near miss: a training script of the project builds the hook: its run, its precision
    files = dict(_HOOKS)
    files["tools/train.py"] = ("from pkg.vendor.hooks import Fp16OptimizerHook\n\nif __name__ == '__main__':\n"
                               "    hook = Fp16OptimizerHook()\n")
    root = write_project(tmp_path / "built", {k: textwrap.dedent(v) for k, v in files.items()}, marker=None)
    p = Project(root)
    assert p.regime_for(root / "pkg/vendor/bricks.py").mode == "fp16-mixed"


# ---- a monorepo of models: a file no entry point imports belongs to the model whose directory it is in ----

_APEX_O2 = """
import torch
from apex import amp
def main(model, loader):
    optimizer = torch.optim.AdamW(model.parameters(), eps=1e-6)
    model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
    for batch in loader:
        loss = model(batch)
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
"""
_AUTOCAST = """
import torch
def main(generator, loader, args):
    optim_g = torch.optim.AdamW(generator.parameters())
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
    for mel, audio in loader:
        with torch.cuda.amp.autocast(enabled=args.amp):
            loss = (generator(mel) - audio).abs().mean()
        scaler.scale(loss).backward()
        scaler.step(optim_g)
        scaler.update()
"""


def test_a_file_no_entry_point_imports_takes_the_precision_of_its_own_models_entry_points(tmp_path):
    # DeepLearningExamples/PyTorch (triage T5-8): HiFiGAN's unimported FastPitch copy was judged by BERT's apex O2
    from amplint.project import Project
    files = {"bert/run_glue.py": _APEX_O2, "tts/hifigan/train.py": _AUTOCAST,
             "tts/hifigan/fastpitch/attn_loss.py": "import torch\nEPS = 1e-12\n",
             "common/helpers.py": "import torch\nEPS = 1e-12\n", "bert/extras/util.py": "X = 1\n"}
    p = Project(write_project(tmp_path / "p", files))
    assert p.regime_for(tmp_path / "p/tts/hifigan/fastpitch/attn_loss.py").mode == "fp16-mixed"
    assert "tts/hifigan/" in p.regime_for(tmp_path / "p/tts/hifigan/fastpitch/attn_loss.py").scope
    assert p.regime_for(tmp_path / "p/bert/extras/util.py").mode == "fp16-master"
    # near miss: a directory beside both models is no model's: the project's precision (both train in float16
    # forms, so they agree on the most severe)
    from amplint.project import UNREACHED
    assert p.regime_for(tmp_path / "p/common/helpers.py").scope == UNREACHED
    assert p.regime_for(tmp_path / "p/common/helpers.py").mode == "fp16-master"


def test_a_directory_other_entry_points_import_from_is_shared_code_not_one_models(tmp_path):
    # fairseq: fairseq/examples/ holds trainers of their own, but fairseq_cli/train.py imports fairseq's modules:
    # an unimported module under fairseq/ is judged by the project's precision, not by the examples' alone
    from amplint.project import Project
    files = {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n", "pkg/modules/unused.py": "import torch\nEPS = 1e-12\n",
             "pkg/examples/tts/train.py": _AUTOCAST,
             "cli/train.py": "from pkg.core import X\n" + _APEX_O2}
    p = Project(write_project(tmp_path / "p", files))
    assert "entry points under" not in p.regime_for(tmp_path / "p/pkg/modules/unused.py").scope
    assert p.regime_for(tmp_path / "p/pkg/modules/unused.py").mode == "fp16-master"


def test_a_pretrained_model_loaded_in_float16_is_not_the_unreached_files_model(tmp_path):
    # seamless_communication: finetune.py loads UnitY with dtype=torch.float16; pretssel/ecapa.py, which no entry
    # point imports, is not that model: its normalize is judged as under mixed precision (AMP102 gone)
    from amplint.project import Project
    launcher = """
import torch
from fairseq2.models import load_unity_model
from pkg.trainer import Finetune
def main(name, loader):
    model = load_unity_model(name, dtype=torch.float16)
    Finetune(model, loader).run()
"""
    trainer = """
import torch
class Finetune:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-6, eps=1e-4)
    def run(self):
        for batch in self.loader:
            self.model(batch).backward()
            self.optimizer.step()
"""
    ecapa = "import torch.nn.functional as F\ndef embed(x):\n    return F.normalize(x, dim=-1)\n"
    files = {"pkg/__init__.py": "", "pkg/trainer.py": trainer, "pkg/finetune.py": launcher, "pkg/pretssel/ecapa.py": ecapa}
    p = Project(write_project(tmp_path / "p", files))
    r = p.regime_for(tmp_path / "p/pkg/pretssel/ecapa.py")
    assert r.half_params is None and r.fp16 is not None
    # nor does the project's own model made half with .half(): it is the model the launcher builds and trains
    # (code its imports reach), not the unreached file's
    files["pkg/finetune.py"] = launcher.replace("load_unity_model(name, dtype=torch.float16)", "Net().half()")
    p = Project(write_project(tmp_path / "q", files))
    assert p.regime_for(tmp_path / "q/pkg/pretssel/ecapa.py").half_params is None
    # near miss: a half model with float32 master weights (DeepSpeed fp16: fairseq's registry models, built at run
    # time, train this way) keeps half activations in unreached code
    # (a program that runs DeepSpeed: a DeepSpeed config is no run of code that never names it, T11-7)
    files["pkg/ds_config.json"] = '{"train_batch_size": 8, "fp16": {"enabled": true}}'
    files["pkg/finetune.py"] = "import deepspeed\n" + files["pkg/finetune.py"]
    p = Project(write_project(tmp_path / "r", files))
    assert p.regime_for(tmp_path / "r/pkg/pretssel/ecapa.py").half_params is not None


def test_code_no_entry_point_reaches_beside_a_half_model_is_judged_as_under_fp16_autocast():
    # ParlAI: its agents are built at run time (a registry); TorchAgent's `self.model.half()` (--fp16) trains them.
    # A file no import of the entry point reaches is judged as under fp16 autocast: a bmm output is float16 (the
    # -1e20 fill of the real bug is found), what only a half model makes float16 is not (a sum, on autocast's
    # float32 list: a 1e-8 guard on it is silent)
    from amplint.api import lint_source
    train = ("import torch\ndef main(loader):\n    model = Net().half()\n"
             "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
             "    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n")
    layer = ("import torch\nclass Attention(torch.nn.Module):\n    def forward(self, q, k, mask):\n"
             "        s = torch.bmm(q, k)\n        return s.masked_fill(mask, -1e20), torch.log(s.sum(-1) + 1e-8)\n")
    found = [(f.code, f.line) for f in lint_source(layer, filename="agents/attn.py", extra_files={"train.py": train})
             if f.code in ("AMP102", "AMP103")]
    assert found == [("AMP103", 5)]
    # near miss: the same file imported by the half training is that model's code: its sum is float16 too
    found = [(f.code, f.line) for f in lint_source(layer, filename="agents/attn.py",
                                                  extra_files={"train.py": train + "import agents.attn\n"})
             if f.code in ("AMP102", "AMP103")]
    assert sorted(found) == [("AMP102", 5), ("AMP103", 5)]
