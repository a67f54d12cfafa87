"""A file no entry point reaches, in a top directory of a monorepo that holds no entry point and that no entry
point's imports or evidence enter, is a sub-project whose training the scan does not see: another top
directory's precision says nothing of it, and it is judged by the library policy (InternImage:
autonomous_driving/'s mmdet3d plugin, trained by mmdet's runner from configs with no fp16 key, was judged by
classification/'s DeepSpeed fp16 and got an AMP202; docs/precision.md, "Code no entry point reaches"; T8-2)."""
import textwrap

from cliutil import write_project

DS_TRAIN = """
import deepspeed
import torch
{imports}
def train(model, loader):
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config="configs/ds_config.json")
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(engine(x), y)
        engine.backward(loss)
        engine.step()
"""
HEAD = """
import torch
class MapHead(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.binary_cross_entropy(x.sigmoid(), x)
"""
LAUNCHER = """
from mmdet.apis import train_detector
def main(model, cfg):
    train_detector(model, [], cfg)
"""


def _regime(tmp_path, trainer="classification/main_deepspeed.py", imports="", extra=None):
    from amplint.project import Project
    files = {"classification/configs/ds_config.json": '{"fp16": {"enabled": true}}',
             trainer: DS_TRAIN.replace("{imports}", imports),
             "mapping/heads/__init__.py": "", "mapping/heads/head.py": HEAD, "mapping/tools/train.py": LAUNCHER, **(extra or {})}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items() if v is not None})
    return Project(root).regime_for(root / "mapping/heads/head.py")


def test_a_sibling_sub_projects_precision_is_not_a_directory_it_never_enters(tmp_path):
    regime = _regime(tmp_path)
    assert regime.not_run and "mapping/ holds none" in regime.scope, regime.scope


def test_near_miss_an_entry_point_at_the_root_keeps_the_projects_precision(tmp_path):
    # a root program may build any directory's models through a registry
    assert _regime(tmp_path, trainer="main_deepspeed.py").mode == "fp16-master"


REGISTERED_HEAD = HEAD.replace("class MapHead", "from mmdet.registry import MODELS\n@MODELS.register_module()\nclass MapHead")


def test_near_miss_a_top_package_or_a_directory_with_no_program_of_its_own(tmp_path):
    # mmengine's tools/train.py builds pkg/'s registered models; DeepLearningExamples' common/ beside its models
    assert _regime(tmp_path / "a", extra={"mapping/__init__.py": "",
                                          "mapping/heads/head.py": REGISTERED_HEAD}).mode == "fp16-master"
    assert _regime(tmp_path / "b", extra={"mapping/tools/train.py": None}).mode == "fp16-master"


def test_a_top_package_nothing_outside_imports_or_loads_by_name(tmp_path):
    # EasyOCR (unseen set 18, T18-1): easyocr/, the published inference package, keeps an upstream detector's
    # BCE training loss that nothing trains; trainer/craft/ trains another model under autocast and imports
    # nothing of easyocr/: its float16 is not the package's
    regime = _regime(tmp_path, extra={"mapping/__init__.py": "", "mapping/tools/train.py": None})
    assert regime.not_run and "mapping/ holds none" in regime.scope, regime.scope


def test_a_top_package_whose_own_configs_name_its_modules(tmp_path):
    # (easyocr/DBNet/configs/DBNet_inference.yaml names model.detector.Detector for the package's own inference)
    regime = _regime(tmp_path, extra={"mapping/__init__.py": "", "mapping/tools/train.py": None,
                                      "mapping/configs/infer.yaml": "model:\n  class: heads.head.MapHead\n"})
    assert regime.not_run, regime.scope


def test_a_top_package_only_a_program_that_does_not_train_imports(tmp_path):
    # (EasyOCR's unit_test/make_test_solution.py runs the reader)
    demo = "from mapping.heads.head import MapHead\n\nif __name__ == '__main__':\n    print(MapHead())\n"
    regime = _regime(tmp_path, extra={"mapping/__init__.py": "", "mapping/tools/train.py": None, "scripts/make_solution.py": demo})
    assert regime.not_run, regime.scope


