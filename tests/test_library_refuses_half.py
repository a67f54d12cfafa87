"""A library that refuses float16 tensors itself has no float16 users: the library policy does not look at it.

theseus (unseen set 19, T19-6): ``_CHECK_DTYPE_SUPPORTED`` raises for any dtype but float32 / float64 ("Theseus only
supports 32- and 64-bit tensors"); its vendored augmentation ``easyaug.py``, reached only by an fp32 example, normalises
a homography by ``[2, 2] + 1e-9`` and was reported "a hazard under any float16 use of this library code".
Near misses: a validator that lets float16 through, an inline check inside a helper doing other work (botorch's
task-value remapping), a validator in a test file, and a configured float16 precision keep the finding.
"""
import pytest

from amplint.api import lint_source

VALIDATOR = '''
import torch


def _check_dtype_supported(dtype):
    """Only 32- and 64-bit tensors."""
    if dtype not in {dtypes}:
        raise ValueError(f"Unsupported data type {{dtype}}")
'''

ASSERTED = '''
import torch


def check_dtype(dtype):
    assert dtype in (torch.float, torch.double)
'''

INLINE = '''
import torch


def remap(values, dtype):
    if dtype not in (torch.float32, torch.float64):
        raise ValueError("dtype")
    return torch.arange(len(values), dtype=dtype)
'''

CORE = '''
from geolib.constants import _check_dtype_supported


class Variable:
    def __init__(self, tensor):
        _check_dtype_supported(tensor.dtype)
        self.tensor = tensor
'''

AUGMENT = '''
import torch


class RandomGeoAug:
    def __init__(self):
        self.eps = 1e-9

    def _denormalize(self, transform, T):
        transform2 = torch.inverse(T) @ transform @ T
        transform2 /= transform2[:, 2, 2].reshape(-1, 1, 1).clone() + self.eps
        return transform2

    def forward(self, transform, T):
        return self._denormalize(transform, T)
'''

EXAMPLE = '''
import torch
from geolib.third_party.augment import RandomGeoAug

aug = RandomGeoAug()
net = torch.nn.Linear(9, 9)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for _ in range(10):
    h = aug.forward(torch.eye(3)[None], torch.eye(3)[None])
    loss = net(h.reshape(1, 9)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def amp102(constants=None, constants_path="geolib/constants.py", precision="auto"):
    files = {"setup.py": "from setuptools import setup\nsetup(name='geolib', packages=['geolib'])\n",
             "geolib/__init__.py": "", "geolib/core.py": CORE, "geolib/third_party/__init__.py": "",
             "examples/fit.py": EXAMPLE}
    if constants is not None:
        files[constants_path] = constants
    found = lint_source(AUGMENT, filename="geolib/third_party/augment.py", extra_files=files, precision=precision)
    return [f.line for f in found if f.code == "AMP102"]


@pytest.mark.parametrize("constants", [VALIDATOR.format(dtypes="[torch.float32, torch.float64]"), ASSERTED],
                         ids=["if-raise", "assert"])
def test_library_refusing_float16_is_not_looked_at_as_under_float16(constants):
    assert amp102(constants) == []


def test_without_a_validator_the_library_policy_reports():
    assert amp102() == [7]


def test_validator_letting_float16_through_keeps_the_finding():
    assert amp102(VALIDATOR.format(dtypes="(torch.float16, torch.float32, torch.float64)")) == [7]


def test_inline_check_in_a_helper_is_no_validator():
    assert amp102(INLINE) == [7]


def test_validator_in_a_test_file_keeps_the_finding():
    assert amp102(VALIDATOR.format(dtypes="[torch.float32, torch.float64]"), constants_path="tests/test_dtypes.py") == [7]


def test_configured_float16_precision_still_judges():
    assert amp102(VALIDATOR.format(dtypes="[torch.float32, torch.float64]"), precision="fp16-mixed") == [7]
