"""AMP304 nan-check-raises: true positives in several shapes, named near misses."""
import textwrap

import pytest

from amplint.api import lint_source
from training_util import found, lines

SCALER = "import torch\nscaler = torch.amp.GradScaler('cuda')\n"


@pytest.mark.parametrize("name, source, line", [
    ("raise on torch.isnan of the loss", """
        import torch

        def train(model, loader, opt, scaler):
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                if torch.isnan(loss):
                    raise RuntimeError("NaN loss")
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        """, 9),
    ("gradient norm check after unscale_, raise in the else branch", """
        import torch

        def step(model, loss, opt, scaler):
            with torch.autocast("cuda"):
                loss = model.loss()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if torch.isfinite(grad_norm):
                scaler.step(opt)
            else:
                raise FloatingPointError(f"grad norm {grad_norm}")
            scaler.update()
        """, 13),
    ("one-line if, torch.isinf or torch.isnan", """
        import torch

        @torch.autocast("cuda")
        def step(model, x, opt):
            loss = model(x)
            if torch.isnan(loss) or torch.isinf(loss): raise ValueError(loss)
            loss.backward()
        """, 7),
])
def test_flags_stopping_on_the_first_nonfinite_value(name, source, line):
    assert lines("AMP304", source, extra_files={"amp.py": SCALER}) == [line], name


def test_message_recommends_counting_and_saving():
    (_, message), = found("AMP304", """
        import torch
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x)
            if not torch.isfinite(loss):
                raise FloatingPointError(loss)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        """)
    assert "threshold" in message and "save the batch" in message and "torch.autocast(\"cuda\")" in message
    assert "amplint.runtime.AmpGuard" in message  # the help points to the guard


GUARDED = """
    import torch
    from amplint.runtime import AmpGuard

    def train(model, loader, optimizer, scaler):
        guard = AmpGuard(model, optimizer, scaler, max_bad_steps=20)
        for x, y in loader:
            with guard.watch(batch=(x, y)) as step:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = model(x, y)
                step.record(loss)
                {check}
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
    """


@pytest.mark.parametrize("check", [
    'if not torch.isfinite(loss): raise FloatingPointError("non-finite loss")',
    'assert torch.isfinite(loss), "non-finite loss"',
])
def test_a_check_inside_the_guards_step_is_the_recommended_pattern(check):
    """AmpGuard.watch() counts an exception raised on a non-finite step as a skipped step and
    re-raises only past its threshold, after saving the evidence."""
    assert lines("AMP304", GUARDED.format(check=check), select=("ALL", "AMP305")) == []
    assert lines("AMP305", GUARDED.format(check=check), select=("ALL", "AMP305")) == []
    # the same check with a `with` that is not the guard's stops the run
    unguarded = GUARDED.format(check=check).replace("with guard.watch(batch=(x, y)) as step:",
                                                    "with timer.watch(batch=(x, y)) as step:")
    # (an `assert` in the step on the forward loss is AMP305's, off by default: named here)
    code = "AMP305" if check.startswith("assert") else "AMP304"
    assert lines(code, unguarded, select=("ALL", "AMP305")) == [13]


def test_a_guard_passed_as_an_argument_is_recognised():
    source = """
        import torch
        from amplint.runtime import AmpGuard

        def train_one_epoch(model, loader, scaler, optimizer, amp_guard: AmpGuard):
            for x, y in loader:
                with amp_guard.watch(batch=x):
                    with torch.autocast("cuda"):
                        loss = model(x, y)
                    if torch.isnan(loss):
                        raise RuntimeError("NaN loss")
                    scaler.scale(loss).backward()
                    amp_guard.step(loss)
        """
    assert lines("AMP304", source) == []


def test_a_raise_outside_the_guards_step_still_stops_the_run():
    source = """
        import torch
        from amplint.runtime import AmpGuard

        def train(model, loader, optimizer, scaler):
            guard = AmpGuard(model, optimizer, scaler)
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                if torch.isnan(loss):
                    raise RuntimeError("NaN loss")
                scaler.scale(loss).backward()
                guard.step(loss, batch=(x, y))
        """
    assert lines("AMP304", source) == [11]


