"""The precision model: dtype of expressions under CUDA's autocast policy, casts, regimes."""
import textwrap
from pathlib import Path

import libcst as cst

from amplint.context.precision import precision_model
from amplint.engine import build_context
from amplint.project import Project


def dtypes(tmp_path: Path, source: str, precision: str = "auto", extra=None):
    """name -> (dtype, confidence) of the value of every simple assignment in ``source``."""
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in (extra or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(source))
    ctx = build_context(path, "m.py", path.read_bytes(), Project(tmp_path, override=precision))
    pm = precision_model(ctx)
    out = {}
    for a in ctx.nodes(cst.Assign):
        t = a.targets[0].target
        values = [a.value] if isinstance(t, cst.Name) else [e.value for e in a.value.elements] if isinstance(a.value, cst.Tuple) else []
        targets = [t] if isinstance(t, cst.Name) else [e.value for e in t.elements] if isinstance(t, cst.Tuple) else []
        for target, value in zip(targets, values):
            f = pm.dtype_of(value)
            out[target.value] = (f.dtype, f.confidence)
    return out


def test_autocast_policy_inside_a_region(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        import torch.nn.functional as F
        def f(a, b):
            x = a.float()
            with torch.autocast("cuda"):
                mm = x @ x
                e = torch.einsum("ij,jk->ik", x, x)
                s = e.sum(-1)
                sm = F.softmax(e, -1)
                sig = torch.sigmoid(e)
                r = 1 / e
                lin = F.linear(x, x)
                both = e + s
            after = x * 2
    """)
    assert d["x"] == ("float32", "certain")
    assert d["mm"] == ("float16", "certain")
    assert d["e"] == ("float16", "certain")
    assert d["s"][0] == "float32"  # sum is on the fp32 list
    assert d["sm"][0] == "float32"  # softmax too
    assert d["sig"] == ("float16", "certain")  # sigmoid keeps its input's dtype
    assert d["r"][0] == "float32"  # 1 / x is __rtruediv__ (reciprocal): fp32 list
    assert d["lin"][0] == "float16"
    assert d["both"][0] == "float32"  # fp16 + fp32 promotes
    assert d["after"] == ("float32", "certain")  # outside the region, casts decide


def test_disabled_region_and_bf16(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        def f(q, k):
            with torch.autocast("cuda", enabled=False):
                a = q.float() @ k.float()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                b = q @ k
            with torch.autocast("cpu"):
                c = q @ k
    """)
    assert d["a"] == ("float32", "certain")
    assert d["b"] == ("bfloat16", "certain")
    assert d["c"] == ("bfloat16", "certain")


def test_forward_arguments_and_modules_under_fp16_mixed_regime(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        from torch import nn
        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.fc = nn.Linear(dim, dim)
                self.ln = nn.LayerNorm(dim)
                self.scale = nn.Parameter(torch.ones([]))
            def forward(self, x, dim: int, eps=1e-6):
                h = self.fc(x)
                n = self.ln(h)
                q, k = h.chunk(2, dim=-1)
                qq, kk = q, k
                p = self.scale
                arg = x
                d2 = dim
                e2 = eps
                sz = x.size(0)
    """, extra={"train.py": "import torch\nwith torch.autocast('cuda'):\n    y = model(x)\n"})
    assert d["h"] == ("float16", "likely")
    assert d["n"][0] == "float32"
    assert d["qq"][0] == "float16" and d["kk"][0] == "float16"
    assert d["p"][0] == "float32"  # parameters stay float32 under mixed precision
    assert d["arg"] == ("float16", "likely")
    assert d["d2"][0] is None and d["e2"][0] is None and d["sz"][0] is None


def test_pure_half_regime(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        def forward(x, w):
            y = x.sum(-1)
            z = torch.log(y)
    """, extra={"train.py": "model = Net().half()\nloss.backward()\nimport m\n"})
    # no autocast: fp32-list ops stay in their input's dtype
    assert d["y"] == ("float16", "likely")
    assert d["z"] == ("float16", "likely")


