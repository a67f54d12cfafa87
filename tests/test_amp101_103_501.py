"""AMP101, AMP103 and AMP501: true positives in several shapes, and named near misses."""
import textwrap

import pytest

from conftest import HALF_TRAINING, codes

def only(code, source, **kw):
    return [c for c in codes(textwrap.dedent(source), **kw) if c == code]


# ---- AMP101 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n",
    "import torch as th\nopt = th.optim.Adam(model.parameters(), eps=1e-8)\n",
    "from torch.optim import RMSprop as R\nopt = R(params, 0.01, 0.99, 1e-8)\n",
    "from torch import optim\nopt = optim.Adagrad(params)\n",
    "import torch\nEPS = 1e-10\nopt = torch.optim.NAdam(\n    params,\n    eps=EPS,\n)\n",
    "from torch.optim import Adadelta\nopt = Adadelta(params)\n",  # default 1e-6 is subnormal
])
def test_amp101_flags_tiny_eps_on_half_parameters(source):
    assert only("AMP101", source, extra_files={"train.py": HALF_TRAINING}) == ["AMP101"]


def test_amp101_message_names_the_evidence(lint):
    findings = lint("import torch\nopt = torch.optim.Adam(params)\n", extra_files={"train.py": HALF_TRAINING})
    msg = next(f.explained() for f in findings if f.code == "AMP101")
    assert "1e-8 rounds to 0 in float16" in msg and "train.py:3" in msg


@pytest.mark.parametrize("name, source, extra", [
    ("mixed precision: fp32 parameters, optimizer runs in fp32",
     "import torch\nscaler = torch.amp.GradScaler('cuda')\nopt = torch.optim.AdamW(params)\n", {}),
    ("eps already fp16-normal", "import torch\nopt = torch.optim.AdamW(params, eps=1e-4)\n", {"train.py": HALF_TRAINING}),
    ("SGD has no eps", "import torch\nopt = torch.optim.SGD(params, lr=0.1)\n", {"train.py": HALF_TRAINING}),
    ("half() only in an inference script", "import torch\nopt = torch.optim.AdamW(params)\n",
     {"export.py": "model = Net().half()\ntorch.onnx.export(model, x, 'm.onnx')\n"}),
    ("a tensor's .half(), not a model's", "import torch\nx = batch.half()\nopt = torch.optim.AdamW(params)\nloss.backward()\n", {}),
    ("bf16 parameters keep float32's range", "import torch\nmodel = model.to(torch.bfloat16)\nopt = torch.optim.AdamW(params)\nloss.backward()\n", {}),
    ("not torch's Adam", "from mylib import Adam\nopt = Adam(params)\n", {"train.py": HALF_TRAINING}),
])
def test_amp101_near_misses(name, source, extra):
    assert only("AMP101", source, extra_files=extra) == [], name


def test_amp101_precision_override():
    src = "import torch\nopt = torch.optim.AdamW(params)\n"
    assert only("AMP101", src, precision="fp16") == ["AMP101"]
    assert only("AMP101", src, precision="fp16-mixed") == []


# ---- AMP103 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    # masked_fill on an fp16 matmul output inside autocast
    """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda"):
            s = q @ k.transpose(-1, -2)
            return s.masked_fill(mask, -1e9)
    """,
    # in-place, constant bound in the module
    """
    import torch as th
    NEAR_INF = 1e20
    @th.autocast("cuda")
    def f(q, k, mask):
        s = th.bmm(q, k)
        s.masked_fill_(mask, -NEAR_INF)
        return s
    """,
    # x[mask] = c
    """
    import torch
    def f(q, k, mask):
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            s = torch.einsum("bhqd,bhkd->bhqk", q, k)
            s[mask] = -1e4 * 10
            return s
    """,
    # torch.where with the constant, and a forward argument in an fp16-mixed project
    """
    import torch
    class M(torch.nn.Module):
        def forward(self, scores, mask):
            return torch.where(mask, scores, -1e9)
    with torch.autocast("cuda"):
        out = M()(x, m)
    """,
    # torch.full with dtype=x.dtype
    """
    import torch
    def f(x):
        with torch.autocast("cuda"):
            y = torch.nn.functional.linear(x, w)
            return torch.full(y.shape, -1e9, dtype=y.dtype)
    """,
])
def test_amp103_flags_overflowing_constants(source):
    assert only("AMP103", source) == ["AMP103"]


