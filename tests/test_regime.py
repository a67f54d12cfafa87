"""The precision regime of a project: every form of evidence issue 2 lists, the project root, the
inference from the whole project when one file is linted, the `precision` override, the lexical
autocast regions, and findings that name their evidence (file:line)."""
import json
import re

import libcst as cst
import pytest

from amplint.context.precision import precision_model
from amplint.engine import build_context
from amplint.project import Project, scan_source

from cliutil import run, write_project

TRAINS = "\nloss.backward()\noptimizer.step()\n"  # makes a file a training script


def regime_of(tmp_path, source, name="train.py", **files):
    root = write_project(tmp_path / "r", {name: source, **files})
    return Project(root).regime


# ---- evidence forms -------------------------------------------------------------------------------

FP16_MIXED = {
    "torch.autocast": 'import torch\nwith torch.autocast("cuda"):\n    y = model(x)\n',
    "torch.autocast device_type=": 'import torch\nwith torch.autocast(device_type="cuda"):\n    pass\n',
    "torch.amp.autocast": 'import torch\nwith torch.amp.autocast("cuda"):\n    y = model(x)\n',
    "torch.cuda.amp.autocast": "import torch\nwith torch.cuda.amp.autocast():\n    y = model(x)\n",
    "from torch import autocast": 'from torch import autocast\nwith autocast("cuda"):\n    pass\n',
    "from torch.cuda.amp import autocast": "from torch.cuda.amp import autocast\nwith autocast():\n    pass\n",
    "alias import torch as th": 'import torch as th\nwith th.autocast("cuda"):\n    pass\n',
    "device not a literal": "import torch\nwith torch.autocast(x.device.type):\n    pass\n",
    "device variable": "import torch\ndev = get()\nwith torch.autocast(device_type=dev):\n    pass\n",
    "dtype=torch.float16": 'import torch\nwith torch.autocast("cpu", dtype=torch.float16):\n    pass\n',
    "autocast decorator": 'import torch\n@torch.autocast("cuda")\ndef forward(x):\n    return x\n',
    "GradScaler": "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
    "torch.amp.GradScaler": 'import torch\nscaler = torch.amp.GradScaler("cuda")\n',
    "from torch.cuda.amp import GradScaler": "from torch.cuda.amp import GradScaler\nscaler = GradScaler()\n",
    "apex amp O1": 'from apex import amp\nmodel, optimizer = amp.initialize(model, optimizer, opt_level="O1")\n',
    "HF TrainingArguments(fp16=True)": "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True)\n",
    "accelerate fp16": 'from accelerate import Accelerator\nacc = Accelerator(mixed_precision="fp16")\n',
    "Lightning precision=16": "import pytorch_lightning as pl\ntrainer = pl.Trainer(precision=16)\n",
    "Lightning 16-mixed": 'import lightning as L\ntrainer = L.Trainer(precision="16-mixed")\n',
    "Lightning Fabric 16-mixed": 'from lightning.fabric import Fabric\nfabric = Fabric(precision="16-mixed")\n',
}

