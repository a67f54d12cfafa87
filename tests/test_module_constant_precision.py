"""A precision keyword given a module-level constant by name (Chinese-Vicuna's chatglm_lora_finetune.py:
`mixed_precision = 'bf16'` at the top, `Accelerator(mixed_precision=mixed_precision, ...)`, triage P22-6) is that
constant's value, as a literal keyword is, not a precision left to the launcher. A name bound more than once, or a
function's own parameter of that name, is not such a constant (near misses)."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN = """
import torch
from accelerate import Accelerator, DeepSpeedPlugin

mixed_precision = {value}
accumulate_step = 4
{extra}

def main({params}):
    model = torch.nn.Linear(16, 16)
    plugin = DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=accumulate_step)
    accelerator = Accelerator(mixed_precision=mixed_precision, deepspeed_plugin=plugin)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer = accelerator.prepare(model, optimizer)
    for step in range(10):
        loss = model(torch.randn(4, 16, device=accelerator.device)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("value, extra, params, mode", [
    ("'fp16'", "", "", "fp16-mixed"),
    ("'bf16'", "", "", "bf16"),  # Chinese-Vicuna (P22-6)
    # near misses: the name is bound twice; the function's parameter shadows it: the launcher's precision
    ("'fp16'", "if torch.cuda.is_bf16_supported():\n    mixed_precision = 'bf16'", "", "fp32"),
    ("'fp16'", "", "mixed_precision=None", "fp32"),
])
def test_a_module_constant_passed_by_name_is_the_precision(tmp_path, value, extra, params, mode):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN).format(value=value, extra=extra,
                                                                                     params=params)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode


SCRIPT = """
import torch
from accelerate import Accelerator

accelerator = Accelerator(mixed_precision="fp16")
model = torch.nn.Linear(16, 16)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optimizer = accelerator.prepare(model, optimizer)
{loop}
"""
LOOP = """for step in range(10):
    loss = model(torch.randn(4, 16, device=accelerator.device)).pow(2).mean()
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
"""
GENERATE = """with torch.no_grad():
    print(model(torch.randn(4, 16, device=accelerator.device)))
"""


@pytest.mark.parametrize("loop, mode", [
    (LOOP, "fp16-mixed"),  # Chinese-Vicuna's tools/application/chatglm_lora_finetune.py (P22-6): trains at module level
    (GENERATE, None),  # near miss: a chat script that only runs the model is no training entry point
])
def test_a_script_named_for_chat_that_trains_at_module_level_keeps_its_evidence(tmp_path, loop, mode):
    root = write_project(tmp_path / "p", {"tools/application/chatglm_lora_finetune.py":
                                          textwrap.dedent(SCRIPT).format(loop=loop)})
    p = Project(root)
    modes = [p.regime_for(ep.path).mode for ep in p.entry_points()]
    assert modes == ([mode] if mode else []), modes
    if mode is None:
        from amplint.precision_facts import file_facts
        source = (root / "tools/application/chatglm_lora_finetune.py").read_bytes()
        (s,) = [s for s in file_facts(source, "tools/application/chatglm_lora_finetune.py")["signals"]]
        assert s["role"] == "inference", s
