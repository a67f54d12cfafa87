"""AMP302 on a clip made by a hook method of another object between the scaled backward and the scaler's step
(NATSpeech's trainer: ``self.amp_scalar.scale(loss).backward()``, then ``task_ref.on_before_optimization(opt_idx)``,
whose definitions in the task classes clip ``self.parameters()``, then ``self.amp_scalar.step(optimizer)``; no
``unscale_`` anywhere; unseen set 20, M20-1). The trainer's file never says "clip"."""
import json
import textwrap

from cliutil import run, write_project

TRAINER = """
    import torch

    class Trainer:
        def __init__(self, amp=True):
            self.amp = amp
            self.amp_scalar = torch.amp.GradScaler("cuda")

        def fit(self, task, loader):
            optimizer = torch.optim.AdamW(task.parameters(), lr=1e-3)
            for batch in loader:
                with torch.autocast("cuda", enabled=self.amp):
                    loss = task.training_step(batch)
                if self.amp:
                    self.amp_scalar.scale(loss).backward()
                else:
                    loss.backward()
                task.on_before_optimization()
                if self.amp:
                    self.amp_scalar.step(optimizer)
                    self.amp_scalar.update()
                else:
                    optimizer.step()
                optimizer.zero_grad()

    if __name__ == "__main__":
        from tasks import BaseTask
        loader = [(torch.randn(8, 16).cuda(), torch.randn(8, 1).cuda()) for _ in range(10)]
        Trainer(amp=True).fit(BaseTask().cuda(), loader)
    """

TASKS = """
    import torch
    from torch import nn

    class BaseTask(nn.Module):
        def __init__(self, clip_grad_norm=1.0):
            super().__init__()
            self.model = nn.Linear(16, 1)
            self.gradient_clip_norm = clip_grad_norm

        def training_step(self, batch):
            x, y = batch
            return nn.functional.mse_loss(self.model(x), y)

        def on_before_optimization(self):
            if self.gradient_clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(self.parameters(), self.gradient_clip_norm)
    """

GAN = """
    from torch import nn

    class GanTask(nn.Module):
        def on_before_optimization(self):
            nn.utils.clip_grad_norm_(self.generator.parameters(), 1.0)
    """


def _amp302(tmp_path, **files):
    tree = {"trainer.py": TRAINER, "tasks.py": TASKS}
    tree.update(files)
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in tree.items() if v is not None})
    r = run(["check", "--no-cache", "--select", "AMP302", "--output-format", "json", "."], root)
    return [(f["filename"].replace("\\", "/").split("/p/", 1)[-1], f["location"]["row"]) for f in json.loads(r.out)]


def test_a_hook_of_the_task_that_clips_scaled_gradients_is_reported_at_the_call(tmp_path):
    assert _amp302(tmp_path) == [("trainer.py", 18)]


def test_every_definition_of_the_hook_clips(tmp_path):
    assert _amp302(tmp_path, **{"gan.py": GAN}) == [("trainer.py", 18)]


def test_near_miss_one_definition_of_the_hook_does_something_else(tmp_path):
    # a task whose hook only logs: the call does not always clip
    logs = GAN.replace("nn.utils.clip_grad_norm_(self.generator.parameters(), 1.0)", "print('step')")
    assert _amp302(tmp_path, **{"gan.py": logs}) == []


def test_near_miss_the_trainer_unscales_first(tmp_path):
    unscaled = TRAINER.replace("                task.on_before_optimization()\n",
                               "                if self.amp:\n"
                               "                    self.amp_scalar.unscale_(optimizer)\n"
                               "                task.on_before_optimization()\n")
    assert _amp302(tmp_path, **{"trainer.py": unscaled}) == []


def test_near_miss_a_hook_that_steps_is_not_a_clip(tmp_path):
    # the object's hook runs the whole update (clip, unscale and step of its own): not a clip between
    steps = TASKS.replace("torch.nn.utils.clip_grad_norm_(self.parameters(), self.gradient_clip_norm)",
                          "torch.nn.utils.clip_grad_norm_(self.parameters(), self.gradient_clip_norm)\n"
                          "            self.optimizer.step()")
    assert _amp302(tmp_path, **{"tasks.py": steps}) == []
