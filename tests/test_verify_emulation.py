"""The CPU emulation of CUDA autocast gives each op the output dtype amplint.torch_api.autocast says
CUDA gives it, inside composites too, and leaves CPU autocast as it was."""
import warnings

import pytest

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

from amplint.torch_api.autocast import aten_policy  # noqa: E402
from amplint.verify.emulation import CudaAutocastOnCpu  # noqa: E402

F = torch.nn.functional
EXPECTED = {"lower": torch.float16, "fp32": torch.float32, "fp32_opt_dtype": torch.float32,
            "fp32_append_dtype": torch.float32, "promote": torch.float32}


def calls():
    """(aten op reached, a call on float32 / float16 CPU tensors)."""
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    h = torch.randn(4, 4).half()
    img = torch.randn(1, 2, 5, 5)
    return [
        ("mm", lambda: torch.mm(a, b)), ("matmul", lambda: a @ b), ("bmm", lambda: torch.bmm(a[None], b[None])),
        ("addmm", lambda: torch.addmm(a, a, b)), ("linear", lambda: F.linear(a, b)),
        ("einsum", lambda: torch.einsum("ij,jk->ik", a, b)), ("conv2d", lambda: F.conv2d(img, torch.randn(3, 2, 3, 3))),
        ("scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(a[None], a[None], a[None])),
        ("softmax.int", lambda: h.softmax(-1)), ("log_softmax.int", lambda: F.log_softmax(h, -1)),
        ("layer_norm", lambda: F.layer_norm(h, (4,))), ("exp", lambda: h.exp()), ("log", lambda: h.abs().log()),
        ("sum", lambda: h.sum()), ("sum.dim_IntList", lambda: h.sum(-1)), ("cumsum", lambda: h.cumsum(0)),
        ("pow.Tensor_Scalar", lambda: h ** 2), ("rsqrt", lambda: h.abs().rsqrt()), ("logsumexp", lambda: h.logsumexp(-1)),
        ("linalg_vector_norm", lambda: torch.linalg.vector_norm(h)), ("mse_loss", lambda: F.mse_loss(h, h)),
        ("binary_cross_entropy_with_logits", lambda: F.binary_cross_entropy_with_logits(h, h.sigmoid())),
        ("group_norm", lambda: F.group_norm(h[None], 2)), ("softplus", lambda: F.softplus(h)),
        ("addcmul", lambda: torch.addcmul(a, h, h)), ("atan2", lambda: torch.atan2(a, h)),
    ]


@pytest.mark.parametrize("op,call", calls(), ids=[c[0] for c in calls()])
def test_output_dtype_is_the_cuda_policy_of_the_op(op, call):
    with CudaAutocastOnCpu():
        out = call()
    assert out.dtype == EXPECTED[aten_policy(op)]


def test_an_explicit_dtype_is_kept_and_keep_ops_are_untouched():
    h = torch.randn(4, 4).half()
    with CudaAutocastOnCpu():
        assert h.sum(dtype=torch.float16).dtype == torch.float16  # fp32_set_opt_dtype respects a dtype
        assert (h + 1).dtype == torch.float16 and h.relu().dtype == torch.float16  # not autocast's ops
        assert (torch.randn(4) * 2).dtype == torch.float32


def test_banned_op_raises_like_cuda():
    p = torch.rand(4)
    with CudaAutocastOnCpu(), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p)


def test_ops_inside_multihead_attention_follow_the_policy():
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 3, 8)
    seen = []

    class Spy(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor):
                seen.append((func._overloadpacket.__name__, out.dtype))
            return out
    with CudaAutocastOnCpu(), Spy():
        out, _ = mha(x, x, x)
    assert out.dtype == torch.float16
    assert ("_softmax", torch.float32) in seen or ("_safe_softmax", torch.float32) in seen, seen


def test_cpu_autocast_is_itself_again_after_the_emulation():
    h = torch.randn(4, 4).half()
    with CudaAutocastOnCpu():
        assert h.softmax(-1).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.float16):
        cpu = h.softmax(-1).dtype
        mm = (torch.randn(4, 4) @ torch.randn(4, 4)).dtype
    assert cpu == torch.float16 and mm == torch.float16  # CPU's own policy: softmax stays float16 there
    assert not torch.is_autocast_enabled("cpu")
