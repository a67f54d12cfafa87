"""Parameters cast to half in place through `.data` (modded-nanogpt: `model.bank.data = model.bank.data.bfloat16()`,
`m.weight.data = m.weight.data.half()` in a loop over `model.modules()`) are half-parameter evidence for that
model: the run trains float16 (or bfloat16) parameters, and Adam's eps=1e-8 on float16 ones is AMP101
(docs/precision.md, "Evidence and its roles"; triage T9-3)."""
import textwrap

from cliutil import run, write_project

TRAIN = """
import torch
from torch import nn


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 64)
        self.bank = nn.Parameter(torch.randn(64, 64))
        self.head = nn.Linear(64, 100)

    def forward(self, idx):
        return self.head(self.embed(idx) @ self.bank)


model = GPT().cuda()
for m in model.modules():
    if isinstance(m, nn.Embedding):
        m.weight.data = m.weight.data.{cast}
model.bank.data = model.bank.data.{cast}
optimizer = torch.optim.Adam([model.bank, model.embed.weight], lr=1e-3, eps=1e-8)
for step in range(100):
    loss = model(torch.randint(0, 100, (8, 16), device="cuda")).float().logsumexp(-1).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def _check(tmp_path, cast):
    root = write_project(tmp_path, {"train.py": textwrap.dedent(TRAIN.replace("{cast}", cast))})
    result = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP101", "."], root)
    return [line for line in result.out.splitlines() if "AMP101" in line], result.out


def test_a_data_cast_to_float16_makes_the_parameters_half(tmp_path):
    found, out = _check(tmp_path / "half", "half()")
    assert len(found) == 1 and "Adam eps=1e-8 on float16 parameters" in found[0]
    assert _check(tmp_path / "to", "to(torch.float16)")[0] != []


def test_a_bfloat16_data_cast_is_bf16_and_a_float32_one_nothing(tmp_path):
    found, out = _check(tmp_path / "bf16", "bfloat16()")
    assert found == [] and "Assumed precision: bf16" in out
    found, out = _check(tmp_path / "fp32", "float()")
    assert found == [] and "Assumed precision: fp32" in out
