"""Training objectives."""
import torch
import torch.nn.functional as F


def lm_loss(logits, targets, label_smoothing: float = 0.0, ignore_index: int = -100):
    """Next-token cross entropy over (B, T, V) logits."""
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                           ignore_index=ignore_index, label_smoothing=label_smoothing)


@torch.no_grad()
def token_accuracy(logits, targets, ignore_index: int = -100):
    keep = targets != ignore_index
    correct = (logits.argmax(dim=-1) == targets) & keep
    return correct.sum().float() / keep.sum().clamp(min=1)


def binary_focal_loss(logits, targets, gamma: float = 2.0):
    """Focal loss for the multi-label "which tokens appear" auxiliary head."""
    probs = torch.sigmoid(logits)
    pos = targets * (1 - probs) ** gamma * torch.log(probs)
    neg = (1 - targets) * probs ** gamma * torch.log(1 - probs)
    return -(pos + neg).mean()