FP16_PURE = {
    ".half()": "import torch\nmodel = Net().cuda().half()\n" + TRAINS,
    "self.model.half()": "import torch\nclass T:\n    def setup(self):\n        self.model.half()\n" + TRAINS,
    ".to(torch.float16)": "import torch\nmodel = Net().to(torch.float16)\n" + TRAINS,
    ".to(dtype=torch.float16)": "import torch\nmodel = Net()\nmodel = model.to(device, dtype=torch.float16)\n" + TRAINS,
    ".to(torch.half)": "import torch\nnet = Net().to(torch.half)\n" + TRAINS,
    # near misses of a part cast back to float32: before the half cast (undone by it), in a loop
    # over the modules (apex's BatchNorm in float32: most parameters stay half)
    "a part cast to float32 before the half cast":
        "import torch\nmodel = Net()\nmodel.head.float()\nmodel = model.half()\n" + TRAINS,
    "parts cast to float32 in a loop":
        "import torch\nmodel = Net().half()\nfor m in model.modules():\n    m.norm.float()\n" + TRAINS,
    # near miss of the round trip below: the last cast of the chain is the half one
    ".float().half()": "import torch\nmodel = Net().float().half()\n" + TRAINS,
    "torch_dtype=torch.float16": ("import torch\nfrom transformers import AutoModel\n"
                                  "model = AutoModel.from_pretrained('x', torch_dtype=torch.float16)\n" + TRAINS),
    "set_default_dtype": "import torch\ntorch.set_default_dtype(torch.float16)\n" + TRAINS,
    "apex amp O3": 'from apex import amp\nmodel, optimizer = amp.initialize(model, optimizer, opt_level="O3")\n',
    "Lightning 16-true": 'import lightning as L\ntrainer = L.Trainer(precision="16-true")\n',
}

# A half model whose optimizer keeps float32 master weights: activations float16, AMP101 silent.
FP16_MASTER = {
    "apex amp O2": 'from apex import amp\nmodel, optimizer = amp.initialize(model, optimizer, opt_level="O2")\n',
    # ColossalAI's ZeRO / Gemini / hybrid plugins cast the model and keep float32 masters (default fp16)
    "ColossalAI plugin, default precision": "from colossalai.booster.plugin import LowLevelZeroPlugin\nplugin = LowLevelZeroPlugin(stage=2)\n",
    "ColossalAI GeminiPlugin fp16": "from colossalai.booster.plugin import GeminiPlugin\nplugin = GeminiPlugin(precision='fp16')\n",
    "ColossalAI plugin, precision from the command line": "from colossalai.booster.plugin import LowLevelZeroPlugin\nplugin = LowLevelZeroPlugin(precision=args.precision)\n",
    # ChatGLM's P-tuning v2: the frozen base runs in half, the prefix encoder that trains is float32
    "a named part cast back to float32 after the half cast":
        "import torch\nmodel = Net()\nmodel = model.half()\nmodel.transformer.prefix_encoder.float()\n" + TRAINS,
}

BF16 = {
    "autocast cpu default": 'import torch\nwith torch.autocast("cpu"):\n    pass\n',
    "torch.cpu.amp.autocast": "import torch\nwith torch.cpu.amp.autocast():\n    pass\n",
    "autocast dtype=bfloat16": 'import torch\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    pass\n',
    ".bfloat16()": "import torch\nmodel = Net().bfloat16()\n" + TRAINS,
    ".to(torch.bfloat16)": "import torch\nmodel = Net().to(torch.bfloat16)\n" + TRAINS,
    ".to(dtype=torch.bfloat16)": "import torch\nmodel = Net().to(dtype=torch.bfloat16)\n" + TRAINS,
    "torch_dtype=torch.bfloat16": ("import torch\nfrom transformers import AutoModel\n"
                                   "model = AutoModel.from_pretrained('x', torch_dtype=torch.bfloat16)\n" + TRAINS),
    "set_default_dtype bf16": "import torch\ntorch.set_default_dtype(torch.bfloat16)\n" + TRAINS,
    "HF bf16=True": "from transformers import TrainingArguments\nargs = TrainingArguments('out', bf16=True)\n",
    "accelerate bf16": 'from accelerate import Accelerator\nacc = Accelerator(mixed_precision="bf16")\n',
    "Lightning bf16-mixed": 'import lightning as L\ntrainer = L.Trainer(precision="bf16-mixed")\n',
    "Lightning bf16-true": 'import lightning as L\ntrainer = L.Trainer(precision="bf16-true")\n',
    "ColossalAI plugin bf16": "from colossalai.booster.plugin import LowLevelZeroPlugin\nplugin = LowLevelZeroPlugin(stage=2, precision='bf16')\n",
    # Open-Sora: the config's default, not the plugin's own fp16
    "ColossalAI plugin, config default bf16": "from colossalai.booster.plugin import LowLevelZeroPlugin\ndef main(cfg):\n    dtype = cfg.get('dtype', 'bf16')\n    plugin = LowLevelZeroPlugin(stage=2, precision=dtype)\n",
}

