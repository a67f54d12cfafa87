"""A half cast of a model some of whose parameters an optimizer trains (the diffusers scripts'
`unet.to(device, dtype=weight_dtype)`, `weight_dtype = torch.float16` when accelerate's mixed precision is fp16)
makes those parameters float16, in place, also after the optimizer was built over them: AdamW's eps=1e-8 is then
on float16 parameters (AMP101). A module frozen with `requires_grad_(False)` whose parameters a loop sets
trainable again is not frozen. (docs/precision.md, "Evidence and its roles"; held-out bug B45, ControlNeXt's
train_controlnext.py, "Attempting to unscale FP16 gradients".)"""
import textwrap

from cliutil import run, write_project

TRAIN = """
import argparse
import torch
import torch.nn as nn
from accelerate import Accelerator


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adam_epsilon", type=float, default={eps})
    parser.add_argument("--use_8bit_adam", action="store_true")
    args = parser.parse_args()
    accelerator = Accelerator(mixed_precision="fp16")
    controlnet = nn.Linear(64, 64)
    unet = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
    unet.requires_grad_(False)
    params_to_optimize = [{"params": controlnet.parameters(), "lr": 1e-4}]
    for name, para in unet.named_parameters():
        if name.startswith("1."):
            para.requires_grad = {trained}
            para.data = para.to(torch.float32)
            params_to_optimize.append({"params": para})
    if args.use_8bit_adam:
        import bitsandbytes as bnb
        optimizer_class = bnb.optim.AdamW8bit
    else:
        optimizer_class = torch.optim.AdamW
    optimizer = optimizer_class(params_to_optimize, lr=1e-4, eps=args.adam_epsilon)
    controlnet, unet, optimizer = accelerator.prepare(controlnet, unet, optimizer)
    weight_dtype = torch.float32
    if accelerator.mixed_precision == "fp16":
        weight_dtype = torch.float16
    unet.to(accelerator.device, dtype=weight_dtype)
    {recast}
    for _ in range(10):
        x = torch.randn(4, 64, device=accelerator.device, dtype=weight_dtype)
        loss = unet(controlnet(x)).float().pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""
RECAST = """for p in unet.parameters():
        if p.requires_grad:
            p.data = p.data.float()"""


def _amp101(tmp_path, eps="1e-08", trained="True", recast=""):
    text = TRAIN.replace("{eps}", eps).replace("{trained}", trained).replace("{recast}", recast)
    root = write_project(tmp_path, {"train.py": textwrap.dedent(text)})
    result = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP101", "."], root)
    return [line for line in result.out.splitlines() if "AMP101" in line]


def test_the_half_cast_reaches_the_optimized_parameters(tmp_path):
    found = _amp101(tmp_path)
    assert len(found) == 1 and "AdamW eps=1e-8 on float16 parameters" in found[0]


def test_near_misses(tmp_path):
    # the U-Net stays frozen (its cast is a float16 feature extractor's); a safe eps default; the trained
    # parameters cast back to float32 after the half cast
    assert _amp101(tmp_path / "frozen", trained="False") == []
    assert _amp101(tmp_path / "eps", eps="1e-4") == []
    assert _amp101(tmp_path / "recast", recast=RECAST) == []


def test_an_options_default_eps_is_read_only_for_a_known_model(tmp_path):
    # one optimizer per parameter (`optimizer_class([{"params": p}], eps=args.adam_epsilon)`) names no model: the
    # half cast of another object does not say its parameters are half, so the option's default is not asked
    text = textwrap.dedent(TRAIN.replace("{eps}", "1e-08").replace("{trained}", "True").replace("{recast}", ""))
    text = text.replace("optimizer = optimizer_class(params_to_optimize, lr=1e-4, eps=args.adam_epsilon)",
                        "optimizer = [optimizer_class([{'params': p}], lr=1e-4, eps=args.adam_epsilon)\n"
                        "                 for p in controlnet.parameters()][0]")
    text = text.replace("unet.to(accelerator.device, dtype=weight_dtype)", "unet.half()")
    root = write_project(tmp_path, {"train.py": text})
    out = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP101", "."], root).out
    assert "AMP101" not in out
