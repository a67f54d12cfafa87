"""AMP302 / AMP303 and the two arms of one ``if`` on a configuration value (h2o-llmstudio's loop: ``if cfg.mixed_precision
and len(cfg.gpus) and not cfg.use_deepspeed:`` scaled backward, unscale_, clip, scaler step / ``else:`` plain backward, clip,
``optimizer.step()``, with gradient accumulation in both). The else arm never sees scaled gradients: a path taking the
if arm on one iteration (accumulating, no step) and the else arm on the next is not a run (unseen set 21, T21-1)."""
import json
import textwrap

from cliutil import run, write_project

LOOP = """
    import torch

    def run(cfg, model, loader):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("cuda") if cfg.mixed_precision else None
        for itr, (x, y) in enumerate(loader):
            with torch.autocast("cuda", enabled=cfg.mixed_precision):
                loss = torch.nn.functional.mse_loss(model(x), y)
            if TEST:
                scaler.scale(loss).backward()
                if itr % cfg.grad_accumulation == 0:
                    if cfg.gradient_clip > 0:
                        scaler.unscale_(optimizer)
                        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.gradient_clip)
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad(set_to_none=True)
            else:
                loss.backward()
                if itr % cfg.grad_accumulation == 0:
                    if cfg.gradient_clip > 0:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.gradient_clip)
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
    """


def _found(tmp_path, test, body=LOOP):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(body).replace("TEST", test)})
    r = run(["check", "--no-cache", "--select", "AMP302,AMP303", "--output-format", "json", "."], root)
    return sorted((f["code"], f["location"]["row"]) for f in json.loads(r.out))


def test_the_plain_arm_of_a_compound_config_test_is_not_fed_scaled_gradients(tmp_path):
    assert _found(tmp_path, "cfg.mixed_precision and len(cfg.gpus) and not cfg.use_deepspeed") == []


def test_the_plain_arm_of_a_config_test_not_named_for_amp(tmp_path):
    assert _found(tmp_path, "cfg.use_fast_path") == []


def test_near_miss_a_test_the_loop_changes_keeps_both_arms_on_one_path(tmp_path):
    # ``itr`` changes each iteration: an accumulating scaled iteration may be followed by a plain one, whose clip
    # and optimizer.step() then see the scaled gradients
    assert ("AMP303", 24) in _found(tmp_path, "itr < cfg.warmup_iters")


def test_near_miss_a_clip_with_no_unscale_after_the_scaled_backward_stays(tmp_path):
    body = LOOP.replace("                        scaler.unscale_(optimizer)\n", "")
    assert ("AMP302", 14) in _found(tmp_path, "cfg.mixed_precision and len(cfg.gpus)", body)


def _with_many_conditions(n: int) -> str:
    """LOOP with ``n`` more conditions, each tested twice in the loop body (so each one is kept apart by the walk): a
    long training function like h2o-llmstudio's, whose paths pass the walk's bound on their number."""
    before = "".join(f"                if cfg.log_{i}:\n                    print({i})\n" for i in range(n))
    after = "".join(f"            if cfg.log_{i}:\n                print({i})\n" for i in range(n))
    head, tail = LOOP.split("            if TEST:\n")
    head = head.replace("                loss = ", before + "                loss = ")
    return head + after + "            if TEST:\n" + tail


def test_the_plain_arm_stays_apart_in_a_function_with_many_conditions(tmp_path):
    assert _found(tmp_path, "cfg.mixed_precision and len(cfg.gpus) and not cfg.use_deepspeed",
                  _with_many_conditions(8)) == []


def test_near_miss_many_conditions_and_a_test_the_loop_changes(tmp_path):
    found = _found(tmp_path, "itr < cfg.warmup_iters", _with_many_conditions(8))
    assert any(code == "AMP303" for code, _ in found)


def test_near_miss_a_test_on_the_loops_own_target_changes_each_iteration(tmp_path):
    # ``for b, (x, y) in enumerate(loader)``: ``b == 0`` holds on the first iteration only (no counter-like name)
    body = LOOP.replace("for itr, (x, y)", "for b, (x, y)").replace("itr %", "b %")
    assert any(code == "AMP303" for code, _ in _found(tmp_path, "b == 0", body))
