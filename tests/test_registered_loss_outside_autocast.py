"""A loss registered by a decorator and called through the registry's lookup runs where those calls
are made (verl's policy losses, T9-4): ``@register("geo_mean") def geo_mean_loss(...)`` is called as
``get_loss("geo_mean")(log_prob, ..., is_weights=batch["is_weights"])`` in the actor's ``update``,
which runs the backward and the optimizer step outside the autocast region its ``forward`` opens.
Its arguments are not taken float16 from the regime's autocast. Near misses: the lookup called inside
the autocast region, an update that steps no optimizer (a method of the model, judged under the
regime's autocast), and a lookup whose value escapes (returned: its calls are out of sight)."""
import textwrap

from amplint.api import lint_source

MAIN = """
import torch

from pkg.actor import Actor


def main(loader):
    model = torch.nn.Linear(16, 100).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    actor = Actor(model, optimizer)
    for batch in loader:
        actor.update(batch)
"""

ACTOR = """
import torch

from pkg.losses import get_loss


class Actor:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.scaler = torch.amp.GradScaler("cuda")

    def forward(self, batch):
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = self.model(batch["input_ids"])
{inside}
        return torch.log_softmax(logits.float(), dim=-1)

    def update(self, batch):
        log_prob = self.forward(batch)
{outside}
        self.scaler.scale(loss).backward()
{step}
        self.scaler.update()
"""
CALL = 'loss = {get}(log_prob, batch["old_log_prob"], batch["mask"], is_weights=batch["is_weights"])'
STEP = "        self.scaler.step(self.optimizer)"

LOSSES = """
import torch

POLICY_LOSSES = {}


def register(name):
    def deco(fn):
        POLICY_LOSSES[name] = fn
        return fn
    return deco


@register("geo_mean")
def geo_mean_loss(log_prob, old_log_prob, mask, is_weights=None):
    ratio = torch.exp(((log_prob - old_log_prob) * mask).sum(-1))
    if is_weights is not None:
        ratio = ratio * torch.exp((torch.log(is_weights + 1e-10) * mask).sum(-1))
    return ratio.mean()


def get_loss(name):
    return POLICY_LOSSES[name]
{extra}"""
ESCAPES = """

def loss_for(name):
    return get_loss(name)
"""


def amp102(inside=False, step=True, get='get_loss("geo_mean")', local=False, extra=""):
    call = CALL.format(get="fn" if local else get)
    if local:
        call = f"fn = {get}\n" + " " * (12 if inside else 8) + call
    actor = textwrap.dedent(ACTOR).format(
        inside=" " * 12 + call if inside else "", outside=" " * 8 + (call if not inside else "loss = log_prob.mean()"),
        step=STEP if step else "")
    files = {"main.py": textwrap.dedent(MAIN), "pkg/__init__.py": "", "pkg/actor.py": actor}
    return [f.line for f in lint_source(textwrap.dedent(LOSSES).replace("{extra}", extra), filename="pkg/losses.py", extra_files=files)
            if f.code == "AMP102"]


def test_registered_loss_called_in_the_training_step_outside_autocast():
    assert amp102() == []


def test_lookup_through_a_local_name():
    assert amp102(local=True) == []


def test_near_miss_called_inside_the_autocast_region():
    assert amp102(inside=True) == [18]


def test_near_miss_a_method_that_steps_no_optimizer_is_model_code():
    assert amp102(step=False) == [18]


def test_near_miss_a_lookup_whose_value_escapes():
    assert amp102(get='loss_for("geo_mean")', extra=ESCAPES) == [18]
