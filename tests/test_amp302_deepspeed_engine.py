"""AMP302 for a clip of the script's own between a DeepSpeed fp16 engine's ``backward`` (which scales
the loss by the dynamic loss scale) and its ``step`` (which unscales, then clips by the config's
``"gradient_clipping"``): DeepKE's ChatGLM p-tuning, unseen set 18, M18-1. And the precision of a
model halved before it is handed to a DeepSpeed fp16 engine: float32 master weights (fp16-master),
not pure half. Near misses: a bf16 config, a clip after the engine's step, an engine that is not
DeepSpeed's, a half model stepped by the script's own optimizer."""
import json

from cliutil import run, write_project

TRAIN = '''
import deepspeed
import torch


def main(model, loader):
    model = model.half().cuda()
    conf = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
            "optimizer": {"type": "Adam", "params": {"lr": 1e-5}},
            "{dtype}": {"enabled": True}, "zero_optimization": {"stage": 1}}
    model_engine, optimizer, _, _ = deepspeed.initialize(config=conf, model=model,
                                                         model_parameters=model.parameters())
    for step, (input_ids,) in enumerate(loader):
        loss = model_engine(input_ids=input_ids, labels=input_ids)[0]
        model_engine.backward(loss)
{between}
        model_engine.step()
{after}
'''
CLIP = "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def amp302_rows(tmp_path, dtype="fp16", between=CLIP, after=""):
    root = write_project(tmp_path / "p", {"train.py": TRAIN.replace("{dtype}", dtype).replace("{between}", between)
                                          .replace("{after}", after)})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [f["location"]["row"] for f in json.loads(r.out) if f["code"] == "AMP302"], root


def test_clip_between_a_deepspeed_fp16_backward_and_step(tmp_path):
    rows, _ = amp302_rows(tmp_path)
    assert rows == [16]


def test_a_model_halved_before_a_deepspeed_fp16_engine_keeps_float32_master_weights(tmp_path):
    from amplint.project import Project
    _, root = amp302_rows(tmp_path)
    assert Project(root).regime_for(root / "train.py").mode == "fp16-master"


def test_near_miss_bf16_config(tmp_path):
    rows, _ = amp302_rows(tmp_path, dtype="bf16")
    assert rows == []


def test_near_miss_clip_after_the_engine_step(tmp_path):
    rows, _ = amp302_rows(tmp_path, between="", after=CLIP)
    assert rows == []


def test_near_miss_an_engine_that_is_not_deepspeeds(tmp_path):
    # (a project object named like an engine, whose backward amplint does not know to scale)
    text = TRAIN.replace("model_engine, optimizer, _, _ = deepspeed.initialize(config=conf, model=model,\n"
                         "                                                         model_parameters=model.parameters())",
                         "model_engine = make_engine(model, conf)")
    root = write_project(tmp_path / "p", {"train.py": text.replace("{dtype}", "fp16").replace("{between}", CLIP)
                                          .replace("{after}", "")})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    assert [f for f in json.loads(r.out) if f["code"] == "AMP302"] == []


def test_near_miss_a_half_model_stepped_by_the_scripts_own_optimizer(tmp_path):
    from amplint.project import Project
    root = write_project(tmp_path / "p", {"train.py": (
        "import torch\n\n\ndef main(model, loader):\n    model = model.half().cuda()\n"
        "    opt = torch.optim.Adam(model.parameters())\n    for x in loader:\n        model(x).sum().backward()\n"
        "        opt.step()\n")})
    assert Project(root).regime_for(root / "train.py").mode == "fp16"
