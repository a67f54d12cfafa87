"""amplint.runtime.AmpGuard driven by real float16 overflows on CPU: a layer whose weight gradient
overflows, a learnable temperature that collapses the loss scale, NaN batches; fp16-mixed with a
GradScaler, pure half, bfloat16."""
import logging
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from amplint.runtime import AmpGuard, AmpGuardError, AmpGuardWarning  # noqa: E402
from runtime_models import Contrastive, Net, batch  # noqa: E402


def mixed_step(model, optimizer, scaler, guard, x, y, *, unscale=False, loss_fn=F.cross_entropy):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(x)
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    if unscale:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    return guard.step(loss, batch=(x, y), outputs=out)


def mixed(model, **kw):
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    kw.setdefault("dump_dir", None)
    return optimizer, scaler, AmpGuard(model, optimizer, scaler, **kw)


@pytest.fixture
def quiet(caplog):
    """Collects AmpGuardWarnings and the guard's log records at INFO and above."""
    caplog.set_level(logging.INFO, logger="amplint.runtime")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught, caplog


def guard_warnings(caught):
    return [str(w.message) for w in caught if issubclass(w.category, AmpGuardWarning)]


@pytest.mark.parametrize("unscale", [False, True], ids=["scaler-step-unscales", "user-unscales-and-clips"])
def test_overflowing_layer_is_named_with_its_module(tmp_path, unscale, quiet):
    torch.manual_seed(0)
    model = Net(gain=100.0)
    optimizer, scaler, guard = mixed(model, dump_dir=str(tmp_path))
    x, y = batch()
    assert mixed_step(model, optimizer, scaler, guard, x, y, unscale=unscale) is True
    [record] = [r for r in guard.history if "layers" in r]
    assert record["skipped"] and record["grads_finite"] is False and record["loss_finite"] is True
    assert [p["param"] for p in record["params"]] == ["blocks.1.attn.qkv.weight"]
    [p] = record["params"]
    assert p["module"] == "blocks.1.attn.qkv" and p["layer"] == "blocks.1.attn"
    if unscale:  # clipping multiplied by max_norm / inf = 0: inf * 0 is NaN, the finite entries 0
        assert p["nonfinite"] == "nan" and p["max_finite"] == 0.0
    else:  # the largest finite entry, unscaled by the scaler (÷65536)
        assert p["nonfinite"] == "inf" and 0 < p["max_finite"] < 65504 / 65536 * 100
    assert record["layers"] == ["blocks.1.attn"] and record["scale"] == 32768.0
    assert guard.most_overflowed() == [("blocks.1.attn", 1)]
    # one skip is normal operation: nothing raised, nothing written, nothing warned
    assert not os.listdir(tmp_path) and guard_warnings(quiet[0]) == []


def test_check_gradients_between_backward_and_step_names_the_parameter():
    torch.manual_seed(0)
    model = Net(gain=100.0)
    optimizer, scaler, guard = mixed(model)
    x, y = batch()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    report = guard.check_gradients()  # before unscale_: the guard's own fused check
    assert not report and report.layers == ["blocks.1.attn"]
    assert report.params[0]["param"] == "blocks.1.attn.qkv.weight"
    scaler.step(optimizer)
    scaler.update()
    assert guard.end_step(loss) is True and guard.skipped == 1


def test_clean_run_stays_silent(tmp_path, quiet):
    torch.manual_seed(0)
    model = Net(gain=1.0)
    optimizer, scaler, guard = mixed(model, dump_dir=str(tmp_path / "dumps"), max_bad_steps=0)
    for i in range(6):
        x, y = batch(seed=i)
        assert mixed_step(model, optimizer, scaler, guard, x, y) is False
    caught, caplog = quiet
    assert guard.skipped == 0 and not guard.bad_steps and not guard.layer_counts
    assert guard_warnings(caught) == [] and caplog.records == []
    assert not (tmp_path / "dumps").exists()


def test_learnable_temperature_collapses_the_scale_and_is_named(quiet):
    torch.manual_seed(0)
    model = Contrastive(temperature=1e-2)
    optimizer, scaler, guard = mixed(model, scale_drop=2.0 ** 8, max_bad_steps=100)
    x, _ = batch()
    targets = torch.randint(0, 8, (8,), generator=torch.Generator().manual_seed(1))
    bad = [mixed_step(model, optimizer, scaler, guard, x, targets) for _ in range(20)]
    assert sum(bad) == guard.skipped >= 8
    assert scaler.get_scale() <= 65536 / 2 ** 8
    top_layer, steps = guard.most_overflowed()[0]
    assert (top_layer, steps) == ("scale", guard.skipped)  # the temperature, at every skipped step
    assert all(r["params"][0]["param"] == "scale.temperature" or "scale.temperature" in
               [p["param"] for p in r["params"]] for r in guard.history if "layers" in r)
    messages = guard_warnings(quiet[0])
    assert messages and "loss scale fell to" in messages[0] and "scale (" in messages[0]
    assert len(messages) == 1  # one collapse, one warning (no warning per step)