FP32 = {
    "nothing": "import torch\nmodel = Net()\n" + TRAINS,
    "autocast enabled=False": 'import torch\nwith torch.autocast("cuda", enabled=False):\n    pass\n',
    "cuda.amp.autocast(enabled=False)": "import torch\nwith torch.cuda.amp.autocast(enabled=False):\n    pass\n",
    "GradScaler(enabled=False)": "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=False)\n",
    "half() in an inference script": "import torch\nmodel = Net().half().eval()\ny = model(x)\n",
    "tensor .to(torch.float16) is not parameters": "import torch\ny = x.to(torch.float16)\n" + TRAINS,
    "a user function named autocast": "def autocast():\n    pass\nwith autocast():\n    pass\n",
    "fp16=False": "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=False)\n",
    "Lightning precision=32": 'import lightning as L\ntrainer = L.Trainer(precision="32-true")\n',
    "apex O0": 'from apex import amp\nmodel, optimizer = amp.initialize(model, optimizer, opt_level="O0")\n',
    "words in comments only": "# we used to call model.half() and torch.autocast\nimport torch\n" + TRAINS,
    "a file that does not parse": "model.half(\n" + TRAINS,
    "ColossalAI plugin fp32": "from colossalai.booster.plugin import LowLevelZeroPlugin\nplugin = LowLevelZeroPlugin(precision='fp32')\n",
    "a project's own class named like a ColossalAI plugin": "class LowLevelZeroPlugin:\n    pass\nplugin = LowLevelZeroPlugin()\n",
    # YOLOv7's ``model.half().float()  # pre-reduce anchor precision``: the last cast decides
    ".half().float() round trip": "import torch\nmodel = Net()\nmodel.half().float()\n" + TRAINS,
    ".half().cuda().to(torch.float32)": "import torch\nmodel = Net().half().cuda().to(torch.float32)\n" + TRAINS,
}


@pytest.mark.parametrize("name", FP16_MIXED)
def test_fp16_mixed_evidence(tmp_path, name):
    regime = regime_of(tmp_path, FP16_MIXED[name])
    assert regime.mode == "fp16-mixed", name
    assert regime.fp16 is not None and regime.half_params is None and regime.bf16 is None
    assert regime.fp16.path.endswith("train.py") and regime.fp16.line >= 2


@pytest.mark.parametrize("name", FP16_PURE)
def test_half_parameter_evidence(tmp_path, name):
    regime = regime_of(tmp_path, FP16_PURE[name])
    assert regime.mode == "fp16", name
    assert regime.half_params is not None and regime.fp16 is not None


@pytest.mark.parametrize("name", FP16_MASTER)
def test_half_model_with_float32_master_weights(tmp_path, name):
    regime = regime_of(tmp_path, FP16_MASTER[name])
    assert regime.mode == "fp16-master", (name, regime.signals)
    assert regime.half_optimizer is None and regime.fp16 is not None


@pytest.mark.parametrize("name", BF16)
def test_bf16_evidence(tmp_path, name):
    regime = regime_of(tmp_path, BF16[name])
    assert regime.mode == "bf16", name
    assert regime.fp16 is None and regime.half_params is None and regime.bf16 is not None


@pytest.mark.parametrize("name", FP32)
def test_no_fp16_evidence(tmp_path, name):
    regime = regime_of(tmp_path, FP32[name])
    assert regime.mode == "fp32", (name, regime.signals)
    assert regime.fp16 is None


def test_grad_scaler_is_reported_as_such(tmp_path):
    regime = regime_of(tmp_path, "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n")
    assert regime.grad_scaler is not None and regime.grad_scaler.line == 3
    # a scaler exists only for float16 autocast, so it stands for one the scan cannot see
    assert regime.fp16_autocast == regime.grad_scaler


