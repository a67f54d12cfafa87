"""AMP205 attention-logits-scaled-after-product (off by default): the textbook q·kᵀ shapes, named near
misses, the fix; AMP204 keeps the products normalised by a count."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.docs import examples, read_page

from conftest import codes
from amplint.config import Settings
from conftest import fixed_source
from test_amp203 import HALF, MIXED

SELECT = ("ALL", "AMP205")


def only(source, **kw):
    """AMP204 / AMP205 codes of ``source``, with AMP205 selected."""
    return [c for c in codes(textwrap.dedent(source), select=SELECT, **kw) if c in ("AMP204", "AMP205")]


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), select=SELECT, **kw) if f.code == "AMP205"]


def fixed(source, extra_files=None, unsafe=True):
    return fixed_source(source, extra_files, unsafe, settings=Settings(extend_select=["AMP205"]))


def test_off_by_default():
    assert [c for c in codes(textwrap.dedent(TIMM_STYLE), extra_files={"train.py": MIXED}) if c.startswith("AMP20")] == []


TIMM_STYLE = """
    import torch
    from torch import nn
    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, qk_scale=None):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3)
        def forward(self, x):
            B, N, C = x.shape
            q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
            attn = (q @ k.transpose(-2, -1)) * self.scale
            return attn.softmax(dim=-1) @ v
