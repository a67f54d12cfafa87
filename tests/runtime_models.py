"""Small models that overflow float16 on purpose, for the runtime guard's tests (CPU, fast)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim: int, gain: float = 1.0) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, dim)
        # gain > 1: qkv sees inputs `gain` times too large and has weights `gain` times smaller, so its
        # outputs and the gradients it passes back are ordinary but its weight gradient is `gain` times
        # too large (activations that grew while the weights shrank).
        self.gain = gain
        with torch.no_grad():
            self.qkv.weight /= gain

    def forward(self, x):
        return x + self.qkv(x * self.gain)


class Block(nn.Module):
    def __init__(self, dim: int, gain: float = 1.0) -> None:
        super().__init__()
        self.attn = Attention(dim, gain)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU())

    def forward(self, x):
        return self.mlp(self.attn(x))


class Net(nn.Module):
    """blocks.0 is tame; blocks.1.attn.qkv sees inputs ``gain`` times larger than it should."""

    def __init__(self, dim: int = 16, classes: int = 4, gain: float = 1.0) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim), Block(dim, gain)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Temperature(nn.Module):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.temperature = nn.Parameter(torch.tensor(value))

    def forward(self, logits):
        return logits / self.temperature


class Contrastive(nn.Module):
    """A learnable temperature (no clamp) that has shrunk: its gradient overflows at any sane scale."""

    def __init__(self, dim: int = 16, temperature: float = 1e-2) -> None:
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.scale = Temperature(temperature)

    def forward(self, x):
        z = F.normalize(self.encoder(x), dim=-1)
        return self.scale(z @ z.t())


def batch(n: int = 8, dim: int = 16, classes: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, dim, generator=g), torch.randint(0, classes, (n,), generator=g)
