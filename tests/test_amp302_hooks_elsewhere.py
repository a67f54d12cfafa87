"""AMP302: a clamping gradient hook registered by a helper of one file for a training in another
file that scales its loss with a GradScaler (allennlp: training/util.py's enable_gradient_clipping,
called by the trainer class that builds the GradScaler and runs the scaled backward in a callback)."""
from amplint.api import lint_source

UTIL = ("def enable_gradient_clipping(model, c):\n"
        "    for p in model.parameters():\n"
        "        p.register_hook(lambda grad: clamp_tensor(grad, -c, c))\n")
TRAINER = ("import torch\nimport util\n\n\nclass Trainer:\n    def __init__(self, model, use_amp):\n"
           "        self.model = model\n        self._scaler = torch.amp.GradScaler('cuda') if use_amp else None\n\n"
           "    def train(self):\n        util.enable_gradient_clipping(self.model, 1.0)\n"
           "        self.callback.on_backward(self)\n")
STEP = ("import torch\nimport util\n\n\ndef train(model, loader, opt):\n    scaler = torch.amp.GradScaler('cuda')\n"
        "    util.enable_gradient_clipping(model, 1.0)\n    for x in loader:\n"
        "        with torch.autocast('cuda', dtype=torch.float16):\n            loss = model(x).mean()\n"
        "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n")


def amp302(files, name):
    extra = {k: v for k, v in files.items() if k != name}
    return [(f.path.rsplit("/", 1)[-1], f.line) for f in lint_source(files[name], filename=name, extra_files=extra)
            if f.code == "AMP302"]


def test_reported_at_the_hook_for_a_trainer_class_that_builds_a_grad_scaler():
    files = {"util.py": UTIL, "trainer.py": TRAINER}
    assert amp302(files, "util.py") == [("util.py", 3)]
    plain = {**files, "trainer.py": TRAINER.replace("torch.amp.GradScaler('cuda') if use_amp else None", "None")}
    assert amp302(plain, "util.py") == []


def test_a_call_in_the_scaled_step_is_reported_once_at_the_call():
    files = {"util.py": UTIL.replace("clamp_tensor(grad, -c, c)", "grad.clamp(-c, c)"), "trainer.py": STEP}
    assert amp302(files, "util.py") == []
    assert amp302(files, "trainer.py") == [("trainer.py", 7)]
