"""A model built from the ``target:`` strings of a YAML config (latent-diffusion's ``instantiate_from_config``) is
reached by the program that loads that config: it takes that program's precision and role, not the project's
fallback for "files no entry point reaches". (Lumina-T2X, set 11 T11-4: an inference demo's CLAP, frozen, judged
under the trainers' fp16 autocast: AMP401 on its logit scale; VQ-Diffusion, set 13 T13-3: a frozen codec's files
judged by the fallback.)"""
import textwrap

from amplint.project import Project

from cliutil import entry_point_reach, hazard_findings, write_project

TRAIN = """
import torch
from torch import nn
def main(loader):
    model = nn.Linear(8, 8).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""

DEMO = """
import importlib
import torch
import yaml
def instantiate_from_config(config):
    module, cls = config["target"].rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)()
@torch.no_grad()
def main():
    config = yaml.safe_load(open("config.yaml"))
    model = instantiate_from_config(config["cond_stage_config"]).eval()
    print(model(torch.randn(1, 16), torch.randn(1, 16)))
if __name__ == "__main__":
    main()
"""

CLAP = """
import numpy as np
import torch
from torch import nn
class CLAP(nn.Module):
    def __init__(self):
        super().__init__()
        self.audio = nn.Linear(16, 8)
        self.text = nn.Linear(16, 8)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))
    def forward(self, audio, text):
        return self.text(text), self.audio(audio), self.logit_scale.exp()
"""

DEMO_FILES = {
    "train.py": TRAIN,
    "audio/demo.py": DEMO,
    "audio/config.yaml": "cond_stage_config:\n  target: models.clap.CLAP\n",
    "audio/models/clap.py": CLAP,
}

# a training program that builds its model from its config's ``target:`` strings
TRAIN_FROM_CONFIG = """
import torch
import yaml
from pkg.utils import instantiate_from_config
def main():
    config = yaml.safe_load(open("configs/train.yaml"))
    model = instantiate_from_config(config["model"]).cuda()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()
    for step in range(100):
        with torch.cuda.amp.autocast():
            loss = model(torch.randn(2, 3, 32, 32).cuda())
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
if __name__ == "__main__":
    main()
"""

UTILS = """
import importlib
def instantiate_from_config(config):
    module, cls = config["target"].rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)(**config.get("params", dict()))
"""

MODEL = """
import torch.nn as nn
from pkg.utils import instantiate_from_config
class Model(nn.Module):
    def __init__(self, codec_config):
        super().__init__()
        self.codec = instantiate_from_config(codec_config)
        self.head = nn.Conv2d(8, 8, 1)
    def forward(self, x):
        return self.head(self.codec.encode(x)).square().mean()
"""

ACTNORM = """
import torch
import torch.nn as nn
class ActNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, num_features, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            mean = flatten.mean(1).view(1, -1, 1, 1)
            std = flatten.std(1).view(1, -1, 1, 1)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))
    def forward(self, input):
        if self.training and self.initialized.item() == 0:
            self.initialize(input)
            self.initialized.fill_(1)
        return self.scale * (input + self.loc)
class Discriminator(nn.Module):
    def __init__(self, use_actnorm=False):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = ActNorm(8) if use_actnorm else nn.BatchNorm2d(8)
    def forward(self, x):
        return self.norm(self.conv(x))
"""

VQGAN = """
import torch
import torch.nn as nn
from pkg.codec.actnorm import Discriminator
class FrozenCodec(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 4, 4)
    def encode(self, x):
        return self.enc(x)
    def build_loss(self):
        return Discriminator()
