"""A private module-level helper's parameter is float16 when a caller passes float16. When every
call of the helper is seen (its own file's, and by name in the project's other files) and none passes
float16, the values of a dtype nothing tells (an extension kernel's scores, a cross-file helper's
result) do not make it float16: the regime's guess is for arguments that come from where no call is
seen (Megatron-LM's DSA top-k padding: `torch.full(..., finfo(float32).min, dtype=scores.dtype)` on
the scores of a cuDNN kernel). Near misses: a caller passing a layer's output under fp16 autocast; a
helper no call of which is seen (a forward's input); a public helper (API: code outside the project
may call it); a helper also used as a callback (its calls are not all seen); a public method (calls
through locals are not in the call graph) and a private one another file calls. A private method
only its own file calls (``self._m(...)``) is decided by those calls."""
import textwrap

from amplint.api import lint_source

SRC = """
import torch
from torch import nn
import topk_ext


def _pad(scores, k):
    pad = torch.full((scores.shape[0], k), -1e9, dtype=scores.dtype, device=scores.device)
    return torch.cat((scores, pad), dim=-1)


class Sparse(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        {body}


def train(model, loader, opt):
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""
KERNEL = 'return _pad(topk_ext.top_k(self.proj(x), 8)["values"], 16)'


def amp103(body=KERNEL, extra=""):
    src = textwrap.dedent(SRC).replace("{body}", body) + textwrap.dedent(extra)
    return [f.line for f in lint_source(src, filename="sparse.py") if f.code == "AMP103"]


def test_every_call_seen_none_float16():
    assert amp103() == []


def test_a_cross_file_helper_result_and_a_float32_value():
    assert amp103('s = topk_ext.top_k(self.proj(x), 8)["values"]\n'
                  '        return _pad(s, 16) + _pad(self.proj(x).float(), 16)') == []


def test_near_miss_a_caller_passes_a_float16_layer_output():
    assert amp103('return _pad(topk_ext.top_k(self.proj(x), 8)["values"], 16) + _pad(self.proj(x), 16)') == [8]


def test_near_miss_no_call_seen():
    assert amp103("return self.proj(x)", extra="\n\ndef pad_public(scores, k):\n    return _pad(scores, k)\n") == [8]


def test_near_miss_a_public_helper():
    src = textwrap.dedent(SRC).replace("{body}", KERNEL.replace("_pad(", "pad(")).replace("def _pad(", "def pad(")
    assert [f.line for f in lint_source(src, filename="sparse.py") if f.code == "AMP103"] == [8]


def test_near_miss_also_a_callback():
    assert amp103(KERNEL, extra="\n\nPADDERS = {'zeros': _pad}\n") == [8]


def with_method(name, extra_files=None):
    body = f'return self.{name}(topk_ext.top_k(self.proj(x), 8)["values"], 16)'
    method = (f"    def {name}(self, scores, k):\n"
              "        pad = torch.full((scores.shape[0], k), -1e9, dtype=scores.dtype, device=scores.device)\n"
              "        return torch.cat((scores, pad), dim=-1)\n\n")
    src = textwrap.dedent(SRC).replace("{body}", body).replace("    def forward(self, x):", method + "    def forward(self, x):")
    src = src.replace(src[src.index("def _pad"):src.index("class Sparse")], "")
    return [f.line for f in lint_source(src, filename="sparse.py", extra_files=extra_files) if f.code == "AMP103"]


def test_a_private_method_only_its_class_calls():
    # OpenNMT-py's `self._compute_alignement_loss(align_head=align_head, ...)` after
    # `align_head = align_head.to(loss.dtype)`: a dtype nothing tells, not float16
    assert with_method("_pad") == []


def test_near_miss_a_public_method():
    assert with_method("pad") == [13]


def test_near_miss_a_private_method_another_file_calls():
    # a subclass elsewhere calls it too (calls through a local in another file, against the
    # convention, are not in the call graph: not seen)
    other = "from sparse import Sparse\n\n\nclass Sub(Sparse):\n    def run(self, s):\n        return self._pad(s, 4)\n"
    assert with_method("_pad", extra_files={"other.py": other}) == [13]
