"""Autocast is a property of the calls made inside its region and of what they reach, not of every
function of a project that trains under it: a helper whose every call (in its file, and by its name
in the project's other files) is made where autocast is off runs in float32 (nerfstudio's
``intersect_aabb``, called from camera code outside the training step's autocast; T5-1). Near
misses, still reported: one call inside the autocast region; a helper referenced as a callback
(called where no call can be seen); a helper nothing calls (the regime decides, as before); and a
chain: the caller itself called only under autocast."""
import textwrap

from amplint.api import lint_source

HELPER = """
import torch


def normalize_rays(directions, aabb):
    t = (aabb[:3] - directions) / directions
    return torch.where(t > 0, t, 1e10)
"""
TRAIN = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x)


def train(model, loader, opt):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
            {inside}
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""
RENDER = """
from helpers import normalize_rays


def {name}(rays, box):
    return normalize_rays(rays, box)
"""


def amp103_lines(inside="pass", render_name="render", render_extra="", train_imports=""):
    files = {
        "train.py": textwrap.dedent(train_imports + TRAIN.replace("{inside}", inside)),
        "render.py": textwrap.dedent(RENDER.replace("{name}", render_name) + render_extra),
    }
    findings = lint_source(textwrap.dedent(HELPER), filename="helpers.py", extra_files=files)
    return [f.line for f in findings if f.code == "AMP103"]


def test_a_helper_called_only_outside_autocast():
    assert amp103_lines() == []


def test_near_miss_one_call_under_autocast():
    assert amp103_lines(inside="t = normalize_rays(model(x), y)",
                        train_imports="from helpers import normalize_rays\n") == [7]


def test_near_miss_a_callback():
    """Referenced in its own file other than by a call (a hook list): called where no call is seen.
    (A reference in another file is not seen: the project's call graph holds calls only.)"""
    files = {"train.py": textwrap.dedent(TRAIN.replace("{inside}", "pass")), "render.py": textwrap.dedent(RENDER.replace("{name}", "render"))}
    findings = lint_source(textwrap.dedent(HELPER) + "\n\nHOOKS = [normalize_rays]\n", filename="helpers.py", extra_files=files)
    assert [f.line for f in findings if f.code == "AMP103"] == [7]


def test_near_miss_nothing_calls_it():
    findings = lint_source(textwrap.dedent(HELPER), filename="helpers.py",
                           extra_files={"train.py": textwrap.dedent(TRAIN.replace("{inside}", "pass"))})
    assert [f.line for f in findings if f.code == "AMP103"] == [7]


def test_near_miss_the_caller_runs_under_autocast():
    """``render`` calls the helper outside any region of its own, and is itself called under the
    training step's autocast: the helper runs under it. (Both arguments the model's outputs: the loader's
    ``y`` is float32 data, which would make the quotient float32 by promotion.)"""
    assert amp103_lines(render_name="compute_attention", inside="t = compute_attention(model(x), model(x))",
                        train_imports="from render import compute_attention\n") == [7]


def test_near_miss_a_method():
    """A method's calls through a local or a parameter (``model.rgba(x, x)`` in the training step)
    are not in the project's call graph: a method's calls are never all seen, so the one seen
    outside autocast (a renderer's ``self.net.rgba(...)``) does not decide; the regime does."""
    model = textwrap.dedent("""
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                return x

            def rgba(self, rgb, acc):
                return rgb / acc.clamp(min=1e-10)
        """)
    train = textwrap.dedent(TRAIN.replace("{inside}", "t = model.rgba(x, x)").replace(
        "class Net(nn.Module):", "class Other(nn.Module):"))
    render = textwrap.dedent("""
        from net import Net


        class Renderer:
            def __init__(self):
                self.net = Net()

            def render(self, rgb, acc):
                return self.net.rgba(rgb, acc)
        """)
    findings = lint_source(model, filename="net.py", extra_files={"train.py": train, "render.py": render})
    assert [f.line for f in findings if f.code == "AMP102"] == [11]
