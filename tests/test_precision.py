"""Additions to the precision model used by AMP102 / AMP201 / AMP202: bindings as seen from a node,
the class an object being called was built from, and the device of an autocast region."""
import textwrap
from pathlib import Path

import libcst as cst

from amplint.context.precision import precision_model
from amplint.engine import build_context
from amplint.project import Project


def context(tmp_path: Path, source: str, precision: str = "auto"):
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(source))
    return build_context(path, "m.py", path.read_bytes(), Project(tmp_path, override=precision))


def call(ctx, text):
    return next(c for c in ctx.nodes(cst.Call) if ctx.code(c) == text)


def test_value_of_and_binding_at(tmp_path):
    ctx = context(tmp_path, """
        import torch
        def f(z, y):
            p = torch.sigmoid(z)
            a = torch.log(p)
            z = z * 2
            b = torch.log(p)
            q, r = p.chunk(2)
            c = torch.log(q)
    """)
    pm = precision_model(ctx)
    log_c = call(ctx, "torch.log(q)")
    logs = [c for c in ctx.nodes(cst.Call) if ctx.code(c) == "torch.log(p)"]
    assert ctx.code(pm.value_of(logs[0].args[0].value)) == "torch.sigmoid(z)"
    assert ctx.code(pm.value_of(log_c.args[0].value)) == "p.chunk(2)"  # a part of the whole
    sig = call(ctx, "torch.sigmoid(z)")
    # z seen from the sigmoid and from the first log is the parameter; after `z = z * 2` it is not.
    assert pm.binding_at("z", sig) is not None
    assert pm.binding_at("z", logs[0])[0] == "param"
    assert pm.binding_at("z", sig) == pm.binding_at("z", logs[0])
    assert pm.binding_at("z", logs[1]) != pm.binding_at("z", sig)
    assert pm.value_of(sig.args[0].value) is None  # a parameter has no assigned expression


def test_module_class_of_attribute_and_local(tmp_path):
    ctx = context(tmp_path, """
        import torch.nn as nn
        class L(nn.Module):
            def __init__(self):
                super().__init__()
                self.crit = nn.BCELoss()
            def forward(self, p, y):
                crit2 = nn.BCEWithLogitsLoss()
                return self.crit(p, y) + crit2(p, y)
    """)
    pm = precision_model(ctx)
    assert pm.module_class(call(ctx, "self.crit(p, y)").func) == "torch.nn.BCELoss"
    assert pm.module_class(call(ctx, "crit2(p, y)").func) == "torch.nn.BCEWithLogitsLoss"


def test_autocast_device(tmp_path):
    ctx = context(tmp_path, """
        import torch
        from torch.cuda.amp import autocast
        def f(x, dev):
            with torch.autocast("cpu"):
                a = x.sum()
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                b = x.sum()
            with autocast():
                c = x.sum()
            with torch.autocast(dev.type):
                d = x.sum()
            with torch.cpu.amp.autocast():
                e = x.sum()
    """)
    pm = precision_model(ctx)
    sums = [c for c in ctx.nodes(cst.Call) if ctx.code(c) == "x.sum()"]
    got = [(s.active, s.dtype, s.device) for s in map(pm.autocast_at, sums)]
    assert got == [
        (True, "bfloat16", "cpu"),
        (True, "bfloat16", "cuda"),
        (True, "float16", "cuda"),
        (True, "float16", None),  # not a literal: unknown (callers assume cuda)
        (True, "bfloat16", "cpu"),
    ]


def test_explicit_dtype_argument_wins(tmp_path):
    ctx = context(tmp_path, """
        import torch
        import torch.nn.functional as F
        def f(x):
            h = x.half()
            a = F.softmax(h, dim=-1, dtype=torch.float32)
            b = h.softmax(-1, dtype=torch.float)
            c = h.sum(dtype=torch.float32)
            d = F.softmax(h, dim=-1)
            with torch.autocast("cuda"):
                e = torch.log_softmax(h, -1, dtype=torch.float16)
    """)
    pm = precision_model(ctx)
    got = {ctx.code(a.targets[0].target): pm.dtype_of(a.value).dtype for a in ctx.nodes(cst.Assign)}
    assert got == {"h": "float16", "a": "float32", "b": "float32", "c": "float32", "d": "float16",
                   "e": "float16"}


