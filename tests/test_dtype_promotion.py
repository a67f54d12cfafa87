"""Dtypes the way torch's type promotion gives them: ``x.to(other)`` takes ``other``'s dtype, and a
0-dim tensor does not promote a dimensioned one of the same category (``attn / torch.sqrt(
torch.tensor(d))`` stays float16). Both hid real fills beyond float16's range (gpt-neox's
``torch.zeros(i, j).to(q)`` mask filled with -1e7; darts' attention scaled by a 0-dim float32
tensor, then filled with -1e9)."""
from training_util import lines

ATTENTION = """
import torch
from torch import nn
MASK_VALUE = -1e7
class Attention(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
    def forward(self, x, mask):
        q, k = self.q(x), self.k(x)
        attn = torch.bmm(q, k.permute(0, 2, 1))
        {body}
def main(loader):
    model = Attention().cuda()
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x, mask in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, mask).logsumexp(-1).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def amp103(body):
    return lines("AMP103", ATTENTION.replace("{body}", body))


def test_to_another_tensor_takes_its_dtype():
    assert amp103("bias = torch.zeros(4, 4).to(q)\n        bias.masked_fill_(mask, MASK_VALUE)\n"
                  "        return attn + bias") == [14]
    # near misses: a move to a device keeps float32; so does .to(q.device)
    assert amp103("bias = torch.zeros(4, 4).to('cuda')\n        bias.masked_fill_(mask, MASK_VALUE)\n"
                  "        return attn + bias") == []
    assert amp103("bias = torch.zeros(4, 4).to(q.device)\n        bias.masked_fill_(mask, MASK_VALUE)\n"
                  "        return attn + bias") == []


def test_a_0_dim_tensor_does_not_promote():
    scaled = ("scale = torch.sqrt(torch.tensor(k.shape[-1]).to(torch.float32))\n"
              "        attn = attn / scale\n        return attn.masked_fill(mask, -1e9)")
    assert amp103(scaled) == [15]
    # near misses: a 1-dim float32 tensor does promote; so does an upcast
    promoted = scaled.replace("torch.tensor(k.shape[-1])", "torch.ones(1)")
    assert amp103(promoted) == []
    assert amp103("attn = attn.float() / 4.0\n        return attn.masked_fill(mask, -1e9)") == []


def test_the_promotion_facts_the_model_relies_on():
    # the model follows torch: checked here on the installed torch (CPU tensors suffice)
    import torch
    half = torch.ones(2, 3, dtype=torch.float16)
    assert (half / torch.sqrt(torch.tensor(3).to(torch.float32))).dtype == torch.float16
    assert (half / torch.ones(1)).dtype == torch.float32
    assert torch.zeros(2, 2).to(half).dtype == torch.float16


def test_parts_mapped_through_a_reshape_keep_their_dtype():
    # gpt-neox (fixed upstream): q, k, v = map(lambda t: rearrange(...), (q, k, v)), then a
    # torch.zeros(i, j).to(q) mask filled with -1e7
    body = ("q, k = map(lambda t: t.reshape(2, -1).transpose(0, 1), (q, k))\n"
            "        bias = torch.zeros(4, 4).to(q)\n        bias.masked_fill_(mask, MASK_VALUE)\n"
            "        return attn + bias")
    assert amp103(body) == [15]
    # near misses: a lambda that is not a reshape (an upcast), and a map over something else
    assert amp103(body.replace("t.reshape(2, -1).transpose(0, 1)", "t.float()")) == []
    assert amp103(body.replace("(q, k))", "(x.float(), x.float()))")) == []
