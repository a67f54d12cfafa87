"""A Hugging Face hub port of a model (a ``modeling_*.py`` in a directory with no program, that nothing outside it
imports) runs in the programs of the users who load it from the hub (a config's ``auto_map``,
``trust_remote_code=True``), not in the project's trainings: it does not take their float16 as a file no entry
point reaches. (FlagAI, set 12 T12-4: ``examples/AltCLIP/hf_altclip/modeling_altclip.py``, whose fine-tuning
trains ``flagai/model/mm/AltCLIP.py`` in fp32, judged under the project's fp16-master: AMP401.)"""
import textwrap

from amplint.project import Project

from cliutil import hazard_findings, write_project

MODELING = """
import torch
import torch.nn as nn
class CLIPModel(nn.Module):
    def __init__(self, dim=512, logit_scale_init_value=2.6592):
        super().__init__()
        self.text_projection = nn.Linear(dim, dim)
        self.visual_projection = nn.Linear(dim, dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * logit_scale_init_value)
    def forward(self, text_embeds, image_embeds):
        text_embeds = self.text_projection(text_embeds)
        image_embeds = self.visual_projection(image_embeds)
        text_embeds = text_embeds / text_embeds.norm(dim=-1, keepdim=True)
        image_embeds = image_embeds / image_embeds.norm(dim=-1, keepdim=True)
        logit_scale = self.logit_scale.exp()
        return torch.matmul(text_embeds, image_embeds.t()) * logit_scale
"""

TRAINER = """
import torch
class Trainer:
    def __init__(self, lr=1e-3):
        self.lr = lr
    def train(self, model, dataset):
        model.cuda().half()
        optimizer = torch.optim.SGD(model.parameters(), lr=self.lr)
        for batch in dataset:
            loss = model(batch.cuda().half())
            loss.backward()
            optimizer.step()
"""

FILES = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/model.py": "import torch.nn as nn\nclass Net(nn.Linear):\n    pass\n",
    "pkg/trainer.py": TRAINER,
    "examples/train_net.py": "import torch\nfrom pkg.model import Net\nfrom pkg.trainer import Trainer\n"
                             "Trainer(lr=1e-4).train(Net(16, 16), [torch.randn(8, 16) for _ in range(10)])\n",
    "examples/clip/hf_port/__init__.py": "",
    "examples/clip/hf_port/configuration_clip.py": "class CLIPConfig:\n    model_type = 'clip'\n",
    "examples/clip/hf_port/modeling_clip.py": MODELING,
}


def _project(tmp_path, files):
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_hub_port_nothing_imports_is_not_judged_by_the_projects_float16(tmp_path):
    root = _project(tmp_path, FILES)
    regime = Project(root).regime_for(root / "examples" / "clip" / "hf_port" / "modeling_clip.py")
    assert regime.not_run and "hub port" in regime.scope
    assert ("examples/clip/hf_port/modeling_clip.py", "AMP401") not in hazard_findings(root)


def test_near_miss_a_port_the_training_imports_is_its_code(tmp_path):
    files = {**FILES, "examples/train_net.py": "import torch\nfrom examples.clip.hf_port.modeling_clip import CLIPModel\n"
                                               "from pkg.trainer import Trainer\n"
                                               "Trainer(lr=1e-4).train(CLIPModel(), [torch.randn(8, 16) for _ in range(10)])\n"}
    root = _project(tmp_path, files)
    assert ("examples/clip/hf_port/modeling_clip.py", "AMP401") in hazard_findings(root)


def test_near_miss_a_helper_module_nothing_imports_keeps_the_projects_precision(tmp_path):
    # not named for the hub: a module nothing imports may still be run (docs/precision.md, "no run loads")
    files = {k: v for k, v in FILES.items() if "modeling_clip" not in k}
    files["examples/clip/hf_port/clip_model.py"] = MODELING
    root = _project(tmp_path, files)
    assert ("examples/clip/hf_port/clip_model.py", "AMP401") in hazard_findings(root)
