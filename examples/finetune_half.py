"""Fine-tune a pre-trained TinyGPT entirely in float16 (weights, activations and optimizer state) to
halve its memory: the model is converted with .half() and there is no loss scaling."""
import argparse

import torch

from config import ModelConfig
from data import loader
from losses import lm_loss
from model import TinyGPT
from optim import build_optimizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default="checkpoints/last.pt")
    parser.add_argument("--data-dir", default="data/instructions")
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()

    model = TinyGPT(ModelConfig())
    model.load_state_dict(torch.load(args.checkpoint, map_location="cpu")["model"])
    model = model.cuda().half()
    optimizer = build_optimizer(model, args.lr, weight_decay=0.0)

    batches = loader(args.data_dir, "train", batch_size=8, seq_len=512, device="cuda")
    model.train()
    for step in range(args.steps):
        x, y = next(batches)
        loss = lm_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.3f}")
    torch.save(model.state_dict(), "checkpoints/finetuned-fp16.pt")


if __name__ == "__main__":
    main()