def test_evidence_names_the_code_and_its_line(tmp_path):
    src = "import torch\n\n\nmodel = Net().cuda().half()\n" + TRAINS
    signals = scan_source(src.encode(), "pkg/train.py")
    assert len(signals) == 1
    ev = signals[0][1]
    assert (ev.path, ev.line) == ("pkg/train.py", 4)
    assert "half()" in ev.what
    assert str(ev).endswith("at pkg/train.py:4")


# ---- the override ---------------------------------------------------------------------------------

@pytest.mark.parametrize("override, mode, fp16, half", [
    ("fp16", "fp16", True, True),
    ("fp16-mixed", "fp16-mixed", True, False),
    ("bf16", "bf16", False, False),
    ("fp32", "fp32", False, False),
])
def test_configured_precision_overrides_the_evidence(tmp_path, override, mode, fp16, half):
    root = write_project(tmp_path / "o", {"a.py": 'import torch\nwith torch.autocast("cpu"):\n    pass\n'})
    regime = Project(root, override=override).regime
    assert regime.mode == mode
    assert (regime.fp16 is not None, regime.half_params is not None) == (fp16, half)
    if fp16:
        assert "configuration" in str(regime.fp16)
    assert Project(root, override="auto").regime.mode == "bf16"


# ---- the whole project ----------------------------------------------------------------------------

def project_with_evidence_elsewhere(tmp_path, marker="pyproject.toml"):
    files = {
        "src/pkg/train.py": "import torch\nfrom pkg.model import Net\n\nmodel = Net().cuda().half()\n" + TRAINS,
        "src/pkg/optim.py": "import torch\n\ndef make(model):\n    return torch.optim.AdamW(model.parameters())\n",
    }
    return write_project(tmp_path / "w", files, marker=marker)


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py", "setup.cfg", ".git"])
def test_regime_comes_from_the_whole_project_when_one_file_is_linted(tmp_path, marker):
    root = project_with_evidence_elsewhere(tmp_path, marker if marker != ".git" else None)
    if marker == ".git":
        (root / ".git").mkdir()
    r = run(["check", "src/pkg/optim.py"], root)
    assert r.rc == 1, r.err
    assert re.match(r"src/pkg/optim\.py:4:\d+: AMP101 ", r.out)
    assert "= evidence: src/pkg/train.py:4: parameters are float16: `Net().cuda().half()`" in r.out
    # From another directory, the evidence is named in the same terms as the linted file.
    r = run(["check", root / "src/pkg/optim.py"], tmp_path)
    assert f"= evidence: {(root / 'src/pkg/train.py').as_posix()}:4: " in r.out or "= evidence: w/src/pkg/train.py:4: " in r.out


def test_a_nested_project_is_not_evidence_for_its_parent(tmp_path):
    root = write_project(tmp_path / "outer", {
        "opt.py": "import torch\noptimizer = torch.optim.Adam(params)\n",
        "examples/pyproject.toml": "[project]\nname = 'ex'\n",
        "examples/train.py": "import torch\nmodel = Net().half()\n" + TRAINS,
    })
    assert Project(root).regime.mode == "fp32"
    assert Project(root / "examples").regime.mode == "fp16"
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 0, r.out  # examples/train.py is linted with its own project's regime: it has no optimizer


def test_excluded_and_ignored_files_are_not_evidence(tmp_path):
    root = write_project(tmp_path / "x", {
        ".git/HEAD": "", ".gitignore": "scratch/\n",
        "scratch/try.py": "import torch\nmodel = Net().half()\n" + TRAINS,
        ".venv/pyvenv.cfg": "", ".venv/lib/t.py": "import torch\nmodel = Net().half()\n" + TRAINS,
    })
    assert Project(root).regime.mode == "fp32"


# ---- lexical regions ------------------------------------------------------------------------------

