"""A module loaded by a literal name is imported, and a class looked up in it by string runs: RecBole's
``get_trainer`` does ``getattr(importlib.import_module("recbole.trainer"), model_name + "Trainer")`` and
``run_recbole`` calls ``trainer.fit(...)``; the trainer's ``_train_epoch`` runs the model's ``calculate_loss`` under
``torch.autocast(enabled=self.enable_amp)`` (the documented ``enable_amp`` option). The program did not reach the
trainer, so it was fp32, the models (loaded by ``importlib`` over computed names) were library code, and the
autocast-only hazard in them (``nn.BCELoss``, refused by CUDA autocast) went unreported (triage set 16, M16-4)."""
import textwrap

from amplint.project import Project

from cliutil import hazard_findings, write_project

FILES = {
    "recpkg/__init__.py": "",
    "recpkg/model/__init__.py": "",
    "recpkg/model/ctr/__init__.py": "",
    "recpkg/model/ctr/dcnv2.py": """
        from torch import nn
        class DCNV2(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.mlp = nn.Linear(16, 1)
                self.sigmoid = nn.Sigmoid()
                self.loss = nn.BCELoss()
            def forward(self, x):
                return self.sigmoid(self.mlp(x).squeeze(1))
            def calculate_loss(self, interaction):
                x, label = interaction
                return self.loss(self.forward(x), label)
    """,
    "recpkg/trainer/__init__.py": "from .trainer import Trainer\n",
    "recpkg/trainer/trainer.py": """
        import torch
        class Trainer:
            def __init__(self, config, model):
                self.model = model
                self.enable_amp = config["enable_amp"]
                self.optimizer = torch.optim.Adam(model.parameters())
            def _train_epoch(self, train_data):
                scaler = torch.amp.GradScaler("cuda", enabled=self.enable_amp)
                for interaction in train_data:
                    self.optimizer.zero_grad()
                    with torch.autocast(device_type="cuda", enabled=self.enable_amp):
                        loss = self.model.calculate_loss(interaction)
                    scaler.scale(loss).backward()
                    scaler.step(self.optimizer)
                    scaler.update()
            def fit(self, train_data):
                for epoch in range(10):
                    self._train_epoch(train_data)
    """,
    "recpkg/utils.py": """
        import importlib
        def get_model(model_name):
            for submodule in ["general", "ctr"]:
                module_path = ".".join(["recpkg.model", submodule, model_name.lower()])
                if importlib.util.find_spec(module_path, __name__):
                    return getattr(importlib.import_module(module_path, __name__), model_name)
        def get_trainer(model_name):
            try:
                return getattr(importlib.import_module("recpkg.trainer"), model_name + "Trainer")
            except AttributeError:
                return getattr(importlib.import_module("recpkg.trainer"), "Trainer")
    """,
    "run.py": """
        from recpkg.utils import get_model, get_trainer
        config = {"model": "DCNV2", "enable_amp": False}
        model = get_model(config["model"])(config)
        trainer = get_trainer(config["model"])(config, model)
        trainer.fit([])
    """,
}


def _project(tmp_path, files):
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_trainer_loaded_by_a_literal_module_name_is_the_programs_run(tmp_path):
    root = _project(tmp_path, FILES)
    p = Project(root)
    run = next(ep for ep in p.entry_points() if ep.display.endswith("run.py"))
    assert "recpkg/trainer/trainer.py" in {p.relative(f) for f in run.reach}
    assert p.regime_for(root / "run.py").mode == "fp16-mixed"
    assert ("recpkg/model/ctr/dcnv2.py", "AMP202") in hazard_findings(root)


def test_near_miss_a_module_name_computed_at_run_time_is_no_import(tmp_path):
    utils = FILES["recpkg/utils.py"].replace('importlib.import_module("recpkg.trainer")',
                                             'importlib.import_module(PACKAGE + ".trainer")')
    root = _project(tmp_path, {**FILES, "recpkg/utils.py": 'PACKAGE = "recpkg"\n' + textwrap.dedent(utils)})
    p = Project(root)
    assert p.regime_for(root / "run.py").mode == "fp32"
    assert ("recpkg/model/ctr/dcnv2.py", "AMP202") not in hazard_findings(root)