"""

CODEC_FILES = {
    "train.py": TRAIN_FROM_CONFIG,
    "configs/train.yaml": "model:\n  target: pkg.model.Model\n  params:\n    codec_config:\n"
                          "      target: pkg.codec.vqgan.FrozenCodec\n",
    "pkg/__init__.py": "",
    "pkg/utils.py": UTILS,
    "pkg/model.py": MODEL,
    "pkg/codec/__init__.py": "",
    "pkg/codec/actnorm.py": ACTNORM,
    "pkg/codec/vqgan.py": VQGAN,
}


def _project(tmp_path, files):
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_model_only_an_inference_demo_builds_from_its_config_is_not_run_by_the_training(tmp_path):
    root = _project(tmp_path, DEMO_FILES)
    p = Project(root)
    clap = root / "audio" / "models" / "clap.py"
    assert p.regime_for(clap).not_run
    assert ("audio/models/clap.py", "AMP401") not in hazard_findings(root)


def test_near_miss_a_model_a_training_builds_from_its_config_takes_that_training(tmp_path):
    # the same CLAP named by the config of a training program that builds it by its target string: fp16 autocast,
    # and the logit scale trains (AMP401)
    files = {
        "train.py": TRAIN_FROM_CONFIG.replace("configs/train.yaml", "configs/clap.yaml"),
        "configs/clap.yaml": "model:\n  target: models.clap.CLAP\n",
        "pkg/__init__.py": "",
        "pkg/utils.py": UTILS,
        "models/__init__.py": "",
        "models/clap.py": CLAP,
    }
    root = _project(tmp_path, files)
    assert "models/clap.py" in entry_point_reach(root)["train.py"]
    assert ("models/clap.py", "AMP401") in hazard_findings(root)


def test_near_miss_a_sub_apps_config_is_not_the_root_trainers(tmp_path):
    # the root trainer loads modules by name too, but audio/config.yaml lies beside the demo that loads it
    files = {**DEMO_FILES, "train.py": "import importlib\n" + TRAIN}
    root = _project(tmp_path, files)
    assert "audio/models/clap.py" not in entry_point_reach(root)["train.py"]
    assert ("audio/models/clap.py", "AMP401") not in hazard_findings(root)


def test_a_training_reaches_the_modules_its_config_targets_name(tmp_path):
    root = _project(tmp_path, CODEC_FILES)
    assert entry_point_reach(root)["train.py"] == {"train.py", "pkg/utils.py", "pkg/model.py", "pkg/codec/vqgan.py",
                                        "pkg/codec/actnorm.py"}


def test_a_class_called_only_on_the_off_side_of_an_option_in_its_own_file_is_not_judged(tmp_path):
    # ``ActNorm(8) if use_actnorm else nn.BatchNorm2d(8)`` and every ``Discriminator()`` leaves it off
    root = _project(tmp_path, CODEC_FILES)
    assert ("pkg/codec/actnorm.py", "AMP102") not in hazard_findings(root)


def test_near_miss_a_build_that_turns_the_option_on_judges_the_class(tmp_path):
    files = {**CODEC_FILES, "pkg/codec/vqgan.py": VQGAN.replace("Discriminator()", "Discriminator(use_actnorm=True)")}
    root = _project(tmp_path, files)
    assert ("pkg/codec/actnorm.py", "AMP102") in hazard_findings(root)


# Hydra (``hydra.utils.instantiate(cfg.model)``): the model class is named only by a ``_target_:`` key of a YAML under
# the program's ``config_path`` (``../hparams``: not a directory named for configurations). An inference demo imports
# it; the training never does by name. Not reached, the file was "only programs that do not train import it" (not
# run): the float16 hazard in it went unreported.
HYDRA_TRAIN = """
import hydra
import torch
from hydra.utils import instantiate
@hydra.main(config_path="../hparams", config_name="train", version_base=None)
def main(cfg):
    model = instantiate(cfg.model).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, mask, y in []:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x, mask), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
if __name__ == "__main__":
    main()
"""

HYDRA_NET = """
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
    def forward(self, x, mask):
        scores = self.q(x) @ self.k(x).transpose(-2, -1)
        return scores.masked_fill(mask, -1e9).softmax(-1).mean(1)
"""

HYDRA_DEMO = """
import torch
from models.net import Net
if __name__ == "__main__":
    with torch.no_grad():
        print(Net().eval()(torch.randn(1, 8, 64), torch.zeros(1, 8, 8, dtype=torch.bool)))
