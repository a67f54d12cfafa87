"""A mapping's entry has the dtype of what was put under its key (OpenPCDet's heads hand their
predictions around as ``pred_dict = {"hm": self.conv(x), ...}``, M14-1): the dict literal's entry,
the value last stored with ``d["key"] = value`` before the read, and for a parameter, what the
calls of its function in the file put under that key. Here a helper divides by ``h.abs() + 1e-8``
(1e-8 is 0 in float16): AMP102 when the entry read is a float16 layer output, silent when it is
the float32 mask beside it in the same dict, or when the caller stored a float32 copy under the key."""
import textwrap

import pytest

from amplint.api import lint_source

MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, mask):
        out = {"h": self.fc(x), "m": mask.float()}
        {store}
        return self.normalise(out)

    def normalise(self, out):
        h = out["{key}"]
        return h / (h.abs() + 1e-8)


def train(loader):
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, mask in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, mask).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""


def amp102(key, store="pass"):
    source = textwrap.dedent(MODEL).replace("{key}", key).replace("{store}", store)
    return [f.line for f in lint_source(source, filename="net.py") if f.code == "AMP102"]


@pytest.mark.parametrize("name, key, store, expected", [
    ("the layer output under its key", "h", "pass", [18]),
    ("near miss: the float32 mask beside it", "m", "pass", []),
    ("near miss: a float32 copy stored under the key before the call", "h", 'out["h"] = out["h"].float()', []),
])
def test_an_entry_has_the_dtype_put_under_its_key(name, key, store, expected):
    assert amp102(key, store) == expected, name