def test_scale_below_the_floor_warns():
    torch.manual_seed(0)
    model = Contrastive(temperature=1e-2)
    optimizer, scaler, guard = mixed(model, scale_drop=2.0 ** 30, scale_floor=2.0 ** 10, max_bad_steps=100)
    x, _ = batch()
    targets = torch.randint(0, 8, (8,), generator=torch.Generator().manual_seed(1))
    with pytest.warns(AmpGuardWarning, match="below the floor 1024"):
        for _ in range(12):
            mixed_step(model, optimizer, scaler, guard, x, targets)


def half_step(model, optimizer, guard, x, y):
    optimizer.zero_grad(set_to_none=True)
    out = model(x)
    loss = F.cross_entropy(out.float(), y)
    loss.backward()
    return guard.step(loss, batch={"x": x, "y": y}, outputs=out)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["pure-half", "bf16"])
def test_nan_batches_are_skipped_counted_and_dumped_past_the_threshold(tmp_path, dtype):
    torch.manual_seed(0)
    model = Net().to(dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    guard = AmpGuard(model, optimizer, max_bad_steps=2, window=10, dump_dir=str(tmp_path))
    x, y = batch()
    nan_x = x.clone()
    nan_x[3, 5] = float("nan")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert half_step(model, optimizer, guard, x.to(dtype), y) is False
    assert half_step(model, optimizer, guard, nan_x.to(dtype), y) is True
    assert half_step(model, optimizer, guard, nan_x.to(dtype), y) is True
    # two bad steps are tolerated; the optimizer skipped them, so the weights stay finite
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())  # the clean step trained
    assert os.listdir(tmp_path) == []
    with pytest.raises(AmpGuardError, match=r"3 non-finite steps in the last 4 \(limit 2\)") as info:
        half_step(model, optimizer, guard, nan_x.to(dtype), y)
    path = info.value.path
    assert path == str(tmp_path / "amp_guard_step3.pt") and os.listdir(tmp_path) == ["amp_guard_step3.pt"]
    dump = torch.load(path)  # weights_only: plain data
    assert dump["reason"].startswith("3 non-finite steps") and dump["step"] == 3
    assert torch.isnan(dump["batch"]["x"][3, 5]) and dump["batch"]["x"].dtype == dtype
    assert [b["step"] for b in dump["bad_batches"]] == [1, 2, 3]
    assert set(dump["model"]) == set(model.state_dict())
    assert dump["optimizer"]["param_groups"][0]["lr"] == 1e-2 and dump["scaler"] is None
    assert [r["step"] for r in dump["history"]] == [1, 2, 3] and dump["bad_steps"] == [1, 2, 3]
    assert dump["history"][0]["loss_finite"] is False and dump["history"][0]["grads_finite"] is False
    model.load_state_dict(dump["model"])  # the state loads back into the model


def test_bad_steps_outside_the_window_do_not_count():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    guard = AmpGuard(model, optimizer, max_bad_steps=1, window=3, dump_dir=None)
    x, y = batch()
    nan_x = x.clone()
    nan_x[0, 0] = float("inf")
    schedule = [nan_x, x, x, nan_x, x, x, nan_x, x, nan_x]  # bad at 0, 3, 6 (3 apart), then 8
    results = [half_step(model, optimizer, guard, xb, y) for xb in schedule[:-1]]
    assert results == [True, False, False, True, False, False, True, False]
    with pytest.raises(AmpGuardError, match="2 non-finite steps in the last 3"):
        half_step(model, optimizer, guard, schedule[-1], y)


def test_watch_counts_a_raising_nan_check_and_raises_past_the_threshold(tmp_path):
    torch.manual_seed(0)
    model = Net()
    optimizer, scaler, guard = mixed(model, max_bad_steps=1, dump_dir=str(tmp_path))
    x, y = batch()
    nan_x = x.clone()
    nan_x[1, 1] = float("nan")

    def step(xb):
        with guard.watch(batch=(xb, y)) as s:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.cross_entropy(model(xb), y)
            s.record(loss)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite loss {loss.item()}")
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return s.bad

    assert step(x) is False
    assert step(nan_x) is True  # swallowed: counted as a skipped step
    assert guard.nonfinite_losses == 1 and guard.skipped == 1
    with pytest.raises(AmpGuardError) as info:
        step(nan_x)
    assert isinstance(info.value.__cause__, FloatingPointError) and os.path.exists(info.value.path)
    with pytest.raises(ZeroDivisionError):  # a real error on a finite step goes through untouched
        with guard.watch(batch=(x, y)):
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            1 / 0


