"""AMP303 grad-scaler-misuse: true positives in several shapes, named near misses, the fixes."""
import textwrap

import pytest

from training_util import found, fixed, lines


# ---- optimizer.step() on scaled gradients -------------------------------------------------------
@pytest.mark.parametrize("name, source, line", [
    ("script loop", """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x)
            scaler.scale(loss).backward()
            optimizer.step()
            optimizer.zero_grad()
        """, 8),
    ("attributes in a method, multi-line", """
        class Trainer:
            def step(self, loss):
                self.scaler.scale(
                    loss
                ).backward()
                self.optimizer.step()
        """, 7),
    ("after unscale_ (the inf/NaN check is still bypassed)", """
        import torch

        scaler = torch.amp.GradScaler("cuda")

        def step(model, loss, opt):
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            scaler.update()
        """, 10),
    ("an optimizer bound by its constructor, whatever its name", """
        import torch
        trainer_params = torch.optim.SGD(params, lr=0.1)
        scaler = torch.amp.GradScaler("cuda")
        scaler.scale(loss).backward()
        trainer_params.step()
        """, 6),
])
def test_direct_optimizer_step_after_scaled_backward(name, source, line):
    assert lines("AMP303", source) == [line], name


def test_direct_step_messages_differ_before_and_after_unscale():
    (_, scaled), = found("AMP303", "scaler.scale(loss).backward()\noptimizer.step()\nscaler.update()\n")
    (_, unscaled), = found("AMP303", "scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\n"
                                     "scaler.unscale_(optimizer)\noptimizer.step()\nscaler.update()\n")
    assert "too large" in scaled and "scaler.step(optimizer)" in scaled
    assert "too large" not in unscaled and "inf/NaN" in unscaled


# ---- scaler.step() without scaler.update() --------------------------------------------------------
@pytest.mark.parametrize("name, source, line", [
    ("script loop", """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            scaler.scale(model(x)).backward()
            scaler.step(optimizer)
            optimizer.zero_grad()
        """, 6),
    ("two optimizers, reported once at the last step", """
        def step(self, loss):
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt_g)
            self.scaler.step(self.opt_d)
        """, 5),
])
def test_scaler_step_without_update(name, source, line):
    assert lines("AMP303", source) == [line], name


SCALER_PASSED_TO_A_HELPER = """
import torch

def step_all(optimizers, grad_scaler):
    for opt in optimizers:
        grad_scaler.step(opt)

def train(model, loader, optimizers):
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        step_all(optimizers, scaler)
        {update}
"""


def test_a_scaler_received_under_another_name_is_updated_by_its_caller():
    assert lines("AMP303", SCALER_PASSED_TO_A_HELPER.replace("{update}", "scaler.update()")) == []
    # nobody updates it: still reported, in the helper
    assert lines("AMP303", SCALER_PASSED_TO_A_HELPER.replace("{update}", "pass")) == [6]


# ---- unscaled backward, scaler.step ---------------------------------------------------------------
@pytest.mark.parametrize("name, source, line", [
    ("plain backward of a loss computed here", """
        import torch

        def step(model, x, y, opt, scaler):
            with torch.autocast("cuda"):
                loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            scaler.step(opt)
            scaler.update()
        """, 7),
    ("accumulated loss, attribute scaler", """
        class Trainer:
            def step(self, batch):
                loss = self.model(batch).loss / self.accum
                loss.backward()
                self.scaler.step(self.optimizer)
                self.scaler.update()
        """, 5),
])
def test_unscaled_backward_stepped_by_the_scaler(name, source, line):
    (got, message), = found("AMP303", source)
    assert got == line, name
    assert "is not scaled" in message