"""

HYDRA_FILES = {
    "src/train.py": HYDRA_TRAIN,
    "hparams/train.yaml": "defaults:\n  - model: net\n",
    "hparams/model/net.yaml": "_target_: models.net.Net\ndim: 64\n",
    "models/__init__.py": "",
    "models/net.py": HYDRA_NET,
    "demo.py": HYDRA_DEMO,
}


def test_a_hydra_training_reaches_the_classes_its_target_keys_name(tmp_path):
    root = _project(tmp_path, HYDRA_FILES)
    assert "models/net.py" in entry_point_reach(root)["src/train.py"]
    assert ("models/net.py", "AMP103") in hazard_findings(root)


def test_near_miss_a_target_in_a_yaml_outside_the_programs_config_path_is_not_its(tmp_path):
    # the same YAML under another program's configs (tools/conf/, beside tools/export.py): not read by src/train.py
    files = {k: v for k, v in HYDRA_FILES.items() if k != "hparams/model/net.yaml"}
    files["tools/conf/net.yaml"] = "_target_: models.net.Net\n"
    files["tools/export.py"] = "import hydra\nfrom hydra.utils import instantiate\n" \
                               "@hydra.main(config_path='conf', config_name='net', version_base=None)\n" \
                               "def main(cfg):\n    print(instantiate(cfg))\nif __name__ == '__main__':\n    main()\n"
    root = _project(tmp_path, files)
    assert "models/net.py" not in entry_point_reach(root)["src/train.py"]
    assert ("models/net.py", "AMP103") not in hazard_findings(root)


# T13-3 as VQ-Diffusion has it (two hops across files): taming's ActNorm (util.py) is used only as ``norm_layer =
# ActNorm`` under ``use_actnorm`` in discriminator/model.py, whose only build passes the loss's own ``use_actnorm``
# (default False), and the loss is built from a pretrained YAML's ``lossconfig`` target whose params do not set it.
ACTNORM_ONLY = ACTNORM[:ACTNORM.index("class Discriminator")]

DISCRIMINATOR = """
import torch.nn as nn
from pkg.codec.actnorm import ActNorm
class NLayerDiscriminator(nn.Module):
    def __init__(self, use_actnorm=False):
        super().__init__()
        if not use_actnorm:
            norm_layer = nn.BatchNorm2d
        else:
            norm_layer = ActNorm
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = norm_layer(8)
    def forward(self, x):
        return self.norm(self.conv(x))
"""

PERCEPTUAL = """
import torch.nn as nn
from pkg.codec.discriminator import NLayerDiscriminator
class VQLPIPSWithDiscriminator(nn.Module):
    def __init__(self, disc_start=0, use_actnorm=False):
        super().__init__()
        self.discriminator = NLayerDiscriminator(use_actnorm=use_actnorm)
"""

CODEC_WITH_LOSS = """
import torch
import torch.nn as nn
from pkg.utils import instantiate_from_config
class FrozenCodec(nn.Module):
    def __init__(self, lossconfig=None):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 4, 4)
        self.loss = instantiate_from_config(lossconfig) if lossconfig else None
    def encode(self, x):
        return self.enc(x)
"""

TWO_HOP_CONFIG = ("model:\n  target: pkg.model.Model\n  params:\n    codec_config:\n"
                  "      target: pkg.codec.vqgan.FrozenCodec\n      params:\n        lossconfig:\n"
                  "          target: pkg.codec.losses.vqperceptual.VQLPIPSWithDiscriminator\n"
                  "          params:\n            disc_start: 0\n{extra}")

TWO_HOP_FILES = {
    **{k: v for k, v in CODEC_FILES.items() if k != "configs/train.yaml"},
    "configs/train.yaml": TWO_HOP_CONFIG.format(extra=""),
    "pkg/codec/actnorm.py": ACTNORM_ONLY,
    "pkg/codec/discriminator.py": DISCRIMINATOR,
    "pkg/codec/losses/__init__.py": "",
    "pkg/codec/losses/vqperceptual.py": PERCEPTUAL,
    "pkg/codec/vqgan.py": CODEC_WITH_LOSS,
}


def test_a_class_switched_off_in_an_importing_file_whose_builder_a_config_builds_is_not_judged(tmp_path):
    root = _project(tmp_path, TWO_HOP_FILES)
    assert "pkg/codec/actnorm.py" in entry_point_reach(root)["train.py"]
    assert ("pkg/codec/actnorm.py", "AMP102") not in hazard_findings(root)


def test_near_miss_the_configs_params_turn_the_option_on(tmp_path):
    files = {**TWO_HOP_FILES, "configs/train.yaml": TWO_HOP_CONFIG.format(extra="            use_actnorm: true\n")}
    assert ("pkg/codec/actnorm.py", "AMP102") in hazard_findings(_project(tmp_path, files))


def test_near_miss_another_file_builds_the_class_unswitched(tmp_path):
    files = {**TWO_HOP_FILES, "pkg/codec/flow.py": "import torch.nn as nn\nfrom pkg.codec.actnorm import ActNorm\n"
                                                   "class Flow(nn.Module):\n    def __init__(self):\n"
                                                   "        super().__init__()\n        self.norm = ActNorm(8)\n"}
    assert ("pkg/codec/actnorm.py", "AMP102") in hazard_findings(_project(tmp_path, files))
