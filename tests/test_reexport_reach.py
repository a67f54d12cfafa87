"""What an entry point reaches follows the names it imports through a package ``__init__`` that re-exports
them (``from .layers import Dense`` in ``pkg/__init__.py``): ``from pkg import Dense`` runs the code of
``pkg/layers.py``; the ``__init__`` imports every other module of the package too, but their functions and
classes run only when called. (physicsnemo: the domino training imports a few layers from ``physicsnemo.nn``,
whose ``__init__`` imports every layer and functional; its fp16 autocast judged a point-transformer attention
and a mesh gradient that only other recipes, in bf16 or fp32, use: set 10, #40 / #41.)"""
import textwrap

from cliutil import entry_point_reach, hazard_findings, write_project

# an unclamped learnable logit scale: AMP401 under a float16 training, nothing to say under bfloat16
ATTENTION = """
import math
import torch
from torch import nn
class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
    def forward(self, a, b):
        return self.logit_scale.exp() * self.proj(a) @ self.proj(b).t()
"""

DENSE = "import torch\nclass Dense(torch.nn.Linear):\n    pass\n"


def _train(name, dtype):
    return f"""
import torch
from pkg import {name}
def main(loader):
    model = {name}(8, 8) if "{name}" == "Dense" else {name}()
    opt = torch.optim.AdamW(model.parameters())
    for a, b in loader:
        with torch.autocast("cuda", dtype=torch.{dtype}):
            loss = (model(a) if "{name}" == "Dense" else model(a, b)).float().sum()
        loss.backward()
        opt.step()
"""


FILES = {
    "pkg/__init__.py": "from .layers import Dense\nfrom .attention import Attention\n",
    "pkg/layers.py": DENSE,
    "pkg/attention.py": ATTENTION,
    "train_dense_fp16.py": _train("Dense", "float16"),
    "train_attention_bf16.py": _train("Attention", "bfloat16"),
}


def _project(tmp_path, **extra):
    files = {**FILES, **extra}
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_name_imported_from_a_package_reaches_the_module_that_defines_it(tmp_path):
    root = _project(tmp_path)
    reach = entry_point_reach(root)
    assert reach["train_dense_fp16.py"] == {"train_dense_fp16.py", "pkg/layers.py"}
    assert reach["train_attention_bf16.py"] == {"train_attention_bf16.py", "pkg/attention.py"}
    # the attention runs in the bf16 training only: no AMP401 from the fp16 one's autocast
    assert ("pkg/attention.py", "AMP401") not in hazard_findings(root)


def test_near_miss_the_fp16_training_that_uses_the_attention_keeps_its_finding(tmp_path):
    root = _project(tmp_path, **{"train_attention_fp16.py": _train("Attention", "float16")})
    assert "pkg/attention.py" in entry_point_reach(root)["train_attention_fp16.py"]
    assert ("pkg/attention.py", "AMP401") in hazard_findings(root)


def test_names_through_nested_packages_and_what_is_no_re_export(tmp_path):
    nested = {
        "pkg/__init__.py": "from .nn import Dense, Attention\n",
        "pkg/nn/__init__.py": "from .layers import Dense\nfrom .attention import Attention\n",
        "pkg/nn/layers.py": DENSE,
        "pkg/nn/attention.py": ATTENTION,
        "pkg/layers.py": "", "pkg/attention.py": "",
    }
    reach = entry_point_reach(_project(tmp_path / "nested", **nested))["train_dense_fp16.py"]
    assert "pkg/nn/layers.py" in reach and "pkg/nn/attention.py" not in reach
    # a name the __init__ defines itself, or may take from a star import: the __init__ and all it imports
    star = {"pkg/__init__.py": "from .layers import *\nfrom .attention import Attention\n"}
    reach = entry_point_reach(_project(tmp_path / "star", **star))["train_dense_fp16.py"]
    assert {"pkg/__init__.py", "pkg/layers.py", "pkg/attention.py"} <= reach
