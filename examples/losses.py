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
