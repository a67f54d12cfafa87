"""Distil a large classifier into a small one (Hinton et al.'s soft targets), with float16 autocast
to make the teacher's forward passes cheap."""
import torch
import torch.nn.functional as F
from torch import nn


def mlp(in_dim: int, width: int, depth: int, n_classes: int) -> nn.Sequential:
    layers, d = [], in_dim
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.GELU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, n_classes))


def distill(teacher: nn.Module, student: nn.Module, loader, epochs: int = 10, temperature: float = 4.0,
            alpha: float = 0.9, lr: float = 1e-3, device: str = "cuda"):
    optimizer = torch.optim.AdamW(student.parameters(), lr=lr)
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            with torch.autocast("cuda", dtype=torch.float16):
                with torch.no_grad():
                    soft_targets = F.softmax(teacher(x) / temperature, dim=-1)
                logits = student(x)
                kd = F.kl_div(F.log_softmax(logits / temperature, dim=-1), soft_targets, reduction="batchmean")
                loss = alpha * kd * temperature ** 2 + (1 - alpha) * F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    return student


if __name__ == "__main__":
    teacher = mlp(784, 1024, 4, 10).cuda()
    teacher.load_state_dict(torch.load("teacher.pt"))
    student = mlp(784, 128, 2, 10).cuda()
    data = torch.utils.data.TensorDataset(torch.randn(1024, 784), torch.randint(0, 10, (1024,)))
    distill(teacher, student, torch.utils.data.DataLoader(data, batch_size=64, shuffle=True))
