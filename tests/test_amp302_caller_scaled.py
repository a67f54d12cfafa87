"""AMP302 / AMP303 when the GradScaler arrives as an argument or attribute: the function clips and
steps gradients its caller scaled (returnn's ``Updater.step(self, *, grad_scaler=None)``)."""
import textwrap

import pytest

from training_util import fixed, found, lines

UPDATER = """
import torch


class Updater:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(self, *, grad_scaler=None):
        {body}
"""

RETURNN_BODY = """torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if grad_scaler is not None:
            grad_scaler.step(self.optimizer)
            grad_scaler.update()
        else:
            self.optimizer.step()"""

ENGINE = """
import torch
from updater import Updater


class Engine:
    def __init__(self, model):
        self.model = model
        self._updater = Updater(model)
        self._grad_scaler = torch.amp.GradScaler("cuda")

    def train_epoch(self, loader):
        for x in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = self.model(x).square().mean()
            if self._grad_scaler is not None:
                self._grad_scaler.scale(loss).backward()
            else:
                loss.backward()
            {between}
            self._updater.step(
                grad_scaler=self._grad_scaler)
"""


def updater(body=RETURNN_BODY):
    return textwrap.dedent(UPDATER).replace("{body}", body)


def engine(between="pass"):
    return {"engine.py": textwrap.dedent(ENGINE).replace("{between}", between)}


def test_clip_in_the_callee_of_a_scaled_backward_in_another_file():
    (line, message), = found("AMP302", updater(), filename="updater.py", extra_files=engine())
    assert line == 11
    assert "engine.py" in message and "grad_scaler" in message


def test_fix_guards_the_unscale_of_an_optional_scaler_and_is_recognised():
    after = fixed(updater(), extra_files=engine())
    assert "if grad_scaler is not None:\n            grad_scaler.unscale_(self.optimizer)\n" \
           "        torch.nn.utils.clip_grad_norm_" in after
    assert lines("AMP302", after, filename="updater.py", extra_files=engine()) == []


def test_attribute_scaler_stepped_in_another_method():
    source = """
        import torch

        class Trainer:
            def __init__(self, model, scaler):
                self.model = model
                self.scaler = scaler
                self.optimizer = torch.optim.AdamW(model.parameters())

            def optimizer_step(self):
                torch.nn.utils.clip_grad_value_(self.model.parameters(), 0.5)
                self.scaler.step(self.optimizer)
                self.scaler.update()

            def fit(self, loader):
                for x in loader:
                    with torch.autocast("cuda"):
                        loss = self.model(x).mean()
                    self.scaler.scale(loss).backward()
                    self.optimizer_step()
        """
    assert lines("AMP302", source) == [11]


@pytest.mark.parametrize("name, body, between", [
    ("the callee unscales before clipping (returnn's fix)", """if grad_scaler is not None:
            grad_scaler.unscale_(self.optimizer)
        """ + RETURNN_BODY, "pass"),
    ("clipping only in the branch without a scaler", """if grad_scaler is not None:
            grad_scaler.step(self.optimizer)
            grad_scaler.update()
        else:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()""", "pass"),
    ("clipping only under `if grad_scaler is None`", """if grad_scaler is None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            return
        grad_scaler.step(self.optimizer)
        grad_scaler.update()""", "pass"),
    ("the caller unscales before passing the scaler", RETURNN_BODY,
     "self._grad_scaler.unscale_(self._updater.optimizer)"),
])
def test_near_misses_stay_silent(name, body, between):
    assert lines("AMP302", updater(body), filename="updater.py", extra_files=engine(between)) == [], name
    assert lines("AMP303", updater(body), filename="updater.py", extra_files=engine(between)) == [], name


def test_no_caller_with_a_scaled_backward_is_silent():
    plain = textwrap.dedent("""
        import torch
        from updater import Updater

        def train(model, loader):
            updater = Updater(model)
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                loss = model(x).mean()
                loss.backward()
                updater.step(grad_scaler=scaler)
        """)
    assert lines("AMP302", updater(), filename="updater.py", extra_files={"train.py": plain}) == []


def test_direct_optimizer_step_after_unscaling_the_received_scaler():
    body = """grad_scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        grad_scaler.update()"""
    (line, message), = found("AMP303", updater(body).replace("grad_scaler=None", "grad_scaler"),
                             filename="updater.py", extra_files=engine())
    assert line == 13 and "inf/NaN" in message
    assert lines("AMP302", updater(body), filename="updater.py", extra_files=engine()) == []


# ---- a module-level function: its calls are the ones that resolve to it ------------------------

STEP_HELPER = """
import torch


def apply_step(model, optimizer, scaler):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""

SCALED_LOOP = """
import torch
{imports}


def main(model, opt, loader):
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        {call}
"""


def scaled_loop(call, imports=""):
    return textwrap.dedent(SCALED_LOOP).replace("{imports}", imports).replace("{call}", call)


def test_module_function_called_after_a_scaled_backward_in_another_file():
    caller = scaled_loop("apply_step(model, opt, scaler)", "from snippet import apply_step")
    (line, message), = found("AMP302", STEP_HELPER, extra_files={"train.py": caller})
    assert line == 6 and "train.py" in message


def test_module_function_called_through_its_module():
    caller = scaled_loop("snippet.apply_step(model, opt, scaler)", "import snippet")
    assert lines("AMP302", STEP_HELPER, extra_files={"train.py": caller}) == [6]


@pytest.mark.parametrize("name, call, imports", [
    # DeepLearningExamples: HiFiGAN's ``gen.train()`` after its scaled backward is a module's method,
    # not Transformer-XL's ``def train(..., scaler, ...)``
    ("a method of the same name on another object", "model.apply_step(model, opt, scaler)", ""),
    ("another module's function of the same name", "other.apply_step(model, opt, scaler)", "import other"),
    ("a call that passes nothing", "apply_step()", "from snippet import apply_step"),
])
def test_calls_that_are_not_the_module_function_stay_silent(name, call, imports):
    extra = {"train.py": scaled_loop(call, imports),
             "other.py": "def apply_step(model, opt, scaler):\n    pass\n"}
    assert lines("AMP302", STEP_HELPER, extra_files=extra) == [], name
