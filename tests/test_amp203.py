"""AMP203 fp16-reduction-normaliser: true positives in several shapes, named near misses, the fix."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.docs import examples, read_page

from conftest import codes, fixed_source

# A training step under fp16 autocast, with a GradScaler: the project regime is fp16-mixed.
MIXED = textwrap.dedent("""
    import torch
    def train(model, loader, optimizer):
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x).float().mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
""")
# Pure half: the model's parameters are float16, set in another file of the project.
HALF = textwrap.dedent("""
    import torch
    model = Net().cuda().half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(x).sum()
    loss.backward()
    from snippet import *  # the code under test is this training's (reached by its imports)
""")
BF16 = textwrap.dedent("""
    import torch
    def train(model, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).mean()
        loss.backward()
""")


def only(source, **kw):
    return [c for c in codes(textwrap.dedent(source), **kw) if c == "AMP203"]


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), **kw) if f.code == "AMP203"]


def fixed(source, extra_files=None, unsafe=True):
    """``source`` after ``amplint fix`` (``--unsafe-fixes`` by default), in a fresh project."""
    return fixed_source(source, extra_files, unsafe)


# ---- true positives ------------------------------------------------------------------------------
LINEAR_ATTENTION = """
    import torch
    class LinearAttention(torch.nn.Module):
        def __init__(self, eps=1e-4):
            super().__init__()
            self.eps = eps
        def forward(self, Q, K, V):
            KV = torch.einsum("nsd,nsv->ndv", K, V)
            Z = 1 / (torch.einsum("nld,nd->nl", Q, K.sum(dim=1)) + self.eps)
            return torch.einsum("nld,ndv,nl->nlv", Q, KV, Z)