def test_python_number_keeps_the_tensor_fact(tmp_path):
    ctx = context(tmp_path, """
        import torch
        def f(x):
            with torch.autocast("cuda"):
                h = torch.mm(x, x)
                a = h + 1e-8
                b = 2 * h
                c = h - 1
    """)
    pm = precision_model(ctx)
    got = {ctx.code(a.targets[0].target): (pm.dtype_of(a.value).dtype, pm.dtype_of(a.value).confidence)
           for a in ctx.nodes(cst.Assign)}
    assert got["h"] == ("float16", "certain")
    assert got["a"] == got["b"] == got["c"] == ("float16", "certain")


def test_helper_called_only_with_autocast_disabled_is_not_under_autocast(tmp_path):
    # timm's LiteMLA: forward calls self._attn inside autocast(enabled=False); elsewhere (the
    # torchscript branch) outside any region. _attn's matmuls run in its inputs' dtype.
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        def step(model, x, scaler):
            with torch.autocast("cuda"):
                loss = model(x).mean()
            scaler.scale(loss).backward()
    """))
    ctx = context(tmp_path, """
        import torch
        class LiteMLA(torch.nn.Module):
            def _attn(self, q, k, v):
                q, k, v = q.float(), k.float(), v.float()
                out = q @ (k.transpose(-1, -2) @ v)
                return out
            def _other(self, q, k):
                return q @ k
            def forward(self, q, k, v):
                if not torch.jit.is_scripting():
                    with torch.autocast(device_type=v.device.type, enabled=False):
                        out = self._attn(q, k, v)
                else:
                    out = self._attn(q, k, v)
                with torch.autocast("cuda"):
                    self._other(q, k)
                return out + self._other(q, k)
    """)
    pm = precision_model(ctx)
    attn = next(b for b in ctx.nodes(cst.BinaryOperation) if ctx.code(b) == "q @ (k.transpose(-1, -2) @ v)")
    state = pm.autocast_at(attn)
    assert not state.active and "enabled=False" in str(state.evidence)
    assert pm.dtype_of(attn).dtype == "float32"
    # _other is also called from an enabled region: the project's autocast still applies
    other = next(b for b in ctx.nodes(cst.BinaryOperation) if ctx.code(b) == "q @ k")
    assert pm.autocast_at(other).active


def test_arithmetic_of_python_numbers_is_not_a_float32_tensor(tmp_path):
    # autocast's float32 list has __pow__ / __rtruediv__, but for tensors: a scale computed from
    # numbers must not widen the float16 product it multiplies.
    ctx = context(tmp_path, """
        import math
        import torch
        def f(q, k, d, x):
            with torch.autocast("cuda"):
                s = d ** -0.5
                t = 1 / math.sqrt(d)
                a = (q @ k) * s
                b = (q @ k) * t
                r = 1 / torch.mm(x, x)
                p = torch.mm(x, x) ** 2
    """)
    pm = precision_model(ctx)
    got = {ctx.code(a.targets[0].target): pm.dtype_of(a.value).dtype for a in ctx.nodes(cst.Assign)}
    assert got == {"s": None, "t": None, "a": "float16", "b": "float16", "r": "float32", "p": "float32"}


def test_mask_and_index_parameters_are_not_assumed_half(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nmodel = Net().cuda().half()\nloss = model(x).sum()\nloss.backward()\n"
                                       "import m\n")
    ctx = context(tmp_path, """
        import torch
        def f(x, mask, attention_mask, input_ids, labels, lengths):
            a = x
            b = mask
            c = attention_mask
            d = input_ids
            e = labels
            g = lengths
    """)
    pm = precision_model(ctx)
    got = {ctx.code(a.targets[0].target): pm.dtype_of(a.value).dtype for a in ctx.nodes(cst.Assign)}
    assert got == {"a": "float16", "b": None, "c": None, "d": None, "e": None, "g": None}
