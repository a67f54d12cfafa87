"""AMP301 fp16-autocast-without-grad-scaler: true positives in several shapes, named near misses."""
import pytest

from training_util import found, lines

LOOP = """
import torch
import torch.nn.functional as F

model = torch.nn.Linear(16, 1).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
"""


def test_script_loop_is_flagged_at_the_backward_and_names_the_autocast():
    (line, message), = found("AMP301", LOOP)
    assert line == 12
    assert "no GradScaler" in message and "2^-24" in message
    assert 'torch.autocast("cuda", dtype=torch.float16)' in message and "snippet.py:10" in message


@pytest.mark.parametrize("name, source, line", [
    ("alias and deprecated API in a function", """
        import torch as th

        def train(model, loader, opt):
            for x, y in loader:
                with th.cuda.amp.autocast():
                    loss = model(x, y)
                loss.backward()
                opt.step()
        """, 8),
    ("method, from-import, device keyword", """
        from torch import autocast

        class Trainer:
            def train_step(self, batch):
                with autocast(device_type="cuda"):
                    loss = self.model(**batch).loss
                loss.backward()
                self.optimizer.step()
        """, 8),
    ("autocast decorator", """
        import torch

        @torch.autocast("cuda")
        def step(model, x, y, opt):
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            opt.step()
        """, 7),
    ("backward inside the block, multi-line autocast, accumulated loss", """
        import torch

        def run(model, batches, opt, accum):
            for x in batches:
                with torch.autocast(
                    "cuda",
                    dtype=torch.float16,
                ):
                    loss = model(x)
                    (loss / accum).backward()
        """, 11),
    ("enabled flag that is not a literal", """
        import torch

        def run(model, batches, opt, use_amp):
            for x in batches:
                with torch.autocast("cuda", enabled=use_amp):
                    loss = model(x)
                loss.backward()
                opt.step()
        """, 8),
])
def test_flags_unscaled_fp16_steps(name, source, line):
    assert lines("AMP301", source) == [line], name


# the loop hands its optimizer to a step of the project's (which may use a scaler built elsewhere)
LOOP_STEPPED_ELSEWHERE = LOOP.replace("    optimizer.step()\n", "    apply_step(optimizer)\n")

NATIVE_SCALER = """
import torch

class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()
"""


@pytest.mark.parametrize("name, source, extra", [
    # (a scaler built elsewhere may be handed to a step this loop does not take plainly; a loop that runs
    # ``optimizer.step()`` itself is flagged: tests/test_amp301_other_programs_flags.py)
    ("GradScaler created in another file of the project", LOOP_STEPPED_ELSEWHERE,
     {"amp_utils.py": "import torch\nscaler = torch.amp.GradScaler('cuda')\n"}),
    ("a wrapper class in another file constructs the GradScaler (timm's NativeScaler)", LOOP_STEPPED_ELSEWHERE,
     {"scaler.py": NATIVE_SCALER}),
    # (a trainer flag of the program that runs the loop; another program's flag scales that program's steps only:
    # tests/test_amp301_other_programs_flags.py)
    ("Hugging Face TrainingArguments(fp16=True)", "import args  # noqa: F401\n" + LOOP,
     {"args.py": "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True)\n"}),
    ("Lightning Trainer(precision=16)", "import cli  # noqa: F401\n" + LOOP,
     {"cli.py": "import lightning as L\ntrainer = L.Trainer(precision=16)\n"}),
    ("bf16 autocast", LOOP.replace("torch.float16", "torch.bfloat16"), None),
    ("autocast disabled", LOOP.replace('"cuda", dtype=torch.float16', '"cuda", enabled=False'), None),
    ("dtype is a variable (may be bfloat16)", LOOP.replace("torch.float16", "amp_dtype"), None),
    ("inference-only autocast without backward", """
        import torch

        @torch.no_grad()
        def evaluate(model, loader):
            with torch.autocast("cuda"):
                return [model(x) for x in loader]
        """, None),
    ("backward before the autocast block (fp32 step, fp16 evaluation)", """
        import torch

        def train_then_eval(model, x, y, opt, val):
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            opt.step()
            with torch.autocast("cuda"):
                return model(val)
        """, None),
    ("pure half training (GradScaler cannot unscale fp16 gradients)", LOOP.replace(
        ".cuda()", ".cuda().half()"), None),
    ("engine backward: accelerator scales itself", """
        import torch

        def step(accelerator, model, x, opt):
            with torch.autocast("cuda"):
                loss = model(x)
            accelerator.backward(loss)
            opt.step()
        """, None),
    ("scaler handed in as a parameter", """
        import torch

        def step(model, x, opt, scaler):
            with torch.autocast("cuda"):
                loss = model(x)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        """, None),
    ("loss scaled by hand", """
        import torch

        def step(model, x, opt, loss_scale):
            with torch.autocast("cuda"):
                loss = model(x)
            (loss * loss_scale).backward()
            for p in model.parameters():
                p.grad /= loss_scale
            opt.step()
        """, None),
    ("a test function checking gradients under autocast", """
        import torch

        def test_grads_flow():
            model = torch.nn.Linear(4, 4).cuda()
            with torch.autocast("cuda"):
                out = model(torch.randn(2, 4, device="cuda"))
            out.sum().backward()
        """, None),
])
def test_near_misses_stay_silent(name, source, extra):
    assert lines("AMP301", source, extra_files=extra) == [], name