def test_near_miss_a_config_outside_the_package_names_its_modules(tmp_path):
    regime = _regime(tmp_path, extra={"mapping/__init__.py": "", "mapping/tools/train.py": None,
                                      "classification/configs/model.yaml": "model:\n  class: heads.head.MapHead\n"})
    assert regime.mode == "fp16-master"


def test_near_miss_a_top_package_the_training_imports(tmp_path):
    regime = _regime(tmp_path, imports="from mapping.heads.head import MapHead\n",
                     extra={"mapping/__init__.py": "", "mapping/tools/train.py": None})
    assert regime.mode == "fp16-master"


def test_near_miss_a_directory_with_float16_evidence_of_its_own(tmp_path):
    mixed = "import torch\ndef step(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n"
    assert not _regime(tmp_path, extra={"mapping/models/step.py": mixed}).library


def test_near_miss_a_directory_an_entry_point_imports_from_is_shared_code(tmp_path):
    extra = {"mapping/common.py": "def helper():\n    return 1\n"}
    assert _regime(tmp_path, imports="from mapping.common import helper", extra=extra).mode == "fp16-master"


SCALED = """
import torch
class CLIP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.logit_scale = torch.nn.Parameter(torch.ones([]))
    def forward(self, a, b):
        return self.logit_scale.exp() * a @ b.t()
"""


PLAIN = "import torch\ndef main(model, x):\n    opt = torch.optim.SGD(model.parameters())\n    opt.step()\n"


def _nested(tmp_path, extra=None, imports=""):
    # EVA: EVA-01/eva/ and EVA-01/video/ train, EVA-01/clip/ (the released EVA-CLIP package) is imported by no file
    from amplint.project import Project
    files = {"EVA-01/eva/ds_config.json": '{"fp16": {"enabled": true}}',
             "EVA-01/eva/run_pretraining.py": DS_TRAIN.replace("{imports}", imports),
             "EVA-01/video/main.py": PLAIN, "EVA-02/asuka/run.py": PLAIN,
             "EVA-01/clip/__init__.py": "from .model import CLIP\n", "EVA-01/clip/model.py": SCALED, **(extra or {})}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items() if v is not None})
    return Project(root).regime_for(root / "EVA-01/clip/model.py")


def test_a_nested_package_no_file_imports_is_apart_from_its_siblings_training(tmp_path):
    regime = _nested(tmp_path)
    assert regime.not_run and "EVA-01/clip/ holds none" in regime.scope, regime.scope


def test_nested_near_misses(tmp_path):
    # a sibling's program imports it; an entry point directly in EVA-01/ (it may load any sub-directory's code)
    imported = _nested(tmp_path / "a", extra={"EVA-01/eva/wrapper.py": "from clip.model import CLIP\n"},
                       imports="import wrapper")
    assert imported.mode == "fp16-master", imported.scope
    above = _nested(tmp_path / "b", extra={"EVA-01/train_all.py": DS_TRAIN.replace("{imports}", "")})
    assert above.mode == "fp16-master", above.scope


def test_nested_with_every_entry_point_in_one_sibling(tmp_path):
    regime = _nested(tmp_path, extra={"EVA-01/video/main.py": None, "EVA-02/asuka/run.py": None})
    assert regime.not_run, regime.scope
    # near miss: a package registering its classes is loaded by name (fairseq's --user-dir, a config's registry)
    registered = "from reg import register\n@register('clip')\nclass Registered:\n    pass\n"
    regime = _nested(tmp_path / "r", extra={"EVA-01/clip/reg.py": registered})
    assert regime.mode == "fp16-master", regime.scope


def test_nested_code_loaded_by_name_keeps_the_precision(tmp_path):
    # a Hydra config naming one of its modules (`_target_: clip.model.CLIP`)
    regime = _nested(tmp_path, extra={"EVA-01/eva/conf.yaml": "model:\n  _target_: clip.model.CLIP\n"})
    assert regime.mode == "fp16-master", regime.scope