def test_fp32_project_knows_nothing_half(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        def forward(x, w):
            y = x @ w
    """)
    assert d["y"][0] is None


def test_rebinding_uses_the_binding_before_the_use(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        def f(x):
            with torch.autocast("cuda"):
                y = x @ x
                y = y.float()
                z = y
                y = y.half()
    """)
    assert d["z"] == ("float32", "certain")
    assert d["y"] == ("float16", "certain")  # the last binding's value


def test_a_projects_own_cast_inputs_decorator_is_a_float32_region(tmp_path):
    d = dtypes(tmp_path, """
        import torch
        from torch import nn
        from .amp import fwd_default_precision
        class Fbank(nn.Module):
            @fwd_default_precision(cast_inputs=torch.float32)
            def forward(self, x, w):
                y = x @ w
    """, precision="fp16-mixed")
    assert d["y"][0] is None or d["y"][0] == "float32"
    d2 = dtypes(tmp_path, """
        import torch
        from torch import nn
        class Fbank(nn.Module):
            def forward(self, x, w):
                y = x @ w
    """, precision="fp16-mixed")
    assert d2["y"][0] == "float16"


HALF_MODEL = """
import torch
from torch import nn
class RewardModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        self.v_head = nn.Linear(64, 1)
    def forward(self, input_ids):
        rewards = self.v_head(self.embed(input_ids)).squeeze(-1)
        return -torch.log(torch.sigmoid(rewards[0] - rewards[1])).mean()
"""
DEEPSPEED_FP16 = """
import deepspeed
from model import RewardModel
def main(ids):
    model = RewardModel()
    engine, *_ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
    loss = engine(ids)
    engine.backward(loss)
    engine.step()
"""


def test_layers_with_half_weights_give_float16_whatever_their_input():
    # DeepSpeed-Chat's reward model: token ids -> Embedding -> Linear -> log(sigmoid); half weights
    from training_util import lines
    assert lines("AMP201", HALF_MODEL, filename="model.py", extra_files={"train.py": DEEPSPEED_FP16}) == [11]
    # near miss: the same model trained in float32
    fp32 = DEEPSPEED_FP16.replace('"fp16": {"enabled": True}', '"fp16": {"enabled": False}')
    assert lines("AMP201", HALF_MODEL, filename="model.py", extra_files={"train.py": fp32}) == []


def test_gradients_of_a_half_model_are_float16():
    # fairscale's OSS grad norm over a pure-half model's parameters: p.grad is float16
    from training_util import lines
    source = """
    import torch
    def train(model, loader, opt):
        model = model.half()
        for x in loader:
            model(x).sum().backward()
            for p in model.parameters():
                p.grad.mul_(1.0 / (p.grad.norm() + 1e-8))
            opt.step()
    """
    assert lines("AMP102", source, filename="train.py") == [8]
    # near miss: the same loop in mixed precision (float32 parameters, float32 gradients)
    mixed = source.replace("model = model.half()", "scaler = torch.amp.GradScaler('cuda')")
    assert lines("AMP102", mixed, filename="train.py") == []


def test_a_lambda_parameter_is_not_taken_for_a_def_parameter():
    # binding_at gives ("param", fn, param) for a def's parameter only; a lambda's has no callers to ask
    import libcst as cst
    from amplint.context.file_context import FileContext
    from amplint.context.precision import precision_model
    source = b"import torch\nf = lambda x, eps: torch.log(x + eps) / x.sum()\n"
    ctx = FileContext("m.py", cst.parse_module(source), source)
    pm = precision_model(ctx)
    x = next(n for n in ctx.nodes(cst.Name) if n.value == "x" and isinstance(ctx.parent(n), cst.BinaryOperation))
    assert pm.binding_at("x", x)[0] == "lambda_param"
    assert pm.dtype_of(x).dtype is None