def context(tmp_path, source, **files):
    root = write_project(tmp_path / "c", {"m.py": source, **files})
    path = root / "m.py"
    return build_context(path, "m.py", path.read_bytes(), Project(root))


def call_named(ctx, method):
    return next(c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == method)


REGION_CASES = {
    "with torch.autocast": ('import torch\nwith torch.autocast("cuda"):\n    y = x.probe()\n', True, 2),
    "with autocast imported": ('from torch import autocast\ndef f(x):\n    with autocast("cuda"):\n'
                               '        return x.probe()\n', True, 3),
    "with several items": ('import torch\nwith open("f") as fh, torch.autocast("cuda"):\n    y = x.probe()\n', True, 2),
    "decorator": ('import torch\n\n@torch.autocast("cuda")\ndef forward(x):\n    return x.probe()\n', True, 3),
    "cuda.amp decorator": ("import torch\n\n@torch.cuda.amp.autocast()\ndef forward(x):\n    return x.probe()\n", True, 3),
    "enabled=False inside fp16": ('import torch\nwith torch.autocast("cuda"):\n'
                                  '    with torch.autocast("cuda", enabled=False):\n        y = x.probe()\n', False, 3),
    "bf16 region": ('import torch\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    y = x.probe()\n', False, 2),
    "custom_fwd fp32": ("import torch\n\n@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
                        "def forward(ctx, x):\n    return x.probe()\n", False, 3),
}


@pytest.mark.parametrize("name", REGION_CASES)
def test_lexical_regions(tmp_path, name):
    source, fp16, line = REGION_CASES[name]
    ctx = context(tmp_path, source)
    probe = call_named(ctx, "probe")
    status = precision_model(ctx).fp16_status(probe)
    assert (status.fp16, status.confidence) == (fp16, "certain"), name
    assert (status.evidence.path, status.evidence.line) == ("m.py", line)


def test_outside_regions_the_project_regime_decides(tmp_path):
    ctx = context(tmp_path, 'import torch\nwith torch.autocast("cuda"):\n    pass\ny = x.probe()\n')
    assert ctx.region_of(call_named(ctx, "probe")) is None
    ctx = context(tmp_path, "y = x.probe()\n", **{"train.py": "import torch\nmodel = Net().half()\n" + TRAINS + "import m\n"})
    status = precision_model(ctx).fp16_status(call_named(ctx, "probe"))
    assert (status.fp16, status.confidence) == (True, "likely")
    assert status.evidence.path.endswith("train.py") and status.evidence.line == 2


def test_a_with_items_own_call_is_outside_its_block(tmp_path):
    ctx = context(tmp_path, 'import torch\nwith torch.autocast("cuda"):\n    pass\n')
    autocast_call = ctx.nodes(cst.Call)[0]
    assert ctx.region_of(autocast_call) is not None  # documented: the with statement is the region
    # ...but code after the block is not in it
    ctx = context(tmp_path, 'import torch\nwith torch.autocast("cuda"):\n    pass\nx.probe()\n')
    assert ctx.region_of(call_named(ctx, "probe")) is None


# ---- messages name the evidence -------------------------------------------------------------------

def test_lexical_evidence_is_named_in_the_finding(tmp_path):
    root = write_project(tmp_path / "m", {"attn.py": (
        "import torch\n\n"
        "def attend(q, k, mask):\n"
        '    with torch.autocast("cuda"):\n'
        "        scores = q @ k.transpose(-2, -1)\n"
        "        return scores.masked_fill(mask, -1e9)\n")})
    r = run(["check", "--output-format", "json", "--select", "AMP103"], root)
    assert r.rc == 1
    [f] = json.loads(r.out)
    assert f["location"]["row"] == 6 and f["code"] == "AMP103"
    [ev] = f["evidence"]
    assert (ev["filename"], ev["row"]) == (str(root / "attn.py"), 4) and 'torch.autocast("cuda")' in ev["what"]