"""


def test_linear_attention_normaliser_under_project_autocast():
    found = findings(LINEAR_ATTENTION, extra_files={"train.py": MIXED})
    assert [f.line for f in found] == [9]
    f = found[0]
    assert f.confidence == "likely"  # forward is assumed to run under the training step's autocast
    assert "float16 product used as a denominator" in f.message and "65504" in f.message
    assert "train.py:6" in f.explained()  # the evidence: the autocast of the training step


@pytest.mark.parametrize("source", [
    # import torch as th, a decorated function: certain
    """
    import torch as th
    @th.autocast("cuda")
    def normalise(q, k, v, eps=1e-4):
        return v / (th.einsum("bd,bd->b", q, k)[:, None] + eps)
    """,
    # from torch import einsum, inside a with block
    """
    import torch
    from torch import einsum
    def f(q, k):
        with torch.autocast("cuda"):
            z = 1.0 / einsum("nld,nd->nl", q, k.sum(1))
        return z
    """,
    # torch.bmm, multi-line, clamped
    """
    import torch
    def f(a, b, x):
        with torch.autocast(device_type="cuda"):
            out = x / torch.bmm(
                a,
                b,
            ).clamp(min=1e-3)
        return out
    """,
    # the @ operator, in a torch.cuda.amp.autocast block
    """
    import torch
    def f(a, b, x):
        with torch.cuda.amp.autocast():
            return x / (a @ b + 1e-3)
    """,
    # a constant factor on the product
    """
    import torch
    def f(a, b, x):
        with torch.autocast("cuda"):
            return x / (0.5 * torch.mm(a, b) + 1e-3)
    """,
    # torch.reciprocal, Tensor.div, in-place division
    """
    import torch
    def f(q, k, x):
        with torch.autocast("cuda"):
            r = torch.reciprocal(torch.einsum("nd,nd->n", q, k))
        return r
    """,
    """
    import torch
    def f(q, k, x):
        with torch.autocast("cuda"):
            return x.div(torch.matmul(q, k).unsqueeze(-1))
    """,
    """
    import torch
    def f(q, k, x):
        with torch.autocast("cuda"):
            x /= torch.einsum("nd,nd->n", q, k)[:, None] + 1e-4
        return x
    """,
])
def test_flags_fp16_products_used_as_denominators(source):
    found = findings(source)
    assert len(found) == 1
    assert found[0].confidence == "certain"  # inside an autocast region


def test_normaliser_bound_to_a_name_first():
    found = findings("""
        import torch
        def f(q, k, v):
            with torch.autocast("cuda"):
                denom = torch.einsum("nld,nd->nl", q, k.sum(dim=1)) + 1e-4
                out = torch.einsum("nld,ndv->nlv", q, v) / denom[..., None]
            return out
    """)
    assert [f.line for f in found] == [6]
    assert "`denom` (= `torch.einsum" in found[0].message and "line 5" in found[0].message


def test_float16_sum_as_normaliser_under_pure_half():
    src = """
        import torch
        class Norm(torch.nn.Module):
            def forward(self, x):
                w = torch.relu(x)
                return w / w.sum(-1, keepdim=True)
    """
    found = findings(src, extra_files={"train.py": HALF})
    assert [f.line for f in found] == [6]
    assert "float16 sum" in found[0].message and "pure-half" in found[0].explained()
    assert found[0].fix is None  # no autocast to leave under pure half: no automatic fix


@pytest.mark.parametrize("name, source", [
    ("a cast after the product does not undo its overflow", """
        import torch
        def f(q, k, eps=1e-4):
            with torch.autocast("cuda"):
                return 1 / (torch.einsum("nld,nd->nl", q, k).float() + eps)
    """),
    ("float32 operands are cast back to float16 while autocast is on", """
        import torch
        def f(q, k, eps=1e-4):
            with torch.autocast("cuda"):
                return 1 / (torch.einsum("nld,nd->nl", q.float(), k.float()) + eps)
    """),
])
def test_casts_that_do_not_help(name, source):
    assert only(source) == ["AMP203"], name


def test_fix_of_float_operands_under_autocast_only_disables_autocast():
    src = """
        import torch
        def f(q, k, eps=1e-4):
            with torch.autocast("cuda"):
                z = 1 / (torch.einsum("nld,nd->nl", q.float(), k.float()) + eps)
            return z
    """
    assert fixed(src) == textwrap.dedent("""
        import torch
        def f(q, k, eps=1e-4):
            with torch.autocast("cuda"):
                with torch.autocast(device_type=q.device.type, enabled=False):
                    z = 1 / (torch.einsum("nld,nd->nl", q.float(), k.float()) + eps)
            return z
    """)


def test_disabled_autocast_without_float_operands_is_still_flagged():
    # Disabling autocast alone keeps float16 inputs in float16: ``q``, a matmul's output under the
    # function's autocast. (An argument only assumed float16, no caller saying, is not float16 inside
    # the disabled region: code there is written for float32 inputs; test_dtype_autocast_off_arguments.)
    assert only("""
        import torch
        @torch.autocast("cuda")
        def f(x, w, k, eps=1e-4):
            q = x @ w
            with torch.autocast("cuda", enabled=False):
                return 1 / (torch.einsum("nld,nd->nl", q, k.sum(dim=1)) + eps)
    """) == ["AMP203"]


# ---- near misses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, source, extra", [
    ("the fix: disabled autocast with .float() operands", """
        import torch
        @torch.autocast("cuda")
        def f(q, k, eps=1e-4):
            with torch.autocast(device_type=q.device.type, enabled=False):
                z = 1 / (torch.einsum("nld,nd->nl", q.float(), k.float().sum(dim=1)) + eps)
            return z
    """, {}),
    ("sum runs in float32 under autocast", """
        import torch
        def f(x):
            with torch.autocast("cuda"):
                w = torch.relu(x @ x.T)
                return w / w.sum(-1, keepdim=True)
    """, {}),
    ("bf16 autocast has float32's range", LINEAR_ATTENTION, {"train.py": BF16}),
    ("fp32 project: no float16 evidence", LINEAR_ATTENTION, {}),
    ("product in the numerator, not the denominator", """
        import torch
        def f(q, k, n):
            with torch.autocast("cuda"):
                return torch.einsum("nd,nd->n", q, k) / n
    """, {}),
    ("a mask's sum is a count", """
        import torch
        def masked_mean(loss, mask):
            return (loss * mask).sum() / mask.sum()
    """, {"train.py": HALF}),
    ("a comparison's sum is a count", """
        import torch
        def acc(pred, labels):
            return (pred == labels).float().sum() / (labels != -100).sum()
    """, {"train.py": HALF}),
    ("renormalising softmax outputs: bounded by 1", """
        import torch
        def f(x):
            p = torch.softmax(x, -1)
            return p / p.sum(-1, keepdim=True)
    """, {"train.py": HALF}),
    ("renormalising a gated mix of two softmaxes (ConViT)", """
        import torch
        def f(patch_score, pos_score, gating):
            attn = (1. - torch.sigmoid(gating)) * patch_score.softmax(-1) + torch.sigmoid(gating) * pos_score.softmax(-1)
            attn /= attn.sum(dim=-1).unsqueeze(-1)
            return attn
    """, {"train.py": HALF}),
    ("the name is bound to something that is not a reduction", """
        import torch
        def f(q, k, x):
            with torch.autocast("cuda"):
                denom = q.norm(dim=-1, keepdim=True)
                return x / denom
    """, {}),
    ("numpy's sum is not a float16 tensor op", """
        import torch
        import numpy as np
        def f(x, y):
            with torch.autocast("cuda"):
                return x / np.sum(y)
    """, {}),
])
def test_near_misses(name, source, extra):
    assert only(source, extra_files=extra) == [], name


# ---- the fix -------------------------------------------------------------------------------------
def test_page_example_fixed_equals_use_instead():
    page = read_page("AMP203")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert fixed(bad) == good
    assert fixed(bad, unsafe=False) == bad  # the fix is unsafe: not applied by default


def test_fix_uses_the_files_torch_alias_and_moves_the_binding_statement():
    src = """
        import torch as th
        def f(q, k, v):
            with th.autocast("cuda"):
                # the normaliser
                denom = th.einsum("nld,nd->nl", q, k.sum(dim=1)) + 1e-4
                out = th.einsum("nld,ndv->nlv", q, v) / denom[..., None]
            return out
    """
    assert fixed(src) == textwrap.dedent("""
        import torch as th
        def f(q, k, v):
            with th.autocast("cuda"):
                # the normaliser
                with th.autocast(device_type=q.device.type, enabled=False):
                    denom = th.einsum("nld,nd->nl", q.float(), k.float().sum(dim=1)) + 1e-4
                out = th.einsum("nld,ndv->nlv", q, v) / denom[..., None]
            return out
    """)


def test_no_fix_where_float32_would_meet_other_float16_ops():
    # The outer einsum would get float16 Q, KV and a float32 normaliser: not a fix.
    src = """
        import torch
        def f(Q, K, KV):
            with torch.autocast("cuda"):
                return torch.einsum("nld,ndv,nl->nlv", Q, KV, 1 / torch.einsum("nld,nd->nl", Q, K.sum(1)))
    """
    [f] = findings(src)
    assert f.fix is None
    assert fixed(src) == textwrap.dedent(src)


def test_fix_replaces_a_cast_back_to_float16_and_casts_only_the_tensor_of_a_guarded_operand():
    # performer-pytorch's normaliser: k_cumsum.type_as(q) would round the float32 sum to float16
    src = """
        import torch
        def f(q, k, eps=1e-4):
            with torch.autocast("cuda"):
                k_cumsum = k.cumsum(dim=-2)
                D_inv = 1. / torch.einsum('...nd,...nd->...n', q, k_cumsum.type_as(q) + eps)
            return D_inv
    """
    assert fixed(src) == textwrap.dedent("""
        import torch
        def f(q, k, eps=1e-4):
            with torch.autocast("cuda"):
                k_cumsum = k.cumsum(dim=-2)
                with torch.autocast(device_type=q.device.type, enabled=False):
                    D_inv = 1. / torch.einsum('...nd,...nd->...n', q.float(), k_cumsum.float() + eps)
            return D_inv
    """)


def test_a_normaliser_used_twice_is_moved_once():
    src = """
        import torch
        def f(q, k, a, b):
            with torch.autocast("cuda"):
                denom = torch.einsum("nd,nd->n", q, k)[:, None]
                return a / denom, b / denom
    """
    found = findings(src)
    assert len(found) == 2 and all(f.fix is not None for f in found)
    assert fixed(src) == textwrap.dedent("""
        import torch
        def f(q, k, a, b):
            with torch.autocast("cuda"):
                with torch.autocast(device_type=q.device.type, enabled=False):
                    denom = torch.einsum("nd,nd->n", q.float(), k.float())[:, None]
                return a / denom, b / denom
    """)


FAVOR = """
import torch
from torch import nn
class FavorAttention(nn.Module):
    def forward(self, q, k, v):
        q_prime, k_prime = q.relu(), k.relu()
        if not self.causal:
            att_normalization = q_prime @ (k_prime.transpose(-2, -1) @ torch.ones_like(v))
            att_raw = q_prime @ (k_prime.transpose(-2, -1) @ v)
        else:
            att_raw, att_normalization = self._causal_attention(k_prime, q_prime, v)
        {after}
        return att_raw / att_normalization