def test_amp103_constant_imported_from_another_module():
    src = """
    import torch
    from .consts import NEAR_INF
    def f(q, k, mask):
        with torch.autocast("cuda"):
            return (q @ k).masked_fill(mask, -NEAR_INF)
    """
    extra = {"pkg/__init__.py": "", "pkg/consts.py": "NEAR_INF = float('1e20')\n"}
    assert only("AMP103", src, filename="pkg/attn.py", extra_files=extra) == ["AMP103"]


@pytest.mark.parametrize("name, source", [
    ("float('-inf') is representable", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda"):
            return (q @ k).masked_fill(mask, float("-inf"))
    """),
    ("finfo min is the fix", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda"):
            s = q @ k
            return s.masked_fill(mask, torch.finfo(s.dtype).min)
    """),
    ("-1e4 fits float16", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda"):
            return (q @ k).masked_fill(mask, -1e4)
    """),
    ("float32 after .float()", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda"):
            s = (q @ k).float()
            return s.masked_fill(mask, -1e9)
    """),
    ("autocast disabled with float32 operands", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda", enabled=False):
            s = q.float() @ k.float()
            return s.masked_fill(mask, -1e9)
    """),
    ("torch.full without dtype makes float32", """
    import torch
    def f(x):
        with torch.autocast("cuda"):
            return torch.full((3, 3), -1e9)
    """),
    ("bf16 autocast has float32's range", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return (q @ k).masked_fill(mask, -1e9)
    """),
    ("cpu autocast defaults to bf16", """
    import torch
    def f(q, k, mask):
        with torch.autocast("cpu"):
            return (q @ k).masked_fill(mask, -1e9)
    """),
    ("fp32 project", """
    import torch
    def f(scores, mask):
        return scores.masked_fill(mask, -1e9)
    """),
])
def test_amp103_near_misses(name, source):
    # trained in float32 by an entry point (a lone library file gets the library policy: below)
    fp32 = {"train.py": "import snippet\ndef main(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n"}
    assert only("AMP103", source, extra_files=fp32) == [], name


def test_amp103_library_code_under_any_float16_use():
    # GAU-alpha / linformer: a package with no training of its own; its users train in fp16
    source = """
    import torch
    from torch import nn
    class Attention(nn.Module):
        def forward(self, q, k, mask):
            scores = q @ k.transpose(-2, -1)
            return scores.masked_fill(mask == 0, -1e12).softmax(-1)
    """
    from amplint.api import lint_source
    [f] = [f for f in lint_source(textwrap.dedent(source)) if f.code == "AMP103"]
    assert "any float16 use" in f.message


# ---- AMP501 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, n", [
    ("import torch\nwith torch.cuda.amp.autocast():\n    pass\n", 1),
    ("from torch.cuda.amp import autocast, GradScaler\ns = GradScaler()\nwith autocast(dtype=torch.float16):\n    pass\n", 2),
    ("import torch.cuda.amp as amp\nwith amp.autocast():\n    pass\n", 1),
    ("from torch.cuda.amp import custom_fwd, custom_bwd\n@custom_fwd\ndef f(ctx, x): pass\n@custom_bwd\ndef g(ctx, x): pass\n", 2),
    ("import torch\nwith torch.cpu.amp.autocast():\n    pass\n", 1),
    ("from torch.cuda import amp\nscaler = amp.GradScaler(enabled=use_amp)\n", 1),
])
def test_amp501_flags_deprecated_uses(source, n):
    assert only("AMP501", source) == ["AMP501"] * n


@pytest.mark.parametrize("name, source", [
    ("new API", "import torch\nwith torch.amp.autocast('cuda'):\n    pass\ns = torch.amp.GradScaler('cuda')\n"),
    ("torch.autocast", "import torch\nwith torch.autocast('cuda'):\n    pass\n"),
    ("import without use is not reported twice", "from torch.cuda.amp import autocast\n"),
    ("a local named autocast", "def autocast():\n    pass\nwith autocast():\n    pass\n"),
    ("a keyword named autocast", "from torch.cuda.amp import autocast\nf(autocast=True)\n"),
])
def test_amp501_near_misses(name, source):
    assert only("AMP501", source) == [], name


