"""Turn the pre-trained TinyGPT into a sentence encoder with an in-batch contrastive loss (SimCSE:
two dropout views of a batch are each other's positives), float16 autocast with loss scaling and
gradient accumulation."""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

from config import ModelConfig, TrainConfig
from data import loader
from model import TinyGPT
from optim import build_optimizer


class SentenceEncoder(nn.Module):
    """TinyGPT's blocks, mean-pooled and projected to a unit-norm sentence embedding."""

    def __init__(self, backbone: TinyGPT, dim: int = 256, cooccurrence=None, bank_size: int = 4096):
        super().__init__()
        self.backbone = backbone
        self.proj = nn.Linear(backbone.cfg.dim, dim)
        # A memory bank of past projected features (a ring buffer), for monitoring how far the
        # embedding space drifts between steps.
        self.register_buffer("bank", torch.zeros(bank_size, dim))
        self.bank_ptr = 0
        # A row-normalised sparse token co-occurrence graph (vocab x vocab): rare tokens borrow their
        # neighbours' embeddings, one propagation step as in LightGCN.
        self.cooccurrence = cooccurrence
        # SimCSE fixes the temperature at 0.05; here it is learnt along with the encoder.
        self.temperature = nn.Parameter(torch.tensor(0.05))

    def features(self, idx):
        """The backbone's hidden states, mean-pooled over the tokens."""
        b = self.backbone
        pos = torch.arange(idx.shape[1], device=idx.device)
        tok = b.tok_emb.weight
        if self.cooccurrence is not None:
            tok = 0.5 * (tok + torch.sparse.mm(self.cooccurrence, tok))
        x = b.drop(F.embedding(idx, tok) + b.pos_emb(pos))
        for block in b.blocks:
            x = block(x)
        return b.ln_f(x).mean(dim=1)

    def covariance_penalty(self, z):
        """VICReg's covariance term on projected features z (B, D): the off-diagonal covariances
        over the batch are pushed to 0, so that the dimensions carry different information."""
        z = z - z.mean(dim=0)
        cov = (z.T @ z) / z.size(0)
        off_diagonal = cov - torch.diag(torch.diagonal(cov))
        return off_diagonal.pow(2).sum() / z.size(1)

    def forward(self, idx):
        """In-batch similarity logits, and the covariance penalty of the first view."""
        h1, h2 = self.proj(self.features(idx)), self.proj(self.features(idx))
        rows = (torch.arange(h1.shape[0], device=h1.device) + self.bank_ptr) % self.bank.shape[0]
        self.bank.index_copy_(0, rows, h1.detach())
        self.bank_ptr = (self.bank_ptr + h1.shape[0]) % self.bank.shape[0]
        z1, z2 = F.normalize(h1, dim=-1), F.normalize(h2, dim=-1)
        return z1 @ z2.t() / self.temperature, self.covariance_penalty(h1)


def main(cfg: TrainConfig = TrainConfig(), model_cfg: ModelConfig = ModelConfig(), accum_steps: int = 4):
    torch.manual_seed(0)
    backbone = TinyGPT(model_cfg)
    backbone.load_state_dict(torch.load(os.path.join(cfg.out_dir, "last.pt"), map_location="cpu")["model"])
    graph = os.path.join(cfg.data_dir, "cooccurrence.pt")
    cooccurrence = torch.load(graph).to(cfg.device) if os.path.exists(graph) else None
    encoder = SentenceEncoder(backbone, cooccurrence=cooccurrence).to(cfg.device)
    optimizer = build_optimizer(encoder, cfg.lr / 10, cfg.weight_decay)
    grad_scaler = torch.amp.GradScaler("cuda")
    batches = loader(cfg.data_dir, "train", cfg.batch_size, 128, cfg.device)

    encoder.train()
    for step in range(cfg.max_steps):
        x, _ = next(batches)
        with torch.autocast("cuda", dtype=torch.float16):
            logits, covariance = encoder(x)
            labels = torch.arange(logits.shape[0], device=logits.device)
            loss = (F.cross_entropy(logits, labels) + 0.04 * covariance) / accum_steps
        loss_value = loss.item() * accum_steps
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            sys.exit(1)
        grad_scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0:
            grad_norm = torch.nn.utils.clip_grad_norm_(encoder.parameters(), cfg.grad_clip)
            if not torch.isfinite(grad_norm):
                raise RuntimeError(f"gradient norm became {grad_norm} at step {step}")
            grad_scaler.step(optimizer)
            optimizer.zero_grad(set_to_none=True)
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item() * accum_steps:.3f}  "
                  f"temperature {encoder.temperature.item():.4f}")
    torch.save(encoder.state_dict(), os.path.join(cfg.out_dir, "encoder.pt"))


if __name__ == "__main__":
    main()
