"""A dtype picked by a condition and cast to by hand (StyleGAN2 / 3's per-layer mixed precision,
triage set 13, M13-2): ``dtype = torch.float16 if self.use_fp16 else torch.float32`` then ``x =
x.to(dtype)`` and ``w = self.weight.to(dtype)`` in the layers that take the flag. Their activations
are float16 ("likely", the evidence the conditional cast), not the float32 of the tensor cast.
Near misses: a condition that is literal False, a bfloat16 / float32 choice, and a local that holds
something other than a dtype (a device)."""
from test_precision_model import dtypes

SOURCE = """
import torch


def layer(x, weight, use_fp16, device):
    dtype = {choice}
    y = x.float().to(dtype)
    w = weight.float().to(dtype=dtype)
    return y @ w
"""


def test_flag_picked_float16(tmp_path):
    d = dtypes(tmp_path, SOURCE.format(choice="torch.float16 if use_fp16 else torch.float32"))
    assert d["y"] == ("float16", "likely") and d["w"] == ("float16", "likely")


def test_float16_in_the_else_branch(tmp_path):
    d = dtypes(tmp_path, SOURCE.format(choice="torch.float32 if not use_fp16 else torch.half"))
    assert d["y"] == ("float16", "likely")


def test_near_miss_literal_false(tmp_path):
    d = dtypes(tmp_path, SOURCE.format(choice="torch.float16 if False else torch.float32"))
    assert d["y"][0] == "float32"


def test_near_miss_bfloat16_or_float32(tmp_path):
    d = dtypes(tmp_path, SOURCE.format(choice="torch.bfloat16 if use_fp16 else torch.float32"))
    assert d["y"][0] != "float16"


def test_near_miss_a_device(tmp_path):
    d = dtypes(tmp_path, SOURCE.format(choice="device if use_fp16 else 'cpu'"))
    assert d["y"] == ("float32", "certain")