"""


def test_a_denominator_bound_on_one_branch_reaches_the_division():
    # xformers' FAVOR attention (fixed upstream): the non-causal branch's product is the denominator
    from training_util import lines
    assert lines("AMP203", FAVOR.format(after="pass"), filename="favor.py", extra_files={"train.py": MIXED}) == [13]
    # near miss: rebound on every path after the branches, the product no longer reaches the division
    rebound = FAVOR.format(after="att_normalization = torch.ones_like(att_raw)")
    assert lines("AMP203", rebound, filename="favor.py", extra_files={"train.py": MIXED}) == []


def test_a_product_of_masks_is_a_count():
    # openfold's outer-product-mean normaliser: einsum(mask, mask) counts the valid pairs
    from training_util import lines
    source = """
    import torch
    from torch import nn
    class OuterProductMean(nn.Module):
        def forward(self, outer, mask, a):
            norm = torch.einsum("...abc,...adc->...bdc", mask.unsqueeze(-1), mask.unsqueeze(-1))
            return outer / (norm + 1e-3)
    """
    assert lines("AMP203", source, filename="opm.py", extra_files={"train.py": MIXED}) == []
    # near miss: a product of activations used the same way
    activations = source.replace("mask.unsqueeze(-1), mask.unsqueeze(-1)", "a, a")
    assert lines("AMP203", activations, filename="opm.py", extra_files={"train.py": MIXED}) == [7]


TOP_P = """
    import torch

    def sample_top_p(probs, p):
        probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
        probs_sum = torch.cumsum(probs_sort, dim=-1)
        probs_sort[probs_sum - probs_sort > p] = 0.0
        probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
        return torch.gather(probs_idx, -1, torch.multinomial(probs_sort, num_samples=1))

    def generate(model, x):
        logits = model(x)
        return sample_top_p({probs}, 0.9)