def test_handing_the_bad_step_to_the_guard_is_not_flagged():
    source = """
        import torch
        from amplint.runtime import AmpGuard

        def train(model, loader, optimizer, scaler):
            guard = AmpGuard(model, optimizer, scaler, max_bad_steps=20, window=1000)
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = model(x, y)
                if not torch.isfinite(loss):
                    guard.end_step(loss, batch=(x, y))  # counts it; raises past the threshold
                    continue
                scaler.scale(loss).backward()
                guard.step(loss, batch=(x, y))
        """
    assert lines("AMP304", source) == []


def test_project_with_fp16_trainer_flag_is_likely():
    source = """
        import torch

        class Model:
            def training_step(self, batch, batch_idx):
                loss = self.compute_loss(batch)
                if torch.isnan(loss):
                    raise ValueError("NaN loss")
                return loss
        """
    extra = {"cli.py": "import lightning as L\ntrainer = L.Trainer(precision='16-mixed')\n"}
    findings = [f for f in lint_source(textwrap.dedent(source), extra_files=extra) if f.code == "AMP304"]
    assert [(f.line, f.confidence) for f in findings] == [(8, "likely")]


@pytest.mark.parametrize("name, source, extra", [
    ("counter incremented, compared to a limit", """
        import torch

        def train(model, loader, opt, scaler, max_bad=10):
            bad = 0
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                if not torch.isfinite(loss):
                    bad += 1
                    if bad > max_bad:
                        raise RuntimeError("too many non-finite losses")
                    continue
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        """, None),
    ("check combined with a threshold", """
        import torch

        def train(model, loader, opt, scaler):
            nan_steps = 0
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                nan_steps = nan_steps + 1 if torch.isnan(loss) else 0
                if torch.isnan(loss) and nan_steps > 5:
                    raise RuntimeError("diverged")
                scaler.scale(loss).backward()
        """, None),
    ("a plain fp32 loop in a project whose AMP trainer autocasts elsewhere (detectron2)", """
        import torch

        def do_train(model, loader, optimizer):
            for data in loader:
                losses = sum(model(data).values())
                assert torch.isfinite(losses).all(), "non-finite loss"
                optimizer.zero_grad()
                losses.backward()
                optimizer.step()
        """, {"amp_trainer.py": "import torch\n\nclass AMPTrainer:\n    def run_step(self):\n"
                                "        with torch.autocast('cuda', dtype=torch.float16):\n"
                                "            loss = self.model(self.data)\n"}),
    ("bf16 autocast", """
        import torch

        def train(model, loader, opt):
            for x, y in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x, y)
                if torch.isnan(loss):
                    raise RuntimeError("NaN loss")
                loss.backward()
                opt.step()
        """, None),
    ("fp32 training", """
        import torch

        def train(model, loader, opt):
            for x, y in loader:
                loss = model(x, y)
                if torch.isnan(loss):
                    raise RuntimeError("NaN loss")
                loss.backward()
                opt.step()
        """, None),
    ("a check of the input data", """
        import torch

        def train(model, loader, opt, scaler):
            for x, y in loader:
                assert not torch.isnan(x).any(), "bad batch"
                with torch.autocast("cuda"):
                    loss = model(x, y)
                scaler.scale(loss).backward()
        """, None),
    ("a check that only logs and skips", """
        import torch

        def train(model, loader, opt, scaler):
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                if torch.isnan(loss):
                    print("skipping NaN batch")
                    continue
                scaler.scale(loss).backward()
        """, None),
    ("evaluation, not training", """
        import torch

        @torch.no_grad()
        def evaluate(model, loader):
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                if torch.isnan(loss):
                    raise RuntimeError("NaN in eval")
        """, None),
    ("a test function", """
        import torch

        def test_training_step_is_finite():
            with torch.autocast("cuda"):
                loss = model(x)
            loss.backward()
            assert torch.isfinite(loss)
        """, None),
    ("pure half training (no loss scaling to skip the step)", """
        import torch

        def train(model, loader, opt):
            model = model.half()
            for x, y in loader:
                loss = model(x, y)
                if torch.isnan(loss):
                    raise RuntimeError("NaN loss")
                loss.backward()
                opt.step()
        """, None),
])
def test_near_misses_stay_silent(name, source, extra):
    assert lines("AMP304", source, extra_files=extra) == [], name


