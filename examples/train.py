"""Pre-train TinyGPT with automatic mixed precision (float16 autocast + loss scaling)."""
import os

import torch
from torch.cuda.amp import GradScaler, autocast

from amplint.runtime import AmpGuard
from config import ModelConfig, TrainConfig
from data import loader
import torch.nn.functional as F

from losses import binary_focal_loss, lm_loss, token_accuracy
from model import TinyGPT
from optim import build_optimizer, cosine_lr


@torch.no_grad()
def evaluate(model, batches, n_batches: int = 50):
    model.eval()
    losses, accs = [], []
    for _ in range(n_batches):
        x, y = next(batches)
        with autocast():
            logits = model(x)
            losses.append(lm_loss(logits, y).item())
            accs.append(token_accuracy(logits, y).item())
    model.train()
    return sum(losses) / len(losses), sum(accs) / len(accs)


def main(cfg: TrainConfig = TrainConfig(), model_cfg: ModelConfig = ModelConfig()):
    torch.manual_seed(0)
    model = TinyGPT(model_cfg).to(cfg.device)
    optimizer = build_optimizer(model, cfg.lr, cfg.weight_decay)
    scaler = GradScaler()
    # Counts non-finite steps (a skipped step now and then is normal with loss scaling), names the layers
    # whose gradients overflow, warns when the loss scale collapses, and stops the run only past
    # max_bad_steps in a window, after saving the batch and the state for analysis.
    guard = AmpGuard(model, optimizer, scaler, max_bad_steps=20, window=1000,
                     dump_dir=os.path.join(cfg.out_dir, "amp_guard"))
    train_batches = loader(cfg.data_dir, "train", cfg.batch_size, cfg.seq_len, cfg.device)
    val_batches = loader(cfg.data_dir, "val", cfg.batch_size, cfg.seq_len, cfg.device)

    for step in range(cfg.max_steps):
        for group in optimizer.param_groups:
            group["lr"] = cosine_lr(step, cfg.lr, cfg.min_lr, cfg.warmup_steps, cfg.max_steps)
        x, y = next(train_batches)
        with autocast():
            logits = model(x)
            loss = lm_loss(logits, y, label_smoothing=cfg.label_smoothing)
            # auxiliary multi-label objective: which vocabulary items occur in the target window
            occurs = torch.zeros_like(logits[:, 0]).scatter_(1, y, 1.0)
            presence = torch.sigmoid(logits.amax(dim=1))
            loss = loss + cfg.aux_weight * F.binary_cross_entropy(presence, occurs)
            loss = loss + cfg.aux_weight * binary_focal_loss(logits.amax(dim=1), occurs)

        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        guard.check_gradients()  # before clipping: the scaler's found-inf, per parameter when set
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        guard.end_step(loss, batch=(x, y), outputs=logits)

        if step % cfg.eval_every == 0:
            val_loss, val_acc = evaluate(model, val_batches)
            print(f"step {step}: train {loss.item():.3f}  val {val_loss:.3f}  acc {val_acc:.3f}  "
                  f"scale {scaler.get_scale():.0f}")
            os.makedirs(cfg.out_dir, exist_ok=True)
            torch.save({"model": model.state_dict(), "step": step}, os.path.join(cfg.out_dir, "last.pt"))


if __name__ == "__main__":
    main()