"""


def test_a_sum_of_sorted_probabilities_a_caller_passes_is_at_most_one():
    # a top-p sampler: every caller hands it a softmax, sorted and partly zeroed before the sum
    assert only(TOP_P.format(probs="torch.softmax(logits / 0.7, dim=-1)"), extra_files={"train.py": HALF}) == []


def test_near_miss_a_caller_passing_unbounded_values_keeps_the_finding():
    assert only(TOP_P.format(probs="torch.relu(logits)"), extra_files={"train.py": HALF}) == ["AMP203"]


SPARSE_COUNTS = """
    import torch

    def to_counts(index_tensor, n):
        values = torch.ones([index_tensor.size(1)], dtype={dtype})
        dense = torch.sparse_coo_tensor(index_tensor, values, (n, n)).to_dense()
        return dense / dense.sum(-1, keepdim=True)

    def step(model, batch):
        return model(to_counts(batch.half(), 8).half())
"""


def test_a_sparse_tensor_has_its_values_dtype_not_its_indices():
    # OpenNMT-py's alignment matrix (triage T7-17): float32 ones at float16-typed indices
    assert only(SPARSE_COUNTS.format(dtype="torch.float"), extra_files={"train.py": HALF}) == []


def test_near_miss_float16_values_keep_the_finding():
    assert only(SPARSE_COUNTS.format(dtype="torch.float16"), extra_files={"train.py": HALF}) == ["AMP203"]