def test_a_logit_scale_inside_the_loss_is_not_loss_scaling():
    source = """
        import torch
        import torch.nn.functional as F

        def step(model, x, y, opt):
            with torch.autocast("cuda"):
                logits = model(x)
            loss = F.cross_entropy(logits * model.logit_scale, y)
            loss.backward()
            opt.step()
        """
    assert lines("AMP301", source) == [9]


def test_test_modules_are_not_training_runs():
    assert lines("AMP301", LOOP, filename="tests/test_loop.py") == []
    assert lines("AMP301", LOOP, filename="test_loop.py") == []
    assert lines("AMP301", LOOP, filename="latest.py") == [12]


# llm.c / nanoGPT: the autocast is built once, held in a variable and entered as ``with ctx:``; its
# dtype is looked up in a dict of dtypes by a command-line option.
HELD = """
import argparse
from contextlib import nullcontext

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--dtype", default="float32", help="float32|float16|bfloat16")
args = parser.parse_args()
model = torch.nn.Linear(16, 1).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[args.dtype]
ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype) if args.device == "cuda" else nullcontext()
for x in loader:
    with ctx:
        loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
"""


def test_an_autocast_held_in_a_variable_with_a_float16_option_is_flagged():
    (line, message), = found("AMP301", HELD)
    assert line == 17
    assert "snippet.py:13" in message  # the autocast call, where the variable is bound


def test_a_named_dict_of_dtypes_is_looked_up_like_a_literal_one():
    source = HELD.replace('ptdtype = {', 'DTYPES = {').replace('}[args.dtype]', '}\nptdtype = DTYPES[args.dtype]')
    assert lines("AMP301", source) == [18]


@pytest.mark.parametrize("name, source", [
    ("the options hold no float16", HELD.replace(', "float16": torch.float16', "")),
    ("a GradScaler enabled for the float16 option (nanoGPT)",
     HELD.replace("for x in loader:", 'scaler = torch.amp.GradScaler("cuda", enabled=(args.dtype == "float16"))\n'
                  "for x in loader:").replace("loss.backward()", "scaler.scale(loss).backward()")
         .replace("opt.step()", "scaler.step(opt)\n    scaler.update()")),
    ("the variable holds no autocast", HELD.replace(
        'torch.amp.autocast(device_type="cuda", dtype=ptdtype) if args.device == "cuda" else nullcontext()',
        "nullcontext()")),
    ("a dtype the project cannot resolve (may be bfloat16)", HELD.replace("dtype=ptdtype", "dtype=model.dtype")),
])
def test_held_autocast_near_misses(name, source):
    assert lines("AMP301", source) == [], name


def test_a_held_autocast_opens_where_the_with_enters_it_not_where_it_is_assigned():
    # llm.c dumps reference gradients with one plain float32 backward before its loop: that backward
    # comes after the autocast is assigned but runs under no autocast; the loop's backward does
    source = HELD.replace("for x in loader:", "model(x0).sum().backward()\nfor x in loader:")
    assert lines("AMP301", source) == [18]
