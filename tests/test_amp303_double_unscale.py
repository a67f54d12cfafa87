"""AMP303: ``scaler.unscale_(optimizer)`` twice before the scaler's step / update raises
"unscale_() has already been called on this optimizer since the last update()"."""
import pytest

from training_util import found, lines

LOOP = """
import torch

def train(model, loader, optimizer, accum):
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        for micro in batch:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(micro).mean() / accum
            scaler.scale(loss).backward()
            {inner}
        {outer}
        scaler.step(optimizer)
        scaler.update()
"""


def test_unscale_in_the_micro_batch_loop():
    (line, message), = found("AMP303", LOOP.replace("{inner}", "scaler.unscale_(optimizer)").replace("{outer}", "pass"))
    assert line == 11 and "already been called" in message


def test_unscale_twice_in_a_row():
    source = LOOP.replace("{inner}", "pass").replace(
        "{outer}", "scaler.unscale_(optimizer)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                   "        scaler.unscale_(optimizer)")
    assert lines("AMP303", source) == [14]


@pytest.mark.parametrize("name, inner, outer", [
    ("once per step, after the micro-batches", "pass", "scaler.unscale_(optimizer)"),
    ("one unscale_ per optimizer in a loop", "pass",
     "for opt in [optimizer]:\n            scaler.unscale_(opt)"),
    ("two different optimizers", "pass", "scaler.unscale_(optimizer)\n        scaler.unscale_(other_optimizer)"),
    # nerfstudio's shape: each group's optimizer unscaled, stepped only when it has gradients
    ("a dict of optimizers, stepped only when they have gradients", "pass",
     "for group, opt in optimizers.items():\n            scaler.unscale_(opt)\n"
     "            if any(p.grad is not None for g in opt.param_groups for p in g['params']):\n"
     "                scaler.step(opt)"),
    ("an optimizer looked up per group", "pass",
     "for group in groups:\n            opt = optimizers[group]\n            scaler.unscale_(opt)\n"
     "            if opt.param_groups:\n                scaler.step(opt)"),
    ("an optimizer indexed by the loop variable", "pass",
     "for i in range(2):\n            scaler.unscale_(optimizers[i])\n            if i:\n                scaler.step(optimizers[i])"),
    ("unscale_ only on the last micro-batch", "if micro is batch[-1]:\n                scaler.unscale_(optimizer)\n"
     "                scaler.step(optimizer)\n                scaler.update()", "pass"),
])
def test_near_misses(name, inner, outer):
    assert lines("AMP303", LOOP.replace("{inner}", inner).replace("{outer}", outer)) == [], name


SKIPPED_UPDATE = """
import torch

def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        {tail}
        optimizer.zero_grad()
"""


def test_an_update_skipped_on_some_iterations_is_reported_where_it_is_skipped():
    # LVSM (fixed upstream): step and update under `if not skip_optimizer_step:`; on a skipped
    # iteration the optimizer stays unscaled and the next unscale_ raises
    tail = "if norm < 5.0:\n            scaler.step(optimizer)\n            scaler.update()"
    (line, message), = found("AMP303", SKIPPED_UPDATE.replace("{tail}", tail))
    assert line == 14 and "only under `if norm < 5.0:`" in message


@pytest.mark.parametrize("name, tail", [
    ("the upstream fix: update on every iteration",
     "if norm < 5.0:\n            scaler.step(optimizer)\n        scaler.update()"),
    ("step and update every iteration", "scaler.step(optimizer)\n        scaler.update()"),
    ("the update is another function's business", "if norm < 5.0:\n            scaler.step(optimizer)"),
])
def test_near_misses_of_a_skipped_update(name, tail):
    out = found("AMP303", SKIPPED_UPDATE.replace("{tail}", tail))
    assert [m for _, m in out if "unscale_() has already been called" in m] == [], name


BRANCHES = """
import torch

def train_one_epoch(cfg, model, loader, optimizer, scaler):
    for idx, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, y)
        if cfg.accumulation_steps > 1:
            scaler.scale(loss / cfg.accumulation_steps).backward()
            {accumulating}
            if (idx + 1) % cfg.accumulation_steps == 0:
                {at_boundary}
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        else:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""


def test_unscale_on_every_micro_batch_of_an_accumulation_branch_is_reported_at_the_unscale():
    # Swin's SimMIM scripts: unscale_ every micro-batch, step / update every N; the else branch
    # (no accumulation) unscales, steps and updates every iteration and is fine
    (line, message), = found("AMP303", BRANCHES.replace("{accumulating}", "scaler.unscale_(optimizer)")
                             .replace("{at_boundary}", "pass"))
    assert line == 10 and "every micro-batch" in message
    # near miss: the unscale_ under the boundary, right before the step
    assert lines("AMP303", BRANCHES.replace("{accumulating}", "pass")
                 .replace("{at_boundary}", "scaler.unscale_(optimizer)")) == []


NESTED_AND_CONJUNCTION = """
import torch

def train(model, loader, optimizer, scaler, args):
    for batch in loader:
        with torch.autocast("cuda", enabled=args.fp16):
            loss = model(batch).mean()
        if args.fp16 and args.amp == "pytorch":
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if args.fp16:
            if args.amp == "pytorch":
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        if {update_test}:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
"""


def test_an_update_under_the_unscale_s_own_conditions_written_as_one_test():
    """Transformer-XL's shape: ``if fp16: if amp == 'pytorch': unscale_`` then ``if fp16 and amp ==
    'pytorch': step, update``: the update runs on every iteration that unscaled."""
    assert lines("AMP303", NESTED_AND_CONJUNCTION.replace("{update_test}", 'args.fp16 and args.amp == "pytorch"')) == []
    # a condition the unscale_ does not share can skip the update: reported at the update
    skipped = found("AMP303", NESTED_AND_CONJUNCTION.replace("{update_test}", 'args.fp16 and args.amp == "pytorch" and args.log'))
    assert any(line == 18 and "runs only under `if args.fp16 and args.amp" in message for line, message in skipped)


def test_the_accumulation_condition_is_named_not_a_condition_both_share():
    """BERT distillation's shape: unscale_ under ``if args.amp:`` on every micro-batch; step / update
    under ``if (step + 1) % accum == 0:`` then ``if args.amp:``."""
    source = """
import torch

def main(model, loader, optimizer, args):
    scaler = torch.cuda.amp.GradScaler()
    for step, batch in enumerate(loader):
        with torch.cuda.amp.autocast(enabled=args.amp):
            loss = model(batch) / args.gradient_accumulation_steps
        if args.amp:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            if args.amp:
                scaler.step(optimizer)
                scaler.update()
"""
    (line, message), = found("AMP303", source)
    assert line == 11 and "only under `if (step + 1) % args.gradient_accumulation_steps == 0:`" in message
