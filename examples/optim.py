"""The optimizer and learning-rate schedule shared by pre-training and fine-tuning."""
import math

import torch


def build_optimizer(model, lr: float, weight_decay: float = 0.1, betas=(0.9, 0.95)):
    """AdamW with weight decay on matrices only (not on biases, norms or embeddings' positions)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def cosine_lr(step: int, base_lr: float, min_lr: float, warmup: int, total: int) -> float:
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
