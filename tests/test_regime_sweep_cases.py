"""Regime cases learnt from the real-code sweep (benchmarks/RESULTS.md), as small programs."""
import textwrap

from amplint.api import lint_source

from conftest import codes

# An optimizer built in a module of its own (the training entry point is elsewhere).
OPTIMIZER = "import torch\nopt = torch.optim.AdamW(model.parameters())\n"


def test_half_copy_for_a_checkpoint_is_not_half_training():
    # ultralytics: ckpt = {"model": deepcopy(de_parallel(self.model)).half(), ...}; torch.save(ckpt, f)
    trainer = textwrap.dedent("""
        import torch
        from copy import deepcopy
        def save(self):
            ckpt = {"epoch": self.epoch, "model": deepcopy(self.model).half()}
            torch.save(ckpt, "last.pt")
            torch.save(self.ema.half(), "ema.pt")
    """)
    assert "AMP101" not in codes(OPTIMIZER, extra_files={"trainer.py": trainer})


def test_model_half_statement_is_half_training():
    assert "AMP101" in codes(OPTIMIZER, extra_files={"trainer.py": "model.half()\nloss.backward()\n"})
    assert "AMP101" in codes(OPTIMIZER, extra_files={"trainer.py": "model = Net().to(torch.float16)\nloss.backward()\n"})


def test_evidence_in_tests_does_not_make_the_project_fp16():
    # timm: a test runs a model under autocast; the library itself never says fp16
    helper = textwrap.dedent("""
        import torch
        def ratio(x, y):
            return x / (y + 1e-8)
    """)
    test = "import torch\ndef test_amp(model, x):\n    with torch.autocast('cuda'):\n        model(x)\n"
    # (the library policy still looks at the helper as under any float16 use: that finding cites no test)
    found = [f for f in lint_source(helper, extra_files={"tests/test_amp.py": test}) if f.code == "AMP102"]
    assert all("any float16 use" in f.message and "test_amp" not in f.explained() for f in found)
    assert codes(helper, extra_files={"train.py": test.replace("def test_amp", "def step")}) == ["AMP102"]


def test_regime_does_not_reach_numpy_data_code_or_tests():
    data = textwrap.dedent("""
        import numpy as np
        import torch
        def sampling_ratios(sizes, alpha):
            probs = np.asarray(sizes, dtype=np.float64)
            smoothed = probs ** alpha
            return smoothed / smoothed.sum()
    """)
    half = {"train.py": "model = Net().half()\nloss.backward()\nimport snippet, losses\n"}  # the training's code
    assert codes(data, extra_files=half) == []
    reference = "import torch\ndef reference(x, y):\n    return torch.log(x / (y.sum() + 1e-8))\n"
    assert codes(reference, filename="tests/test_ref.py", extra_files=half) == []
    assert codes(reference, filename="losses.py", extra_files=half) != []


def test_partial_autocast_is_fp16_evidence():
    # timm's train.py: amp_autocast = partial(torch.autocast, device_type=device.type, dtype=amp_dtype)
    train = ("import torch\nfrom functools import partial\n"
             "amp_autocast = partial(torch.autocast, device_type=device.type, dtype=amp_dtype)\n")
    layer = "import torch\nfrom torch import nn\nclass A(nn.Module):\n    def forward(self, x, y):\n        return x / (y + 1e-8)\n"
    assert codes(layer, extra_files={"train.py": train}) == ["AMP102"]
    bf16 = train.replace("dtype=amp_dtype", "dtype=torch.bfloat16")
    assert codes(layer, extra_files={"train.py": bf16}) == []


def test_k_is_a_tensor_argument_in_attention_code():
    src = textwrap.dedent("""
        import torch
        from torch import nn
        class Linear(nn.Module):
            def forward(self, q, k, v):
                return 1 / (torch.einsum("nld,nd->nl", q, k.sum(dim=1)) + 1e-8)
    """)
    assert "AMP203" in codes(src, precision="fp16")


def test_export_script_with_mobile_optimizer_is_not_training():
    # yolov5 export.py: model.half() for export; 'optimizer' only inside torch.utils.mobile_optimizer
    export = ("import torch\nfrom torch.utils.mobile_optimizer import optimize_for_mobile\n"
              "model.half()\nts = optimize_for_mobile(torch.jit.trace(model, im))\n")
    assert "AMP101" not in codes(OPTIMIZER, extra_files={"export.py": export})


def test_half_copy_of_an_inference_pipeline_is_not_half_training():
    # diffusers dreambooth: validation runs pipeline.transformer.to(torch.float16)
    script = ("import torch\npipeline.transformer.to(torch.float16)\nema_model.half()\n"
              "loss.backward()\noptimizer.step()\n")
    assert "AMP101" not in codes(OPTIMIZER, extra_files={"validate.py": script})


def test_helper_called_only_outside_autocast_is_not_under_autocast():
    src = textwrap.dedent("""
        import torch
        def ratio(x, y):
            return x / (y + 1e-8)
        def train_step(model, x):
            with torch.autocast("cuda"):
                out = model(x)
            return out
        def evaluate(a, b):
            return ratio(a, b)
    """)
    assert codes(src) == []
    called_inside = src.replace("out = model(x)", "out = ratio(model(x), x)")
    assert codes(called_inside) == ["AMP102"]


def test_a_grad_scaler_alone_means_fp16_autocast():
    # timm's library: utils/cuda.py builds the GradScaler; the autocast is in train.py
    scaler = "import torch\nclass NativeScaler:\n    def __init__(self):\n        self._scaler = torch.amp.GradScaler('cuda')\n"
    layer = "import torch\nfrom torch import nn\nclass A(nn.Module):\n    def forward(self, x, y):\n        return x / (y + 1e-8)\n"
    assert codes(layer, extra_files={"utils/cuda.py": scaler}) == ["AMP102"]


def test_half_copy_assigned_then_saved_is_a_checkpoint():
    # ultralytics MultiTrainer: model = deepcopy(self.model).half(); torch_save({"model": model, ...}, f)
    trainer = textwrap.dedent("""
        import torch
        from copy import deepcopy
        class MultiTrainer:
            def save_base(self, path):
                model = deepcopy(self.model).half()
                strip_qat(model)
                torch_save({"model": model, "train_args": self.args}, path)
            def step(self):
                self.loss.backward()
    """)
    assert "AMP101" not in codes(OPTIMIZER, extra_files={"trainer.py": trainer})
    # (a function named save_* is itself an export role: the positive case is a setup function)
    trains = trainer.replace('torch_save({"model": model, "train_args": self.args}, path)', "self.model = model") \
        .replace("def save_base", "def setup_model")
    assert "AMP101" in codes(OPTIMIZER, extra_files={"trainer.py": trains})
