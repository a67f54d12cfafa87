"""The fixes of each rule: every rule page's Example, fixed, is its Use instead; and the fixes of
AMP101, AMP103 and AMP501 in the shapes real code has, with the cases that get no fix."""
import tempfile
import textwrap
from pathlib import Path

import pytest

from amplint.api import lint_source
from amplint.config import Settings
from amplint.docs import examples, read_page
from amplint.fixes import fix_paths
from amplint.rules import all_rules

from conftest import HALF_TRAINING

FIXABLE = sorted(code for code, rule in all_rules().items() if rule.fix_safety != "none")


def fix(source, extra_files=None, unsafe=True, **settings):
    """``source`` as a lone file of a fresh project (plus ``extra_files``), fixed: (text, run)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'snippet'\n")
        for name, text in (extra_files or {}).items():
            (root / name).write_text(text)
        path = root / "snippet.py"
        path.write_text(source, encoding="utf-8")
        run = fix_paths([path], Settings(**settings), unsafe=unsafe)
        return path.read_text(encoding="utf-8"), run


@pytest.mark.parametrize("code", FIXABLE)
def test_page_example_fixed_is_use_instead(code):
    page = read_page(code)
    bad, good = examples(page, "Example"), examples(page, "Use instead")
    assert len(bad) == len(good) >= 1, f"{code}: pair each Example with its Use instead"
    for before, after in zip(bad, good):
        fixed, run = fix(before, extend_select=[code])  # an off-by-default rule runs when named
        assert run.errors == []
        assert fixed == after, f"{code}: the fixed Example differs from Use instead"
        assert run.fixed >= 1


@pytest.mark.parametrize("code", FIXABLE)
def test_a_rule_that_promises_a_fix_offers_one(code):
    """The rule's fix safety and its findings agree: every finding on the page's Example has a
    fix, and a rule marked safe offers only safe ones."""
    example = examples(read_page(code), "Example")[0]
    findings = [f for f in lint_source(example, select=("ALL", code)) if f.code == code]
    assert findings and all(f.fix is not None for f in findings), code
    if all_rules()[code].fix_safety == "safe":
        assert {f.fix.applicability for f in findings} == {"safe"}, code


def check_fix(source, expected, extra_files=None, **settings):
    fixed, run = fix(textwrap.dedent(source), extra_files, **settings)
    assert run.errors == []
    assert fixed == textwrap.dedent(expected)
    # what was fixed is gone, and fixing again changes nothing
    again, run2 = fix(fixed, extra_files, **settings)
    assert again == fixed and run2.fixed == 0
    return run


# ---- AMP501 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
     'import torch\nwith torch.amp.autocast("cuda"):\n    pass\n'),
    ("import torch as th\nwith th.cuda.amp.autocast(dtype=th.bfloat16):\n    pass\n",
     'import torch as th\nwith th.amp.autocast("cuda", dtype=th.bfloat16):\n    pass\n'),
    # the old API's positional arguments become keywords: the new first positional is the device
    ("import torch\nwith torch.cuda.amp.autocast(args.amp):\n    pass\n",
     'import torch\nwith torch.amp.autocast("cuda", enabled=args.amp):\n    pass\n'),
    ("import torch\nwith torch.cuda.amp.autocast(True, torch.float16, False):\n    pass\n",
     'import torch\nwith torch.amp.autocast("cuda", enabled=True, dtype=torch.float16, cache_enabled=False):\n    pass\n'),
    ("from torch.cuda.amp import autocast, GradScaler\nscaler = GradScaler()\nwith autocast(enabled=use_amp):\n    pass\n",
     'from torch.amp import autocast, GradScaler\nscaler = GradScaler("cuda")\nwith autocast("cuda", enabled=use_amp):\n    pass\n'),
    ("from torch.cuda.amp import autocast as ac\n\n@ac()\ndef f(x):\n    return x\n",
     'from torch.amp import autocast as ac\n\n@ac("cuda")\ndef f(x):\n    return x\n'),
    ("import torch.cuda.amp as amp\nscaler = amp.GradScaler()\nwith amp.autocast():\n    pass\n",
     'import torch.amp as amp\nscaler = amp.GradScaler("cuda")\nwith amp.autocast("cuda"):\n    pass\n'),
    ("from torch.cuda import amp\nscaler = amp.GradScaler(enabled=use_amp)\n",
     'from torch import amp\nscaler = amp.GradScaler("cuda", enabled=use_amp)\n'),
    ("from torch.cuda.amp.grad_scaler import GradScaler\ns = GradScaler()\n",
     'from torch.amp import GradScaler\ns = GradScaler("cuda")\n'),
    # GradScaler's old positional order follows the device in the new one
    ("import torch\ns = torch.cuda.amp.GradScaler(2.0**16)\n",
     'import torch\ns = torch.amp.GradScaler("cuda", 2.0**16)\n'),
    ("import torch\nwith torch.cpu.amp.autocast():\n    pass\ns = torch.cpu.amp.GradScaler()\n",
     'import torch\nwith torch.amp.autocast("cpu"):\n    pass\ns = torch.amp.GradScaler("cpu")\n'),
    ("""\
     from torch.cuda.amp import custom_fwd, custom_bwd

     class Op(torch.autograd.Function):
         @staticmethod
         @custom_fwd
         def forward(ctx, x):
             return x

         @staticmethod
         @custom_fwd(cast_inputs=torch.float32)
         def other(ctx, x):
             return x

         @staticmethod
         @custom_bwd  # gradients
         def backward(ctx, g):
             return g
     """, """\
     from torch.amp import custom_fwd, custom_bwd

     class Op(torch.autograd.Function):
         @staticmethod
         @custom_fwd(device_type="cuda")
         def forward(ctx, x):
             return x

         @staticmethod
         @custom_fwd(device_type="cuda", cast_inputs=torch.float32)
         def other(ctx, x):
             return x

         @staticmethod
         @custom_bwd(device_type="cuda")  # gradients
         def backward(ctx, g):
             return g
     """),
    # multi-line calls keep one argument per line and the trailing comma
    ("import torch\nscaler = torch.cuda.amp.GradScaler(\n    init_scale=1024,\n    growth_interval=100,\n)\n",
     'import torch\nscaler = torch.amp.GradScaler(\n    "cuda",\n    init_scale=1024,\n    growth_interval=100,\n)\n'),
    # an edit inside another edit of the same fix
    ("from torch.cuda.amp import autocast, GradScaler\n\ndef f():\n    with autocast(enabled=GradScaler().is_enabled()):\n        pass\n",
     'from torch.amp import autocast, GradScaler\n\ndef f():\n    with autocast("cuda", enabled=GradScaler("cuda").is_enabled()):\n        pass\n'),
    # the import cannot move as a whole (another name from it, a bare reference): fixed in place
    ("import torch\nfrom torch.cuda import amp, synchronize\nscaler = amp.GradScaler()\nsynchronize()\n",
     'import torch\nfrom torch.cuda import amp, synchronize\nscaler = torch.amp.GradScaler("cuda")\nsynchronize()\n'),
    ("from torch import nn\nfrom torch.cuda.amp import autocast\nmake = autocast\nwith autocast():\n    pass\n",
     'from torch import nn\nfrom torch.cuda.amp import autocast\nimport torch\n\nmake = autocast\nwith torch.amp.autocast("cuda"):\n    pass\n'),
    ("import torch\nscaler: torch.cuda.amp.GradScaler = make()\n",
     "import torch\nscaler: torch.amp.GradScaler = make()\n"),
])
def test_amp501_fix(source, expected):
    check_fix(source, expected)


@pytest.mark.parametrize("name, source", [
    ("*args may hold enabled/dtype: their keywords are unknown",
     "from torch.cuda.amp import autocast\nwith autocast(*a):\n    pass\n"),
    ("a bare reference cannot take the device",
     "import torch\nmake = torch.cuda.amp.autocast\n"),
])
def test_amp501_no_fix(name, source):
    findings = [f for f in lint_source(source) if f.code == "AMP501"]
    assert findings and all(f.fix is None for f in findings), name
    fixed, _ = fix(source)
    assert fixed == source, name


def test_amp501_try_except_import_fallback_is_neither_reported_nor_fixed():
    # the old spelling is kept on purpose: the name may be bound to either API
    source = "try:\n    from torch.amp import autocast\nexcept ImportError:\n    from torch.cuda.amp import autocast\nwith autocast():\n    pass\n"
    assert [f for f in lint_source(source) if f.code == "AMP501"] == []
    fixed, _ = fix(source)
    assert fixed == source


# ---- AMP101 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n",
     "import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)\n"),
    ("import torch as th\nopt = th.optim.Adam(model.parameters(), eps=1e-8)  # tuned\n",
     "import torch as th\nopt = th.optim.Adam(model.parameters(), eps=1e-4)  # tuned\n"),
    ("from torch.optim import RMSprop as R\nopt = R(params, 0.01, 0.99, 1e-8)\n",
     "from torch.optim import RMSprop as R\nopt = R(params, 0.01, 0.99, 1e-4)\n"),
    ("from torch import optim\nopt = optim.Adagrad(params)\n",
     "from torch import optim\nopt = optim.Adagrad(params, eps=1e-4)\n"),
    ("import torch\nopt = torch.optim.Adam(\n    params,\n    lr=1e-3,\n)\n",
     "import torch\nopt = torch.optim.Adam(\n    params,\n    lr=1e-3,\n    eps=1e-4,\n)\n"),
    ("import torch\nopt = torch.optim.Adam(\n    params,\n    lr=1e-3\n)\n",
     "import torch\nopt = torch.optim.Adam(\n    params,\n    lr=1e-3,\n    eps=1e-4\n)\n"),
    # a name keeps working as a knob: only values below the safe eps are raised
    ("import torch\nEPS = 1e-10\nopt = torch.optim.NAdam(params, eps=EPS)\n",
     "import torch\nEPS = 1e-10\nopt = torch.optim.NAdam(params, eps=max(EPS, 1e-4))\n"),
    ("import torch\n\ndef build(params, eps=1e-8):\n    return torch.optim.Adam(params, eps=eps)\n",
     "import torch\n\ndef build(params, eps=1e-8):\n    return torch.optim.Adam(params, eps=max(eps, 1e-4))\n"),
])
def test_amp101_fix(source, expected):
    check_fix(source, expected, {"train.py": HALF_TRAINING})


def test_amp101_fix_uses_the_configured_safe_eps():
    check_fix("import torch\nopt = torch.optim.AdamW(params, eps=1e-8)\n",
              "import torch\nopt = torch.optim.AdamW(params, eps=2e-4)\n", {"train.py": HALF_TRAINING}, safe_eps=2e-4)


@pytest.mark.parametrize("call", ["torch.optim.Adam(params, **cfg)", "torch.optim.Adam(*args)",
                                  "torch.optim.RMSprop(params, lr, *rest)"])
def test_amp101_unpacked_arguments_may_pass_eps(call):
    # near miss, not only for the fix: the eps may be in **cfg / *args
    src = f"import torch\nopt = {call}\n"
    assert [f.code for f in lint_source(src, extra_files={"train.py": HALF_TRAINING})] == []


# ---- AMP103 --------------------------------------------------------------------------------------
def in_autocast(body):
    return "import torch\n\ndef f(q, k, mask, x):\n    with torch.autocast('cuda'):\n        s = q @ k\n" + \
        "".join(f"        {line}\n" for line in body.splitlines())


@pytest.mark.parametrize("body, expected", [
    ("s = s.masked_fill(mask, -1e9)", "s = s.masked_fill(mask, torch.finfo(s.dtype).min)"),
    ("s.masked_fill_(mask, value=-1e20)", "s.masked_fill_(mask, value=torch.finfo(s.dtype).min)"),
    ("s.fill_(1e5)", "s.fill_(torch.finfo(s.dtype).max)"),
    ("t = torch.masked_fill(s, mask, -1e9)", "t = torch.masked_fill(s, mask, torch.finfo(s.dtype).min)"),
    ("t = torch.where(mask, s, -1e9)", "t = torch.where(mask, s, torch.finfo(s.dtype).min)"),
    ("t = torch.where(mask, -1e9, s)", "t = torch.where(mask, torch.finfo(s.dtype).min, s)"),
    ("t = torch.full_like(s, -1e9)", "t = torch.full_like(s, torch.finfo(s.dtype).min)"),
    ("s[mask] = -1e9", "s[mask] = torch.finfo(s.dtype).min"),
    ("s = s.masked_fill(mask, -(1e4 * 10))  # why", "s = s.masked_fill(mask, torch.finfo(s.dtype).min)  # why"),
])
def test_amp103_fix(body, expected):
    check_fix(in_autocast(body), in_autocast(expected))


def test_amp103_fix_for_torch_full_uses_its_dtype():
    check_fix("import torch\nbias = torch.full((4, 4), -1e9, dtype=torch.float16)\n",
              "import torch\nbias = torch.full((4, 4), torch.finfo(torch.float16).min, dtype=torch.float16)\n")


def test_amp103_fix_uses_the_torch_alias():
    src = "import torch as th\n\ndef f(q, k, mask):\n    with th.autocast('cuda'):\n        s = q @ k\n        return s.masked_fill(mask, -1e9)\n"
    check_fix(src, src.replace("-1e9", "th.finfo(s.dtype).min"))


def test_amp103_fix_imports_torch_when_only_submodules_are_named():
    src = ("from torch import autocast\n\ndef f(q, k, mask):\n    with autocast('cuda'):\n"
           "        s = q @ k\n        return s.masked_fill(mask, -1e9)\n")
    expected = ("from torch import autocast\nimport torch\n\ndef f(q, k, mask):\n    with autocast('cuda'):\n"
                "        s = q @ k\n        return s.masked_fill(mask, torch.finfo(s.dtype).min)\n")
    check_fix(src, expected)


@pytest.mark.parametrize("name, body", [
    ("the tensor is computed by a call: no second computation", "t = (q @ k).masked_fill(mask, -1e9)"),
])
def test_amp103_no_fix(name, body):
    src = in_autocast(body)
    findings = [f for f in lint_source(src) if f.code == "AMP103"]
    assert findings and all(f.fix is None for f in findings), name
    assert fix(src)[0] == src