@pytest.mark.parametrize("name, source, extra", [
    ("the AMP switch written twice", """
        def step(self, loss):
            if self.use_amp:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            if self.use_amp:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
        """, None),
    ("two spellings of the AMP switch, elif chain", """
        def step(self, loss):
            if self.args.fp16:
                self.scaler.scale(loss).backward()
            elif self.use_apex:
                with amp.scale_loss(loss, self.optimizer) as scaled_loss:
                    scaled_loss.backward()
            else:
                loss.backward()
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
        """, None),
    ("update in another method of the class", """
        class Trainer:
            def optimizer_step(self):
                self.scaler.step(self.optimizer)

            def on_step_end(self):
                self.scaler.update()
        """, None),
    ("update in another file, reached through another object", """
        def optimizer_step(self):
            self.scaler.step(self.optimizer)
        """, {"loop.py": "def end(trainer):\n    trainer.scaler.update()\n"}),
    ("two optimizers, one update (the documented pattern)", """
        def step(scaler, loss_g, loss_d, opt_g, opt_d):
            scaler.scale(loss_g).backward()
            scaler.scale(loss_d).backward()
            scaler.step(opt_g)
            scaler.step(opt_d)
            scaler.update()
        """, None),
    ("loss handed in as a parameter (may be scaled by the caller)", """
        def backward_step(self, loss):
            loss.backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        """, None),
    ("a project's own loss scaler that unscales: the step after it is its business", """
        class Trainer:
            def step(self, loss):
                self.loss_scaler.scale(loss).backward()
                self.loss_scaler.unscale_grads(self.optimizer)
                self.optimizer.step()
        """, None),
    ("a wrapper whose step() updates the GradScaler it holds", """
        def train_step(self, loss):
            self.amp_scaler.scale(loss).backward()
            self.amp_scaler.step(self.optimizer)
        """, {"amp.py": "import torch\n\nclass AmpScaler:\n    def __init__(self):\n"
                        "        self._scaler = torch.amp.GradScaler('cuda')\n\n    def step(self, opt):\n"
                        "        self._scaler.step(opt)\n        self._scaler.update()\n"}),
    ("loss scaled by a helper before a plain-looking backward", """
        def step(self, loss):
            loss = self.scale_loss(loss)
            loss.backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        """, None),
    ("update with arguments in another file (mmengine's AmpOptimWrapper)", """
        def step(self):
            self.loss_scaler.step(self.optimizer)
        """, {"wrapper.py": "def after(self):\n    self.loss_scaler.update(self._scale_update_param)\n"}),
    ("scaled loss bound to a name", """
        def step(scaler, loss, opt):
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.step(opt)
            scaler.update()
        """, None),
    ("the scheduler steps after the scaler", """
        def step(scaler, loss, opt, lr_scheduler):
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            lr_scheduler.step()
        """, None),
    ("bf16 step with a (disabled) scaler", """
        import torch

        def step(model, x, opt, scaler):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x)
            scaler.scale(loss).backward()
            opt.step()
        """, None),
    ("an update commented out does not count, but a real one later in the loop does", """
        for x in loader:
            scaler.scale(model(x)).backward()
            scaler.step(optimizer)
            # scaler.update() moved below
            log(x)
            scaler.update()
        """, None),
])
def test_near_misses_stay_silent(name, source, extra):
    assert lines("AMP303", source, extra_files=extra) == [], name


def test_commented_out_update_does_not_count():
    source = """
        for x in loader:
            scaler.scale(model(x)).backward()
            scaler.step(optimizer)
            # scaler.update()
        """
    assert lines("AMP303", source) == [4]


# ---- fixes ---------------------------------------------------------------------------------------
def test_fix_routes_the_step_through_the_scaler_and_adds_the_update():
    source = """
        class Trainer:
            def step(self, loss):
                self.scaler.scale(loss).backward()
                self.optimizer.step()  # apply
                self.optimizer.zero_grad()
        """
    assert fixed(source) == textwrap.dedent("""
        class Trainer:
            def step(self, loss):
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)  # apply
                self.scaler.update()
                self.optimizer.zero_grad()
        """)


def test_fix_keeps_an_existing_update():
    source = """
        scaler.scale(loss).backward()
        optimizer.step()
        scaler.update()
        """
    assert fixed(source) == textwrap.dedent("""
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        """)


def test_no_fix_for_a_step_reached_also_without_scaling():
    source = """
        def step(model, loss, opt, scaler, use_scaler):
            if use_scaler:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            opt.step()
        """
    assert lines("AMP303", source) == [7]
    assert fixed(source) == textwrap.dedent(source)


def test_fix_inserts_update_after_the_last_step_and_the_result_is_clean():
    source = """
        def step(scaler, loss, opt_g, opt_d, i, k):
            scaler.scale(loss).backward()
            if i % k == 0:
                scaler.step(opt_g)
                scaler.step(opt_d)
            log(loss)
        """
    out = fixed(source)
    assert out == textwrap.dedent("""
        def step(scaler, loss, opt_g, opt_d, i, k):
            scaler.scale(loss).backward()
            if i % k == 0:
                scaler.step(opt_g)
                scaler.step(opt_d)
                scaler.update()
            log(loss)
        """)
    assert lines("AMP303", out) == []


def test_a_grad_scaler_assigned_in_another_file_is_known():
    source = """
        class Trainer:
            def step(self, loss):
                self.scaler.scale(loss).backward()
                self.scaler.unscale_(self.optimizer)
                self.optimizer.step()
                self.scaler.update()
        """
    own = {"scaling.py": "class DynamicLossScaler:\n    def unscale_(self, optimizer):\n        pass\n"}
    assert lines("AMP303", source, extra_files=own) == []  # maybe the project's own scaler class
    extra = {"build.py": "import torch\n\ndef build(self):\n    self.scaler = torch.amp.GradScaler('cuda')\n"}
    assert lines("AMP303", source, extra_files={**own, **extra}) == [6]
    # A scaler that arrives as an attribute, in a project with no scaler class of its own: torch's.
    assert lines("AMP303", source) == [6]
