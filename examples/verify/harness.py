"""Harness for `amplint verify`: each function builds a tiny model and returns ``step`` (one forward
pass returning a scalar loss), ``optimizer`` and, for mixed precision, a ``GradScaler``. The verifier
runs the step in float32 and under (CUDA, or CUDA-emulated) float16 autocast. Every hazard has an
fp16-safe twin (``*_safe``) that computes the same thing without the float16 failure."""
import math

import torch
import torch.nn.functional as F
from torch import nn

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
NOISE = 0.05  # how far apart the pairs of a batch are


def _scaler(init_scale=2.0 ** 16):
    return torch.amp.GradScaler(DEVICE, init_scale=init_scale)


# --- a linear-attention normaliser computed in float16 (Katharopoulos et al.): Q·sum(K) overflows
class LinearAttention(nn.Module):
    def __init__(self, dim, eps=1e-4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.eps = eps

    def forward(self, Q, K, V):
        Q = nn.functional.elu(self.proj(Q)) + 1
        K = nn.functional.elu(self.proj(K)) + 1
        KV = torch.einsum("nsd,nsv->ndv", K, V)
        Z = 1 / (torch.einsum("nld,nd->nl", Q, K.sum(dim=1)) + self.eps)
        return torch.einsum("nld,ndv,nl->nlv", Q, KV, Z)


class SafeLinearAttention(LinearAttention):
    def forward(self, Q, K, V):
        Q = nn.functional.elu(self.proj(Q)) + 1
        K = nn.functional.elu(self.proj(K)) + 1
        KV = torch.einsum("nsd,nsv->ndv", K, V)
        with torch.autocast(device_type=Q.device.type, enabled=False):
            Z = 1 / (torch.einsum("nld,nd->nl", Q.float(), K.float().sum(dim=1)) + self.eps)
        return torch.einsum("nld,ndv,nl->nlv", Q, KV, Z)


def _attention_run(model):
    torch.manual_seed(0)
    with torch.no_grad():
        model.proj.weight.copy_(torch.eye(16) * 3)
        model.proj.bias.fill_(2.0)
    q, k = (torch.rand(2, 256, 16, device=DEVICE) * 4 for _ in range(2))
    v = torch.rand(2, 256, 16, device=DEVICE) * 0.01
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        return model(q, k, v).float().pow(2).mean()
    return step, optimizer, _scaler()


def einsum_normaliser():
    return _attention_run(LinearAttention(16).to(DEVICE))


def einsum_normaliser_safe():
    return _attention_run(SafeLinearAttention(16).to(DEVICE))


# --- a padding mask filled with -1e9: not a float16 number
class MaskedAttention(nn.Module):
    def __init__(self, dim, safe=False):
        super().__init__()
        self.qk = nn.Linear(dim, 2 * dim)
        self.safe = safe

    def forward(self, x, mask):
        q, k = self.qk(x).chunk(2, dim=-1)
        scores = q @ k.transpose(-1, -2)
        if self.safe:
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores.masked_fill(mask, -1e9)
        return scores.softmax(-1) @ x


def _mask_run(model):
    x = torch.randn(2, 8, 16, device=DEVICE)
    mask = torch.zeros(2, 8, 8, dtype=torch.bool, device=DEVICE)
    mask[:, :, 6:] = True  # the last two positions are padding
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return (lambda: model(x, mask).pow(2).mean()), optimizer, _scaler()


def mask_fill():
    return _mask_run(MaskedAttention(16).to(DEVICE))


def mask_fill_safe():
    return _mask_run(MaskedAttention(16, safe=True).to(DEVICE))


# --- log of a sigmoid: the probability underflows to 0 in float16, its log is -inf
class Scorer(nn.Module):
    def __init__(self, dim, safe=False):
        super().__init__()
        self.head = nn.Linear(dim, 1)
        self.safe = safe

    def forward(self, x):
        logits = self.head(x)
        if self.safe:
            return F.logsigmoid(logits)
        return torch.log(torch.sigmoid(logits))


def _scorer_run(model):
    x = torch.randn(16, 8, device=DEVICE) * 6  # confident negatives: logits around -20
    with torch.no_grad():
        model.head.weight.fill_(1.0)
        model.head.bias.fill_(-20.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return (lambda: -model(x).mean()), optimizer, _scaler()


def log_sigmoid():
    return _scorer_run(Scorer(8).to(DEVICE))


def log_sigmoid_safe():
    return _scorer_run(Scorer(8, safe=True).to(DEVICE))


# --- a learnable temperature (CLIP's logit_scale) without a clamp: the optimizer grows it to sharpen
# the logits until they overflow float16; every step then overflows and the loss scale collapses
class ContrastiveHead(nn.Module):
    def __init__(self, dim, safe=False):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(100.0)))  # where CLIP's clamp holds it
        self.safe = safe

    def forward(self, images, texts):
        image_features = F.normalize(self.encoder(images), dim=-1)
        text_features = F.normalize(self.encoder(texts), dim=-1)
        if self.safe:
            logits = image_features @ text_features.t() * self.logit_scale.clamp(max=math.log(100)).exp()
        else:
            logits = image_features @ text_features.t() * self.logit_scale.exp()
        labels = torch.arange(logits.shape[0], device=logits.device)
        return F.cross_entropy(logits, labels)


def _contrastive_run(model):
    torch.manual_seed(0)
    # near-duplicate pairs in the batch: a sharper softmax keeps lowering the loss
    images = torch.randn(4, 16, device=DEVICE).repeat(2, 1) + NOISE * torch.randn(8, 16, device=DEVICE)
    texts = images.clone()
    optimizer = torch.optim.Adam([{"params": model.encoder.parameters(), "lr": 1e-3},
                                  {"params": [model.logit_scale], "lr": 1.0}])
    return (lambda: model(images, texts)), optimizer, _scaler()


def temperature():
    return _contrastive_run(ContrastiveHead(16).to(DEVICE))


def temperature_safe():
    return _contrastive_run(ContrastiveHead(16, safe=True).to(DEVICE))


# --- a clean model: nothing to find
def clean():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).to(DEVICE)
    x = torch.randn(8, 16, device=DEVICE)
    y = torch.randint(0, 4, (8,), device=DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return (lambda: F.cross_entropy(model(x), y)), optimizer, _scaler()