def test_dump_is_bounded_and_atomic(tmp_path):
    torch.manual_seed(0)
    model = Net(dim=64)
    optimizer = torch.optim.Adam(model.parameters())
    guard = AmpGuard(model, optimizer, max_bad_steps=0, dump_dir=str(tmp_path), max_dump_bytes=20_000)
    x, y = batch(dim=64)
    half_step(model, optimizer, guard, x, y)  # Adam state exists now
    x[0, 0] = float("nan")
    with pytest.raises(AmpGuardError) as info:
        half_step(model, optimizer, guard, x, y)
    dump = torch.load(info.value.path)
    assert dump["outputs"] is None and dump["optimizer"] is None and dump["model"] is None
    assert [o.split(" ")[0] for o in dump["omitted"]] == ["outputs", "optimizer", "model"]
    assert dump["batch"]["x"].shape == (8, 64)  # the batch is kept
    assert os.path.getsize(info.value.path) < 20_000 + 64_000
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_prepared_optimizer_and_scaler_are_unwrapped():
    """accelerate's AcceleratedOptimizer keeps the torch optimizer in .optimizer and the scaler in .scaler."""
    model = Net()
    inner = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")

    class Prepared:
        def __init__(self):
            self.optimizer, self.scaler = inner, scaler

    class Accelerator:
        def __init__(self):
            self.scaler = scaler

        def unwrap_model(self, m):
            return m.module

    wrapped = torch.nn.Module()
    wrapped.module = model
    guard = AmpGuard.from_accelerator(Accelerator(), wrapped, Prepared())
    assert guard.model is model and guard.optimizer is inner and guard.scaler is scaler
    assert AmpGuard(wrapped, Prepared()).scaler is scaler
    assert AmpGuard(model, inner, torch.amp.GradScaler("cpu", enabled=False)).scaler is None


def test_a_large_finite_half_gradient_is_not_taken_for_an_overflow():
    """The fused check's norm of a float16 gradient can pass 65504 with finite entries."""
    model = torch.nn.Linear(1000, 1).half()
    guard = AmpGuard(model, dump_dir=None)
    model.weight.grad = torch.full_like(model.weight, 3000.0)
    model.bias.grad = torch.zeros_like(model.bias)
    assert guard.check_gradients().finite is True
    model.weight.grad[0, 7] = float("-inf")
    report = guard.check_gradients()
    assert report.finite is False and [p["param"] for p in report.params] == ["weight"]
    assert report.params[0]["max_finite"] == 3000.0 and report.params[0]["count"] == 1


def test_scale_warnings_once_per_further_collapse_and_again_after_recovery():
    """The scale is scripted (a stand-in with GradScaler's get_scale / is_enabled): warnings come at
    a fall of scale_drop from the peak, at each further fall of scale_drop, after a recovery, and
    below the floor; never once per step."""
    class ScriptedScaler:
        scale = 65536.0

        def is_enabled(self):
            return True

        def get_scale(self):
            return self.scale

    model = torch.nn.Linear(2, 2)
    scaler = ScriptedScaler()
    guard = AmpGuard(model, torch.optim.SGD(model.parameters(), lr=0.1), scaler, scale_drop=16.0,
                     scale_floor=1.0, max_bad_steps=100, dump_dir=None)
    warned = []
    for scale in [32768, 4096, 2048, 1024, 256, 128, 65536, 8192, 4096, 2048, 0.5, 0.25]:
        scaler.scale = float(scale)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            guard.end_step()
        warned += [scale for w in caught if issubclass(w.category, AmpGuardWarning)]
    assert warned == [4096, 256, 4096, 0.5]
    assert guard.skipped == 11  # every fall of the scale is a skipped step


def test_an_unwritable_dump_dir_still_raises_and_says_why(tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = torch.nn.Linear(2, 2)
    guard = AmpGuard(model, torch.optim.SGD(model.parameters(), lr=0.1), max_bad_steps=0,
                     dump_dir=str(blocker / "dumps"))
    with pytest.raises(AmpGuardError, match="the dump could not be written") as info:
        guard.end_step(torch.tensor(float("nan")))
    assert info.value.path is None and blocker.read_text() == ""