def test_test_modules_are_not_training_runs():
    source = """
        import torch
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x)
            if not torch.isfinite(loss):
                raise FloatingPointError(loss)
            scaler.scale(loss).backward()
        """
    assert lines("AMP304", source) == [7]
    assert lines("AMP304", source, filename="tests/helpers.py") == []


DTYPE_ATTRIBUTE = """
import torch


class Model:
    def __init__(self, net, opt, use_amp, amp_bf16):
        self.net, self.opt = net, opt
        self.use_amp = use_amp
        self.amp_dtype = {dtype}
        self.scaler = torch.amp.GradScaler("cuda", enabled=use_amp and self.amp_dtype == torch.float16)

    def optimize_parameters(self, x, y):
        with torch.autocast("cuda", dtype=self.amp_dtype, enabled=self.use_amp):
            loss = (self.net(x) - y).abs().mean()
            if not loss.isfinite():
                raise RuntimeError("NaN/Inf found in loss")
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
"""


@pytest.mark.parametrize("dtype, reported", [
    # traiNNer-redux's shape: float16 is one of the dtypes the project runs (amp_bf16: false in most configs)
    ("torch.bfloat16 if amp_bf16 else torch.float16", True),
    ("torch.float16", True),
    ("torch.bfloat16", False),  # bf16 only: non-finite losses are rare, no loss scaling expects them
])
def test_an_autocast_dtype_held_in_an_attribute(dtype, reported):
    assert lines("AMP304", DTYPE_ATTRIBUTE.replace("{dtype}", dtype)) == ([16] if reported else [])


def test_the_value_the_step_backpropagates_is_the_loss_whatever_its_name():
    """traiNNer-redux: ``if not l_g_total.isfinite(): raise`` then ``self.scaler_g.scale(l_g_total).backward()``."""
    source = DTYPE_ATTRIBUTE.replace("{dtype}", "torch.float16").replace("loss", "l_g_total")
    assert lines("AMP304", source) == [16]
    # a check of a value the step does not backpropagate (and not named as a loss) is about the data
    data = source.replace("if not l_g_total.isfinite():", "if not x.isfinite().all():")
    assert lines("AMP304", data) == []


# ---- detectron2's shape: the check in a helper two calls away, on the summed loss components ------

TRAINERS = """
import numpy as np
import torch


class SimpleTrainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def run_step(self, data):
        loss_dict = self.model(data)
        losses = sum(loss_dict.values())
        losses.backward()
        self._write_metrics(loss_dict)
        self.optimizer.step()

    def _write_metrics(self, loss_dict):
        SimpleTrainer.write_metrics(loss_dict)

    @staticmethod
    def write_metrics(loss_dict):
        metrics_dict = {k: v.detach().cpu().item() for k, v in loss_dict.items()}
        total = sum(metrics_dict.values())
        if not np.isfinite(total):
            {stop}


class AMPTrainer(SimpleTrainer):
    def __init__(self, model, optimizer, precision=torch.float16):
        super().__init__(model, optimizer)
        self.precision = precision
        self.grad_scaler = torch.amp.GradScaler("cuda")

    def run_step(self, data):
        with torch.autocast("cuda", dtype=self.precision):
            loss_dict = self.model(data)
            losses = sum(loss_dict.values())
        self.grad_scaler.scale(losses).backward()
        self._write_metrics(loss_dict)
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()
"""


def trainers(stop="raise FloatingPointError('Loss became infinite or NaN')"):
    return textwrap.dedent(TRAINERS).replace("{stop}", stop)


def test_a_raise_in_a_helper_of_a_helper_of_the_scaled_step():
    source = trainers()
    (line, message), = found("AMP304", source)
    assert line == 25
    # the step that runs it in float16 is named, not the plain base class's
    calls = [n for n, text in enumerate(source.splitlines(), 1) if "self._write_metrics(loss_dict)" in text]
    assert f"called from the training step at line {calls[1]}" in message and "`total`" in message


def test_the_upstream_fix_logs_instead_under_the_amp_trainer():
    fixed = trainers("if raise_nan:\n                raise FloatingPointError('NaN')")
    assert lines("AMP304", fixed) == []


