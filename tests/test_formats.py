"""amplint.fp16: the formats' limits computed from their bit layouts agree with torch's own."""
import pytest

from amplint.fp16 import BFLOAT16, FLOAT16, FLOAT32, finfo

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["torch.float16", "torch.half", "torch.bfloat16", "torch.float32", "torch.float"])
def test_finfo_matches_torch(name):
    info = torch.finfo(eval(name))
    assert (finfo(name, "max"), finfo(name, "min"), finfo(name, "eps"), finfo(name, "tiny")) == \
        (info.max, info.min, info.eps, info.tiny)


def test_rounding_into_each_format_matches_torch():
    for fmt_, dtype in ((FLOAT16, torch.float16), (BFLOAT16, torch.bfloat16), (FLOAT32, torch.float32)):
        for x in (1e-8, 1e-45, 3.0e-5, 0.1, 65519.0, 65520.0, 3.3e38, 3.5e38, -1e39):
            assert fmt_.round(x) == torch.tensor(x, dtype=torch.float64).to(dtype).item(), (fmt_.name, x)


def test_unknown_dtypes_and_attributes_have_no_value():
    assert finfo("torch.int8", "max") is None and finfo("torch.float32", "resolution") is None
