"""AMP204 scale-after-fp16-product: contractions over a long axis normalised afterwards; the
textbook attention logits are AMP205's (off by default)."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.docs import examples, read_page

from conftest import codes
from test_amp203 import MIXED, fixed


def only(source, **kw):
    return [c for c in codes(textwrap.dedent(source), **kw) if c in ("AMP204", "AMP205")]


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), **kw) if f.code == "AMP204"]


def in_autocast(line, params="a, b, x, n, mask"):
    return f"""
    import math
    import torch
    def f({params}):
        with torch.autocast("cuda"):
            {line}
    """


@pytest.mark.parametrize("line", [
    # an outer-product mean over the sequences of an alignment, divided by their number
    'return torch.einsum("bsic,bsjd->bijcd", a, b) / a.shape[1]',
    # a covariance over samples
    "return x.T @ x / x.size(0)",
    "return torch.mm(x.t(), x) / len(x)",
    # a masked mean: the count is the sum of the mask (a tensor: no fix)
    'return torch.einsum("bsi,bsj->bij", a, b) / (mask.sum(1) + 1e-3)',
    # an unbiased covariance: a count less one (lightly's VICReg covariance_loss)
    "return torch.einsum('b...c,b...d->...cd', x, x) / (x.size(0) - 1)",
    # a divisor named like a count
    "return (a.transpose(-2, -1) @ b) / n",
    # a constant factor after a contraction that is not over the head dimension
    "return (a.transpose(-2, -1) @ b) * 0.001",
    "return (a.transpose(-2, -1) @ b) / 4",
])
def test_contractions_normalised_afterwards(line):
    assert only(in_autocast(line)) == ["AMP204"]


def test_message_and_fix():
    source = in_autocast('return torch.einsum("bsic,bsjd->bijcd", a, b) / a.shape[1]')
    [f] = findings(source)
    assert f.confidence == "likely"
    assert "divided by `a.shape[1]`" in f.message and "65504" in f.message and "1024 products" in f.message
    assert "contract in float32" in f.help and "autocast" in f.explained()
    assert 'torch.einsum("bsic,bsjd->bijcd", a / a.shape[1], b)' in fixed(source, unsafe=False)
    [masked] = findings(in_autocast('return torch.einsum("bsi,bsj->bij", a, b) / (mask.sum(1) + 1e-3)'))
    assert masked.fix is None  # a tensor count could broadcast differently against an operand


@pytest.mark.parametrize("name, source", [
    ("textbook attention logits are AMP205, off by default", in_autocast("return (a @ b.transpose(-2, -1)) * n ** -0.5")),
    ("einsum over the head dimension scaled by a constant", in_autocast('return torch.einsum("bhid,bhjd->bhij", a, b) * 0.125')),
    ("the operand normalised first", in_autocast('return torch.einsum("bsic,bsjd->bijcd", a / a.shape[1], b)')),
    ("a softmax-weighted average", in_autocast("return (a.softmax(-1) @ b) / n")),
    ("divided by a number below 1 scales up", in_autocast("return (a.transpose(-2, -1) @ b) / 0.5")),
    # RecBole's KTUP (unseen set 16): the mean of two embedding sums, no normaliser of a long axis
    ("a mean of two: divided by 2", in_autocast("return torch.matmul(a + b, torch.t(x + n)) / 2")),
    ("a mean of two: times 0.5", in_autocast("return (a.transpose(-2, -1) @ b) * 0.5")),
    ("an unknown divisor that does not count", in_autocast("return (a.transpose(-2, -1) @ b) / x")),
    ("bf16 autocast", in_autocast("return x.T @ x / x.size(0)").replace('"cuda")', '"cuda", dtype=torch.bfloat16)')),
    ("no float16 anywhere", """
        import torch
        def f(x):
            return x.T @ x / x.size(0)
    """),
])
def test_near_misses(name, source):
    assert only(source) == [], name


def test_page_example_fixed_equals_use_instead():
    page = read_page("AMP204")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert fixed(bad, unsafe=False) == good
    assert only(bad) == ["AMP204"] and only(good) == []


def test_an_attention_scale_that_evaluates_to_a_number_is_still_amp205():
    # timm's EfficientFormerV2: self.scale = key_dim ** -0.5 with key_dim a default: ×0.177, but
    # written as the attention scale over keys already laid out as (d, N)
    source = """
        import torch
        from torch import nn
        class Attention(nn.Module):
            def __init__(self, dim=384, key_dim=32):
                super().__init__()
                self.scale = key_dim ** -0.5
                self.q = nn.Linear(dim, key_dim)
                self.k = nn.Linear(dim, key_dim)
            def forward(self, x):
                q, k = self.q(x), self.k(x).transpose(-2, -1).contiguous()
                attn = (q @ k) * self.scale
                return attn.softmax(-1)
    """
    assert only(source, extra_files={"train.py": MIXED}) == []
    assert [c for c in codes(textwrap.dedent(source), extra_files={"train.py": MIXED}, select=("ALL", "AMP205"))
            if c.startswith("AMP20")] == ["AMP205"]


def test_einsum_operands_given_as_a_tuple_are_seen():
    source = in_autocast('return torch.einsum("nm,hnm->h", (x, a.softmax(-1))) / x.size(0)')
    assert only(source) == []  # a softmax operand bounds the sum


def adapter(body, method="unmerge"):
    """A LoRA/BOFT-style layer of an fp16-mixed project, with a method over its base weight."""
    return textwrap.dedent(f"""
    import torch
    from torch import nn
    class Adapter(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base = base
        def forward(self, x):
            return self.base(x)
        def {method}(self, R, s, tokens, n):
    """) + textwrap.indent(textwrap.dedent(body), "        ")


SURGERY = """
W = self.base.weight.data.clone()
W = torch.mm(R.t(), W)
W = W / n
self.base.weight.data = W
"""


def test_weight_surgery_on_data_is_not_under_autocast():
    # merging / unmerging an adapter into .weight.data runs between steps, not in the forward
    assert only(adapter(SURGERY), filename="layer.py", extra_files={"train.py": MIXED}) == []


def test_one_over_an_unknown_scale_is_no_down_scale():
    # ``* (1 / s)``: nothing says s counts the terms of the sum (peft's per-channel boft_s ≈ 1)
    body = "h = torch.mm(R.t(), tokens)\nreturn h * (1 / s)\n"
    assert only(adapter(body, "mix"), filename="layer.py", extra_files={"train.py": MIXED}) == []


@pytest.mark.parametrize("name, body", [
    ("the same product in a method that does not write .data", "h = torch.mm(R.t(), tokens)\nreturn h / tokens.size(0)\n"),
    ("one over a count", "h = torch.mm(R.t(), tokens)\nreturn h * (1 / tokens.shape[0])\n"),
])
def test_weight_surgery_near_misses(name, body):
    assert only(adapter(body, "mix"), filename="layer.py", extra_files={"train.py": MIXED}) == ["AMP204"], name


NCE = """
import torch
from torch import nn
class NCELoss(nn.Module):
    def forward(self, r_src, r_trg):
        emb_dim = r_src.size(1)
        raw_scores = {product}
        raw_scores = raw_scores / emb_dim ** 0.5
        return raw_scores.mean()
"""


def test_a_product_cast_up_after_it_was_computed_is_still_a_float16_product():
    # bolts' AMDIM NCE loss: the .float() comes after the float16 mm has summed 2560 terms
    source = NCE.format(product="torch.mm(r_src, r_trg).float()")
    [f] = findings(source, filename="loss.py", extra_files={"train.py": MIXED})
    assert "comes too late" in f.message and "cast the operands" in f.help
    assert "torch.mm(r_src / emb_dim ** 0.5, r_trg).float()" in fixed(source, extra_files={"train.py": MIXED}, unsafe=False)


def test_upcast_near_misses():
    # the same product without the cast: the textbook shape, AMP205's (off by default)
    source = NCE.format(product="torch.mm(r_src, r_trg)")
    assert only(source, filename="loss.py", extra_files={"train.py": MIXED}, select=["ALL", "AMP205"]) == ["AMP205"]
    # the operands cast up, with autocast off: a float32 product
    source = NCE.format(product="torch.mm(r_src.float(), r_trg.float())").replace(
        "    def forward", "    @torch.autocast('cuda', enabled=False)\n    def forward")
    assert only(source, filename="loss.py", extra_files={"train.py": MIXED}, select=["ALL", "AMP205"]) == []


OPM = """
import torch
from torch import nn
class OuterProductMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear_out = nn.Linear(64, 16)
    def _opm(self, a, b):
        outer = {product}
        return self.linear_out(outer.reshape(outer.shape[:-2] + (-1,)))
    def forward(self, a, b, mask):
        outer = self._opm(a, b)
        norm = torch.einsum("...abc,...adc->...bdc", mask, mask)
        outer = outer / (norm + 1e-3)
        return outer
"""


def test_a_product_returned_by_a_helper_and_normalised_by_the_caller():
    # openfold's outer-product mean (fixed upstream): the einsum over the sequences is in _opm
    source = OPM.format(product='torch.einsum("...bac,...dae->...bdce", a, b)')
    [f] = findings(source, filename="opm.py", extra_files={"train.py": MIXED})
    assert f.line == 14 and f.fix is None  # the product is in the helper: no local edit moves the scale
    # near miss: the helper returns no product
    assert only(OPM.format(product="a * b"), filename="opm.py", extra_files={"train.py": MIXED}) == []


@pytest.mark.parametrize("name, lines_", [
    ("a size of the product itself (fast-reid's non-local block)",
     ["f = torch.matmul(a, b)", "return f / f.size(-1)"]),
    ("through a name bound to that size", ["f = torch.matmul(a, b)", "n = f.size(-1)", "return f / n"]),
    ("its shape", ["f = a @ b", "return f / f.shape[1]"]),
])
def test_a_divisor_counting_the_product_s_own_axes_is_not_a_normalised_contraction(name, lines_):
    # the product's axes are the free ones: its size counts positions, not the terms each entry summed
    body = "\n            ".join(lines_)
    assert only(in_autocast(body)) == [], name


def test_near_miss_a_size_of_an_operand_still_counts_the_contraction():
    assert only(in_autocast("f = x.T @ x\n            return f / x.size(0)")) == ["AMP204"]
