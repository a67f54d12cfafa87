"""The library policy (docs/precision.md): code no training entry point reaches is looked at
again as under fp16 autocast, and only hazards under any float16 use of it are reported, marked as
such. Named near misses: a subnormal guard whose overflow depends on the numerator, a guard that is
fine in float16, a library with ``assume-precision`` set, a library reached by an fp32 entry point."""
import textwrap

import pytest

from amplint.api import lint_source

LOG = """
import torch
def log(t, eps=1e-20):
    return t.clamp(min=eps).log()
"""

SIGSOFTMAX = """
import torch
from torch import nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.to_logits = nn.Linear(8, 8)
    def forward(self, x):
        logits = self.to_logits(x)
        return logits + logits.sigmoid().log()
"""

# x-transformers' own autocast(enabled=False) region: evidence of no float16, so still library code
OFF_REGION = """
import torch
def stable(x):
    with torch.autocast("cuda", enabled=False):
        return x.float().softmax(-1)
"""


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), filename="lib.py", **kw) if f.code.startswith("AMP")]


@pytest.mark.parametrize("source, code", [(LOG, "AMP102"), (SIGSOFTMAX, "AMP201")])
def test_hazards_under_any_float16_use_of_library_code(source, code):
    for extra in ({}, {"stable.py": OFF_REGION}):
        [f] = findings(source, extra_files=extra)
        assert f.code == code and f.confidence == "likely"
        assert "under any float16 use of this code" in f.message and "fp16 autocast" in f.message
        assert any("library policy" in str(e) for e in f.evidence)


@pytest.mark.parametrize("name, source, extra", [
    ("a subnormal guard: whether c / eps overflows depends on c",
     "import torch\ndef inv(x):\n    return 1 / (x + 1e-6)\n", {}),
    ("a guard that is a normal float16 number", LOG.replace("1e-20", "1e-4"), {}),
    ("reached by an fp32 training entry point", LOG,
     {"train.py": "import torch\nfrom lib import log\ndef main(model, opt, x):\n"
                  "    loss = log(model(x)).sum()\n    loss.backward()\n    opt.step()\n"}),
])
def test_library_policy_near_misses(name, source, extra):
    assert findings(source, extra_files=extra) == [], name


def test_assume_precision_gives_the_full_check_without_the_mark(tmp_path):
    from amplint.api import lint_paths, settings_for_path
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "lib"\n[tool.amplint]\nassume-precision = "fp16-mixed"\n')
    (tmp_path / "lib.py").write_text(textwrap.dedent(LOG))
    [f] = [f for f in lint_paths([tmp_path / "lib.py"], settings_for_path(tmp_path / "lib.py")) if f.code == "AMP102"]
    assert "any float16 use" not in f.message


def test_a_lambda_parameter_has_no_dtype_from_callers():
    # a name bound by a lambda's parameter (it crashed the dtype model)
    source = "import torch\nsafe_log = lambda t: torch.log(t + 1e-20)\n"
    assert [f.code for f in findings(source) if f.code.startswith("E")] == []


def test_a_helper_mapped_over_values_by_the_launchers_loop_is_reached(tmp_path):
    # audiolm-pytorch: `log_orig_mel, log_recon_mel = map(log, (orig_mel, recon_mel))` calls the helper;
    # near miss (imagen's uncalled `log` beside the called helpers, T11): never called, never reported
    from cliutil import run, write_project
    helpers = "import torch\n\ndef log(t, eps=1e-20):\n    return torch.log(t.clamp(min=eps))\n\n" \
              "def l2norm(t):\n    return t / t.norm(dim=-1, keepdim=True)\n"
    train = textwrap.dedent("""
        import torch
        from accelerate import Accelerator
        import helpers
        def train(model, loader):
            accelerator = Accelerator()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            model, opt, loader = accelerator.prepare(model, opt, loader)
            for x in loader:
                a, b = map(helpers.log, (model(x), x))
                loss = helpers.l2norm(a - b).mean()
                accelerator.backward(loss)
                opt.step()
    """)
    root = write_project(tmp_path / "mapped", {"helpers.py": helpers, "train.py": train})
    r = run(["check", "--no-cache", "--select", "AMP102", "."], root)
    assert "helpers.py:3:" in r.out and "fp16 included" in r.out
    uncalled = train.replace("a, b = map(helpers.log, (model(x), x))", "a, b = model(x), x")
    root = write_project(tmp_path / "uncalled", {"helpers.py": helpers, "train.py": uncalled})
    assert "helpers.py:3:" not in run(["check", "--no-cache", "--select", "AMP102", "."], root).out