@pytest.mark.parametrize("name, source", [
    ("try the new API, fall back in except", """
    import torch
    try:
        scaler = torch.amp.GradScaler(device="cuda")
    except (AttributeError, TypeError):
        scaler = torch.cuda.amp.GradScaler()
    """),
    ("conditional expression on a version flag", """
    import torch
    scaler = torch.amp.GradScaler("cuda") if TORCH_2_4 else torch.cuda.amp.GradScaler()
    """),
    ("if / else on a version flag", """
    import torch
    def autocast(enabled):
        if TORCH_1_13:
            return torch.amp.autocast("cuda", enabled=enabled)
        else:
            return torch.cuda.amp.autocast(enabled)
    """),
])
def test_amp501_version_fallbacks_are_not_reported(name, source):
    assert only("AMP501", source) == [], name


def test_amp501_still_reports_an_except_branch_without_the_new_api():
    src = """
    import torch
    try:
        import apex
    except ImportError:
        scaler = torch.cuda.amp.GradScaler()
    """
    assert only("AMP501", src) == ["AMP501"]


@pytest.mark.parametrize("name, source", [
    ("old API in the if-body of a version check, new in else", """
    import torch
    if TORCH_VERSION < (2, 4):
        scaler = torch.cuda.amp.GradScaler(enabled=True)
    else:
        scaler = torch.GradScaler("cuda", enabled=True)
    """),
    ("elif chain", """
    import torch
    def ctx(enabled):
        if OLD_TORCH:
            return torch.cuda.amp.autocast(enabled=enabled)
        elif HAS_NPU:
            return npu_autocast()
        else:
            return torch.autocast("cuda", enabled=enabled)
    """),
    ("a name bound by a version-gated import", """
    from typing import Optional
    if NEW_TORCH:
        from torch.amp import GradScaler
    else:
        from torch.cuda.amp import GradScaler
    def save(scaler: Optional[GradScaler] = None):
        pass
    """),
])
def test_amp501_version_gates_either_way(name, source):
    assert only("AMP501", source) == [], name


MOVED = """
import torch
def main(model, loader):
    optimizer = torch.optim.Adam({params}, lr=1e-3)
    for x in loader:
        loss = model(x.cuda().half()).sum()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("params", ["model.cuda().half().parameters()", "model.to(device).half().parameters()"])
def test_amp101_a_model_moved_then_cast_in_the_optimizer_call(params):
    assert only("AMP101", MOVED.format(params=params), filename="train.py") == ["AMP101"]


@pytest.mark.parametrize("name, params", [
    ("a tensor moved and cast, not a model", "batch.cuda().half().requires_grad_()"),
    ("a model moved, not cast", "model.cuda().parameters()"),
])
def test_amp101_moved_near_misses(name, params):
    assert only("AMP101", MOVED.format(params=params), filename="train.py") == [], name


# ---- AMP103: a float32 limit written into a float16 tensor -------------------------------------------
FINFO_MINER = """
import torch


def mine(embeddings, ref_emb, mask):
    mat = torch.matmul(embeddings, ref_emb.t())
    return mat.masked_fill(mask, LIMIT).argsort(dim=1)


def main(model, loader, opt):
    scaler = torch.amp.GradScaler("cuda")
    for x, mask in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            emb = model(x)
            order = mine(emb.float(), emb.float(), mask)
            loss = emb[order[:, 0]].pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


@pytest.mark.parametrize("limit, reported", [
    ("torch.finfo(torch.float32).max", True),  # 3.4e38 into the float16 product
    ("torch.finfo(embeddings.dtype).max", True),  # pytorch-metric-learning: embeddings are float32
    ("torch.finfo(mat.dtype).max", False),  # the limit of the tensor written to
    ("torch.finfo(torch.float16).min", False),
])
def test_a_float32_limit_written_into_a_float16_product(limit, reported):
    assert only("AMP103", FINFO_MINER.replace("LIMIT", limit)) == (["AMP103"] if reported else [])
