"""AMP101 on a half model taken only in some runs beside a mixed-precision option (open_clip's
``--precision fp16`` / ``pure_fp16`` beside its ``amp``, triage T6-14): the code is judged under fp16
autocast, but the runs that take the cast step float16 parameters with the optimizer's eps."""
import json
import textwrap

from cliutil import run, write_project

TRAIN = """
import torch
from torch import nn
def main(args, loader):
    model = nn.Linear(8, 8)
    {cast}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-8)
    scaler = torch.amp.GradScaler("cuda") if args.precision == "amp" else None
    for x, y in loader:
        with torch.autocast("cuda", enabled=args.precision == "amp"):
            loss = nn.functional.mse_loss(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
    {after}
"""


def _codes(tmp_path, cast="", after=""):
    text = TRAIN.replace("{cast}", cast).replace("{after}", after or "pass")
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(text)})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [(f["code"], f["location"]["row"]) for f in json.loads(r.out) if f["code"] != "AMP501"]


def test_a_half_option_beside_autocast_steps_half_parameters(tmp_path):
    assert _codes(tmp_path, cast='if args.precision in ("fp16", "pure_fp16"):\n        model.half()') == [("AMP101", 8)]


def test_an_inference_half_cast_after_training_is_no_run_of_the_optimizer(tmp_path):
    # near miss: the model is cast for inference after the last step
    assert _codes(tmp_path, after="model.half()\n    return model(torch.zeros(1, 8).half())") == []


def test_a_mixed_precision_script_without_a_half_option_is_silent(tmp_path):
    assert _codes(tmp_path) == []


def test_a_new_head_trained_beside_a_half_option_of_the_backbone_is_float32(tmp_path):
    # near miss (open_clip's genlip_attentive_probe.py): the backbone comes from a factory that may convert it to
    # half; the optimizer trains a new head, not the converted model
    factory = ("from torch import nn\n\ndef create(precision):\n    model = nn.Linear(8, 8)\n"
               "    if precision == 'fp16':\n        model.half()\n    return model\n")
    text = TRAIN.replace("model = nn.Linear(8, 8)", "model = create(args.precision)\n    head = nn.Linear(8, 2)") \
        .replace("from torch import nn", "from torch import nn\nfrom factory import create") \
        .replace("AdamW(model.parameters()", "AdamW(head.parameters()").replace("{cast}", "").replace("{after}", "pass")
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(text), "factory.py": factory})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    assert [f["code"] for f in json.loads(r.out) if f["code"] != "AMP501"] == []