"""


# ---- true positives ------------------------------------------------------------------------------
def test_attention_logits_scaled_after_the_product():
    found = findings(TIMM_STYLE, extra_files={"train.py": MIXED})
    assert [f.line for f in found] == [14]
    f = found[0]
    assert f.confidence == "likely"  # whether logits get that large is not in the code
    assert "multiplied by `self.scale`" in f.message
    assert "65504" in f.message and "d=64" in f.message and "entries ≈ 32" in f.message
    assert "train.py:6" in f.explained()  # the autocast evidence


def test_pure_half_project_from_another_file():
    assert only(TIMM_STYLE, extra_files={"train.py": HALF}) == ["AMP205"]


@pytest.mark.parametrize("source", [
    # import torch as th, decorated function, einsum, a constant below 1
    """
    import torch as th
    @th.autocast("cuda")
    def scores(q, k):
        return th.einsum("bhid,bhjd->bhij", q, k) * 0.125
    """,
    # from torch import einsum, d ** -0.5
    """
    import torch
    from torch import einsum
    def scores(q, k, d):
        with torch.autocast("cuda"):
            return einsum("bhid,bhjd->bhij", q, k) * d ** -0.5
    """,
    # @ and a sqrt divisor
    """
    import math
    import torch
    def scores(q, k):
        with torch.autocast("cuda"):
            return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    """,
    # torch.bmm, the scale written first, multi-line
    """
    import torch
    def scores(q, k, softmax_scale):
        with torch.autocast("cuda"):
            s = softmax_scale * torch.bmm(
                q,
                k.transpose(1, 2),
            )
        return s
    """,
    # Tensor.matmul method, 1 / sqrt
    """
    import math
    import torch
    def scores(q, k, d):
        with torch.autocast("cuda"):
            return q.matmul(k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
    """,
    # HF style: bound to a name, then divided
    """
    import math
    import torch
    def scores(q, k, head_size):
        with torch.autocast("cuda"):
            s = torch.matmul(q, k.transpose(-1, -2))
            s = s / math.sqrt(head_size)
        return s
    """,
    # in-place scaling of a named product; divisor called norm_factor
    """
    import torch
    def scores(q, k, norm_factor):
        with torch.autocast("cuda"):
            s = torch.matmul(q, k.transpose(-1, -2))
            s /= norm_factor
        return s
    """,
])
def test_flags_products_scaled_down_afterwards(source):
    assert only(source) == ["AMP205"]


# ---- near misses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, source", [
    ("operand scaled first", """
        import torch
        def f(q, k, scale):
            with torch.autocast("cuda"):
                return (q * scale) @ k.transpose(-2, -1)
    """),
    ("`q * scale @ k` is read as `(q * scale) @ k`", """
        import torch
        def f(q, k, scale):
            with torch.autocast("cuda"):
                return q * scale @ k.transpose(-2, -1)
    """),
    ("baddbmm with alpha", """
        import torch
        def f(q, k, scale):
            with torch.autocast("cuda"):
                empty = torch.empty(q.size(0), q.size(1), k.size(2), dtype=q.dtype, device=q.device)
                return torch.baddbmm(empty, q, k, beta=0, alpha=scale)
    """),
    ("scaled_dot_product_attention", """
        import torch
        import torch.nn.functional as F
        def f(q, k, v, scale):
            with torch.autocast("cuda"):
                return F.scaled_dot_product_attention(q, k, v, scale=scale)
    """),
    ("float32 operands with autocast disabled", """
        import torch
        @torch.autocast("cuda")
        def f(q, k):
            with torch.autocast(device_type=q.device.type, enabled=False):
                return (q.float() @ k.float().transpose(-2, -1)) * 0.125
    """),
    ("bf16 autocast", """
        import torch
        def f(q, k):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return (q @ k.transpose(-2, -1)) * 0.125
    """),
    ("fp32 project", """
        import torch
        def f(q, k):
            return (q @ k.transpose(-2, -1)) * 0.125
    """),
    ("a factor of 1 or more is not a down-scale", """
        import torch
        def f(q, k):
            with torch.autocast("cuda"):
                return (q @ k.transpose(-2, -1)) * 2.0
    """),
    ("dividing by a temperature scales up", """
        import torch
        def f(a, b, temperature=0.07):
            with torch.autocast("cuda"):
                return a @ b.T / temperature
    """),
    ("a learnable logit scale", """
        import torch
        def f(a, b, logit_scale):
            with torch.autocast("cuda"):
                return (a @ b.T) * logit_scale.exp()
    """),
    ("a learnable per-head temperature", """
        import torch
        from torch import nn
        class XCA(nn.Module):
            def __init__(self, heads):
                super().__init__()
                self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
            def forward(self, q, k):
                with torch.autocast("cuda"):
                    return (q @ k.transpose(-2, -1)) * self.temperature
    """),
    ("cosine similarities are bounded by 1", """
        import torch
        import torch.nn.functional as F
        def f(a, b):
            with torch.autocast("cuda"):
                return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T * 0.5
    """),
    ("one unit-vector operand bounds the product (swiftformer)", """
        import torch
        import torch.nn.functional as F
        class Additive(torch.nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.w_g = torch.nn.Parameter(torch.randn(dim, 1))
                self.scale_factor = dim ** -0.5
            def forward(self, x):
                with torch.autocast("cuda"):
                    query = F.normalize(x, dim=-1)
                    return query @ self.w_g * self.scale_factor
    """),
    ("a softmax-weighted average is bounded by its values", """
        import torch
        def f(scores, v):
            with torch.autocast("cuda"):
                attn = scores.softmax(dim=-1)
                return (attn @ v) * 0.5
    """),
    ("called `scale` but bound to a logit scale (open_clip's retrieval metrics)", """
        import torch
        def scores(image, text, logit_scale):
            with torch.autocast("cuda"):
                scale = torch.as_tensor(logit_scale, device=image.device)
                return scale * (image @ text.T)
    """),
    ("an unknown multiplier that is not called a scale", """
        import torch
        def f(a, b, mask):
            with torch.autocast("cuda"):
                return (a @ b) * mask
    """),
])
def test_near_misses(name, source):
    assert only(source) == [], name


# ---- the fix -------------------------------------------------------------------------------------
def test_page_example_fixed_equals_use_instead():
    page = read_page("AMP205")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert fixed(bad, unsafe=False) == good  # a safe fix: applied without --unsafe-fixes
    assert fixed(bad) == good


@pytest.mark.parametrize("before, after", [
    ("return torch.einsum('bhid,bhjd->bhij', q, k) * d ** -0.5",
     "return torch.einsum('bhid,bhjd->bhij', q * d ** -0.5, k)"),
    ("return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))",
     "return (q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1)"),
    ("return 0.125 * (q @ k.transpose(-2, -1))",
     "return (0.125 * q) @ k.transpose(-2, -1)"),
    ("return q.matmul(k) * 0.125", "return (q * 0.125).matmul(k)"),
    ("return torch.bmm(q + 1, k) / math.sqrt(d)", "return torch.bmm((q + 1) / math.sqrt(d), k)"),
    ("return (q @ k) * round(d * 0.5) ** -0.5", "return (q * round(d * 0.5) ** -0.5) @ k"),
])
def test_fix_scales_the_first_operand(before, after):
    template = "import math\nimport torch\ndef f(q, k, d):\n    with torch.autocast('cuda'):\n        {}\n"
    assert fixed(template.format(before)) == template.format(after)


def test_fix_of_the_named_form_removes_the_scaling_statement():
    src = """
        import math
        import torch
        def scores(q, k, head_size):
            with torch.autocast("cuda"):
                s = torch.matmul(q, k.transpose(-1, -2))
                s = s / math.sqrt(head_size)
                return s.softmax(-1)
    """
    assert fixed(src) == textwrap.dedent("""
        import math
        import torch
        def scores(q, k, head_size):
            with torch.autocast("cuda"):
                s = torch.matmul(q / math.sqrt(head_size), k.transpose(-1, -2))
                return s.softmax(-1)
    """)


@pytest.mark.parametrize("name, source", [
    ("the unscaled product is read in between", """
        import math
        import torch
        def scores(q, k, head_size):
            with torch.autocast("cuda"):
                s = torch.matmul(q, k.transpose(-1, -2))
                raw = s.detach()
                s = s / math.sqrt(head_size)
                return s, raw
    """),
    ("the scaling is conditional (another block)", """
        import math
        import torch
        def scores(q, k, head_size, scale_attn):
            with torch.autocast("cuda"):
                s = torch.matmul(q, k.transpose(-1, -2))
                if scale_attn:
                    s = s / math.sqrt(head_size)
                return s
    """),
    ("a tensor scale could broadcast differently", """
        import torch
        def scores(q, k, scale: torch.Tensor):
            with torch.autocast("cuda"):
                return (q @ k) * scale
    """),
])
def test_no_fix_where_moving_the_scale_is_not_exact(name, source):
    found = findings(source)
    assert len(found) == 1 and found[0].fix is None, name


# A shape of ultralytics' Attention before and after its "pre-scale attention query to prevent fp16
# overflow" change (ultralytics/ultralytics#24990): the product of the transposed query and the keys.
PRESCALE = """
    import torch
    from torch import nn
    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, attn_ratio=0.5):
            super().__init__()
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.key_dim = int(self.head_dim * attn_ratio)
            self.scale = self.key_dim ** -0.5
            self.qkv = nn.Conv2d(dim, dim * 2, 1)
        def forward(self, x):
            B, C, H, W = x.shape
            q, k, v = self.qkv(x).view(B, self.num_heads, -1, H * W).split([self.key_dim, self.key_dim, self.head_dim], dim=2)
            {attn}
            return (v @ attn.softmax(dim=-1).transpose(-2, -1)).view(B, C, H, W)
"""


def test_real_fix_before_and_after():
    before = PRESCALE.format(attn="attn = (q.transpose(-2, -1) @ k) * self.scale")
    after = PRESCALE.format(attn="attn = (q * self.scale).transpose(-2, -1) @ k")
    assert only(before, extra_files={"train.py": MIXED}) == ["AMP205"]
    assert only(after, extra_files={"train.py": MIXED}) == []
    assert fixed(before, extra_files={"train.py": MIXED}) == textwrap.dedent(
        PRESCALE.format(attn="attn = (q.transpose(-2, -1) * self.scale) @ k"))


def test_projection_with_a_learnable_weight_then_scaled_is_not_attention_logits():
    # timm attention2d (MQA): q = einsum(x, self.query_proj); the fix then writes `q * self.scale`
    src = """
    import torch
    from torch import nn
    class MQA(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.query_proj = nn.Parameter(torch.randn(dim, dim))
            self.scale = dim ** -0.5
        def forward(self, x):
            with torch.autocast("cuda"):
                q = torch.einsum("bnd,dk->bnk", x, self.query_proj) * self.scale
                return q
    """
    assert only(src) == []
