"""The Lightning and Hugging Face adapters of AmpGuard, driven through their hooks in the order those
trainers call them, with real float16 overflows. Neither library is a dependency: when it is not
installed the test puts a minimal stand-in of its base class in sys.modules (the hooks' signatures are
what the adapters rely on)."""
import importlib
import os
import sys
import types
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from amplint.runtime import AmpGuardError  # noqa: E402
from runtime_models import Net, batch  # noqa: E402


def adapter(monkeypatch, module, package_modules, base_name):
    """Import amplint.runtime.<module>, with a stand-in base class if the library is missing."""
    try:
        importlib.import_module(package_modules[-1])
    except ImportError:
        base = type(base_name, (), {"__init__": lambda self, *a, **k: None})
        for name in package_modules:
            fake = types.ModuleType(name)
            setattr(fake, base_name, base)
            monkeypatch.setitem(sys.modules, name, fake)
    monkeypatch.delitem(sys.modules, f"amplint.runtime.{module}", raising=False)
    return importlib.import_module(f"amplint.runtime.{module}")


def forward_backward(model, optimizer, scaler, x, y):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    return loss


def test_lightning_callback(monkeypatch, tmp_path):
    lightning = adapter(monkeypatch, "lightning", ["lightning", "lightning.pytorch", "lightning.pytorch.callbacks"],
                        "Callback")
    torch.manual_seed(0)
    model = Net(gain=1000.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    trainer = SimpleNamespace(optimizers=[optimizer], strategy=SimpleNamespace(precision_plugin=SimpleNamespace(scaler=scaler)))
    callback = lightning.AmpGuardCallback(max_bad_steps=1, dump_dir=str(tmp_path))
    callback.on_train_start(trainer, model)
    assert callback.guard.scaler is scaler and callback.guard.optimizer is optimizer

    def training_batch(i):
        x, y = batch(seed=i)
        loss = forward_backward(model, optimizer, scaler, x, y)  # Lightning's closure
        scaler.unscale_(optimizer)  # MixedPrecision.optimizer_step, then _after_closure:
        callback.on_before_optimizer_step(trainer, model, optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        callback.on_train_batch_end(trainer, model, {"loss": loss.detach()}, (x, y), i)

    training_batch(0)
    [record] = [r for r in callback.guard.history if "layers" in r]
    # checked before clipping: the overflow is named as an inf, with its finite magnitude
    assert record["params"][0]["param"] == "blocks.1.attn.qkv.weight" and record["params"][0]["nonfinite"] == "inf"
    assert record["layers"] == ["blocks.1.attn"] and record["params"][0]["max_finite"] > 0
    with pytest.raises(AmpGuardError, match="blocks.1.attn"):
        training_batch(1)
    assert torch.load(os.path.join(tmp_path, "amp_guard_step1.pt"))["batch"][0].shape == (8, 16)


def test_hf_trainer_callback(monkeypatch, tmp_path):
    hf = adapter(monkeypatch, "hf", ["transformers"], "TrainerCallback")
    torch.manual_seed(0)
    model = Net(gain=1000.0)
    inner = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")

    class AcceleratedOptimizer:  # what the Trainer passes: accelerate's wrapper, scaler inside
        def __init__(self):
            self.optimizer, self.scaler = inner, scaler

        def step(self):
            self.scaler.step(self.optimizer)
            self.scaler.update()

    prepared = AcceleratedOptimizer()
    args, state, control = SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(), SimpleNamespace()
    callback = hf.AmpGuardTrainerCallback(max_bad_steps=1)
    callback.on_train_begin(args, state, control, model=model, optimizer=prepared)
    assert callback.guard.scaler is scaler and callback.guard.optimizer is inner

    def trainer_step(i):
        x, y = batch(seed=i)
        forward_backward(model, inner, scaler, x, y)
        callback.on_pre_optimizer_step(args, state, control)
        prepared.step()
        callback.on_optimizer_step(args, state, control)
        model.zero_grad()

    trainer_step(0)
    assert callback.guard.skipped == 1 and callback.guard.most_overflowed() == [("blocks.1.attn", 1)]
    with pytest.raises(AmpGuardError) as info:
        trainer_step(1)
    assert info.value.path == os.path.join(str(tmp_path), "amp_guard", "amp_guard_step1.pt")
    assert torch.load(info.value.path)["layer_counts"] == {"blocks.1.attn": 2}


@pytest.mark.parametrize("module, blocked", [("lightning", ["lightning", "pytorch_lightning"]),
                                             ("hf", ["transformers"])])
def test_adapter_without_its_library_says_what_to_install(monkeypatch, module, blocked):
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)  # import of it fails
    monkeypatch.delitem(sys.modules, f"amplint.runtime.{module}", raising=False)
    with pytest.raises(ImportError, match="pip install"):
        importlib.import_module(f"amplint.runtime.{module}")