@pytest.mark.parametrize("name, edit", [
    ("a sum of the batch's values, not of the losses",
     ("v.detach().cpu().item() for k, v in loss_dict.items()", "v for k, v in data_stats.items()")),
    ("no GradScaler: the autocast's dtype is a variable and nothing says float16",
     ("self.grad_scaler.scale(losses).backward()", "losses.backward()")),
])
def test_near_misses_of_the_helper_chain_stay_silent(name, edit):
    source = trainers().replace(*edit)
    assert lines("AMP304", source) == [], name


def test_a_sum_of_the_loss_items_checked_in_the_step():
    source = SCALER + textwrap.dedent("""
        import numpy as np

        def train(model, opt, loader):
            for x in loader:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss_dict = model(x)
                    losses = sum(loss_dict.values())
                scaler.scale(losses).backward()
                metrics = {k: v.item() for k, v in loss_dict.items()}
                total = sum(metrics.values())
                if not np.isfinite(total):
                    raise FloatingPointError(metrics)
                scaler.step(opt)
                scaler.update()
        """)
    assert lines("AMP304", source) == [15]


# ---- coqui TTS: the check in a loss module's forward, the module built elsewhere -----------------

LOSS_MODULE = """
import torch
from torch import nn


class TacotronLoss(nn.Module):
    def forward(self, decoder_output, target):
        losses = {"loss": (decoder_output - target).abs().mean()}
        for key, loss in losses.items():
            if torch.isnan(loss):
                raise RuntimeError(f"NaN loss with {key}")
        return losses


class PlainLoss(nn.Module):
    def forward(self, out, target):
        return {"loss": (out - target).abs().mean()}
"""

TRAIN_WITH_CRITERION = """
import torch
from snippet import TacotronLoss, PlainLoss


def train(model, loader, criterion, optimizer, scaler):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss_dict = criterion(model(x), y)
        scaler.scale(loss_dict["loss"]).backward()
        scaler.step(optimizer)
        scaler.update()


def main(model, loader):
    criterion = {built}
    optimizer = torch.optim.Adam(model.parameters())
    train(model, loader, criterion, optimizer, torch.amp.GradScaler("cuda"))
"""


def test_a_loss_module_built_in_another_file_and_passed_to_the_step():
    extra = {"train.py": textwrap.dedent(TRAIN_WITH_CRITERION).replace("{built}", "TacotronLoss()")}
    (line, message), = found("AMP304", LOSS_MODULE, extra_files=extra)
    assert line == 11 and "train.py:9" in message


def test_another_loss_module_passed_to_the_step_is_silent():
    extra = {"train.py": textwrap.dedent(TRAIN_WITH_CRITERION).replace("{built}", "PlainLoss()")}
    assert lines("AMP304", LOSS_MODULE, extra_files=extra) == []


def test_a_loss_module_passed_as_an_argument_in_its_own_file():
    source = textwrap.dedent(LOSS_MODULE) + textwrap.dedent(TRAIN_WITH_CRITERION).replace(
        "from snippet import TacotronLoss, PlainLoss\n", "").replace("{built}", "TacotronLoss().cuda()")
    assert lines("AMP304", source) == [11]
    assert lines("AMP304", source.replace("criterion = TacotronLoss().cuda()", "criterion = PlainLoss()")) == []


def test_a_forward_calling_the_module_it_is_given_ends():
    """``calls_of`` a forward asks the module calls of the file, which ask the calls of the function
    whose parameter holds the module: that forward again (peft's dora.py recursed without end)."""
    from pathlib import Path

    import libcst as cst

    from amplint.context.precision import precision_model
    from amplint.engine import build_context

    source = textwrap.dedent("""
        import torch
        from torch import nn

        class Apply(nn.Module):
            def forward(self, x, module):
                return module(x)

        def run(x):
            apply = Apply()
            return apply(x, apply)
        """).encode()
    ctx = build_context(Path("snippet.py"), "snippet.py", source, None)
    model = precision_model(ctx)
    forward = next(f for f in ctx.nodes(cst.FunctionDef) if f.name.value == "forward")
    # ``apply(x, apply)``, and ``module(x)`` in the forward, which the call hands ``apply``
    assert sorted(ctx.code(c) for c in model.calls_of(forward)) == ["apply(x, apply)", "module(x)"]
