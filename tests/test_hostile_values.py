"""Issue 13, items 5, 8 and 9: configuration values are finite numbers in their documented range and
never pasted into code as text; CR-only files keep their line ends through `fix`; parameters of a
model made half in the same expression are half parameters."""
import pytest

from cliutil import run, write_project

TEMPERATURE = """\
import torch
from torch import nn

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.ones([]))

    def forward(self, a, b):
        return self.logit_scale.exp() * a @ b.T
"""
FP16_TRAIN = "import torch\nmodel = Head().cuda().half()\nloss.backward()\n"


@pytest.mark.parametrize("key, value", [
    ("safe-eps", "nan"), ("safe-eps", "inf"), ("safe-eps", "-1e-4"), ("safe-eps", '"1e-4"'),
    ("temperature-min", "nan"), ("temperature-min", "inf"), ("temperature-min", "0"), ("temperature-min", "1e-9"),
    ("logit-scale-max", "nan"), ("logit-scale-max", "inf"), ("logit-scale-max", '")("'),
    ("logit-scale-max", '"__import__(\'os\').system(\'x\')"'), ("logit-scale-max", '"math.log(1e6)"'),
    ("logit-scale-max", "12"), ("logit-scale-max", "-1"), ("logit-scale-max", "true"),
    ("max-file-bytes", "1e9"), ("max-line-length", "-5"), ("max-syntax-depth", "nan"),
])
def test_bad_numeric_config_exits_2_naming_the_key(tmp_path, key, value):
    root = write_project(tmp_path / "p", {"pyproject.toml": f"[tool.amplint]\n{key} = {value}\n",
                                          "model.py": TEMPERATURE, "train.py": FP16_TRAIN})
    for command in ("check", "fix"):
        r = run([command, "--unsafe-fixes", "."] if command == "fix" else [command, "."], root)
        assert r.rc == 2, (command, r.out, r.err)
        assert f"`{key}`" in r.err and "Traceback" not in r.err
        assert r.err.count("\n") == 1
    assert (root / "model.py").read_text() == TEMPERATURE  # nothing written


@pytest.mark.parametrize("value, written", [
    ("4.6", "clamp(max=4.6)"), ('"math.log(50)"', "clamp(max=math.log(50))"),
    ('"4.6052"', "clamp(max=4.6052)"), ('"  math.log( 100.0 ) "', "clamp(max=math.log(100))"),
])
def test_logit_scale_max_writes_a_number_amplint_formatted(tmp_path, value, written):
    root = write_project(tmp_path / "p", {"pyproject.toml": f"[tool.amplint]\nlogit-scale-max = {value}\n",
                                          "model.py": TEMPERATURE, "train.py": FP16_TRAIN})
    r = run(["fix", "--unsafe-fixes", "--select", "AMP401", "."], root)
    assert r.rc == 0, (r.out, r.err)
    assert f"self.logit_scale.{written}.exp()" in (root / "model.py").read_text()


def test_cr_only_line_ends_are_kept_by_fix(tmp_path):
    root = write_project(tmp_path / "p", {"cr.py": b"import torch\rscaler = torch.cuda.amp.GradScaler()\rx = 1\r"})
    r = run(["fix", "."], root)
    assert r.rc == 0, (r.out, r.err)
    assert (root / "cr.py").read_bytes() == b'import torch\rscaler = torch.amp.GradScaler("cuda")\rx = 1\r'
    r = run(["fix", "."], root)  # a second fix changes nothing
    assert (root / "cr.py").read_bytes() == b'import torch\rscaler = torch.amp.GradScaler("cuda")\rx = 1\r'


@pytest.mark.parametrize("params", ["model.half().parameters()", "model.to(torch.float16).parameters()",
                                    "model.to(dtype=torch.float16).parameters()"])
def test_parameters_of_a_model_made_half_in_the_same_expression_are_half(tmp_path, params):
    root = write_project(tmp_path / "p", {"train.py": (
        "import torch\nmodel = Net()\n"
        f"opt = torch.optim.Adam({params}, eps=1e-8)\nloss.backward()\n")})
    r = run(["check", "--no-cache", "--output-format", "concise", "."], root)
    assert r.rc == 1, (r.out, r.err)
    assert "train.py:3:" in r.out and " AMP101 Adam eps=1e-8 on float16 parameters" in r.out


def test_a_half_copy_that_is_not_trained_stays_silent(tmp_path):
    root = write_project(tmp_path / "p", {"export.py": (
        "import torch\nmodel = Net()\ntorch.save(model.half().state_dict(), 'f.pt')\n"
        "opt = torch.optim.Adam(model.parameters(), eps=1e-8)\nloss.backward()\n")})
    r = run(["check", "--no-cache", "--output-format", "concise", "."], root)
    assert "AMP101" not in r.out
