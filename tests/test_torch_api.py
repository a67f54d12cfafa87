"""amplint.torch_api holds torch facts as data: each table is checked against the installed torch here
(skipped where torch is not installed), and the package itself never imports torch."""
import importlib
import inspect
import re
import subprocess
import sys

import pytest

from amplint.torch_api import amp_api, autocast, optimizers
from cliutil import subprocess_env

torch = pytest.importorskip("torch")


def test_every_aten_operator_in_the_cuda_policy_exists():
    missing = []
    for op in autocast.CUDA_ATEN:
        name, overload = autocast.split_overload(op)
        packet = getattr(torch.ops.aten, name, None)
        if packet is None or overload not in packet.overloads():
            missing.append(op)
    assert missing == []


def test_cuda_policy_is_exactly_what_the_dispatcher_registers_for_autocast_cuda():
    # CPU builds of torch register the AutocastCUDA kernels too, so the table is checked without a GPU.
    registered = {n[len("aten::"):] for n in torch._C._dispatch_get_all_op_names()
                  if n.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(n, "AutocastCUDA")}
    table = {op for op in autocast.CUDA_ATEN}
    assert table == registered


def test_python_spellings_reach_an_operator_of_the_policy():
    packets = {autocast.split_overload(op)[0] for op in autocast.CUDA_ATEN}
    assert set(autocast.SPELLINGS) <= packets
    # Every Python spelling the static model calls "lower" is an aten op autocast lowers (or a
    # composite reaching one: lstm/gru run lstm_cell-like kernels, conv_transposeNd its .input overload).
    for spelling in autocast.LOWER_PRECISION:
        op = autocast.ALIASES.get(spelling, spelling)
        aten = next((a for a, names in autocast.SPELLINGS.items() if spelling in names), op)
        assert autocast.aten_policy(aten) in ("lower", "keep"), spelling
    assert autocast.aten_policy("softmax") == "fp32_opt_dtype"
    assert autocast.aten_policy("pow.Tensor_Scalar") == "fp32"
    assert autocast.aten_policy("sum.IntList_out") == "keep"  # an overload autocast does not register
    assert autocast.aten_policy("add") == "keep"


def test_optimizer_eps_defaults_match_torch_optim():
    for cls, (eps, position) in optimizers.OPTIMIZERS.items():
        params = list(inspect.signature(getattr(torch.optim, cls).__init__).parameters)
        assert params.index("eps") - 1 == position, cls  # "self" is not a positional argument of the call
        assert inspect.signature(getattr(torch.optim, cls).__init__).parameters["eps"].default == eps, cls


def test_deprecated_amp_api_names_exist_and_warn():
    import importlib
    import warnings

    for name, (kind, device) in amp_api.DEPRECATED.items():
        module, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(module), attr), name
        assert hasattr(torch.amp, kind), kind
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cpu.amp.autocast()
    assert any("deprecated" in str(w.message) for w in caught)


def test_torch_api_never_imports_torch():
    probe = ("import sys; import amplint.torch_api.autocast, amplint.torch_api.optimizers, amplint.torch_api.amp_api; "
             "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.') or m == 'libcst'))")
    out = subprocess.run([sys.executable, "-c", probe], env=subprocess_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_no_half_ops_raise_for_float16():
    """grad_mode.NO_HALF: each op has no float16 kernel (the installed torch raises for a float16 input)."""
    from amplint.torch_api.grad_mode import NO_HALF, NO_HALF_METHODS

    a = torch.eye(3, dtype=torch.float16) * 2
    for name in sorted(NO_HALF):
        op = torch
        for part in name.split(".")[1:]:
            op = getattr(op, part)
        args = (a, a) if name.endswith(("solve", "solve_ex", "lstsq")) else (a,)
        with pytest.raises((RuntimeError, TypeError)):
            op(*args)
    for method in sorted(NO_HALF_METHODS):
        with pytest.raises((RuntimeError, TypeError)):
            getattr(a, method)()
    assert torch.linalg.inv(a.float()).dtype == torch.float32  # the same call in float32 works


def test_distribution_methods_float32_under_autocast_go_through_their_float32_op():
    from amplint.torch_api import autocast as policy
    from amplint.torch_api import distributions

    for cls, methods in distributions.FLOAT32_UNDER_AUTOCAST.items():
        for method, op in methods.items():
            source = inspect.getsource(getattr(getattr(torch.distributions, cls), method))
            assert re.search(rf"\b{op}\(", source), (cls, method, op)
            assert policy.policy(op) == "fp32", op


def test_sparse_matmul_names_exist_and_reach_an_autocast_lowered_product():
    from amplint.torch_api import autocast as policy
    from amplint.torch_api import sparse

    def resolve(name):
        obj = torch
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
        return obj

    for name in (*sparse.SPARSE_MATMULS, *sparse.DENSE_MATMULS, *sparse.SPARSE_BUILDERS):
        assert callable(resolve(name)), name
    for method in sparse.SPARSE_METHODS:
        assert hasattr(torch.Tensor, method), method
    # _sparse_mm is composite (it reaches addmm), and autocast lowers addmm and mm
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::_sparse_mm", "CompositeImplicitAutograd")
    assert policy.policy("addmm") == "lower" and policy.policy("mm") == "lower"


def test_same_dtype_writes_raise_on_a_dtype_mismatch():
    """grad_mode.SAME_DTYPE_WRITES: each op raises when the source's dtype is not the destination's
    (float16 into float32 and the reverse), at the position / keyword the table names, and runs when
    they agree; the function form takes the destination first."""
    from amplint.torch_api.grad_mode import SAME_DTYPE_WRITES

    index = torch.tensor([[0, 1], [1, 0]])
    args = {"scatter": (1, index), "scatter_add": (1, index), "scatter_reduce": (1, index),
            "index_add": (0, torch.tensor([0, 1])), "index_copy": (0, torch.tensor([0, 1])),
            "index_put": ((torch.tensor([0, 1]),),), "masked_scatter": (torch.ones(2, 2, dtype=torch.bool),)}
    for op, (position, keyword) in SAME_DTYPE_WRITES.items():
        base = op.rstrip("_")
        extra = {"reduce": "sum"} if base == "scatter_reduce" else {}
        assert len(args[base]) == position, op
        for dest_dtype, source_dtype in ((torch.float16, torch.float32), (torch.float32, torch.float16)):
            dest, source = torch.zeros(2, 2, dtype=dest_dtype), torch.ones(2, 2, dtype=source_dtype)
            with pytest.raises(RuntimeError):
                getattr(dest, op)(*args[base], source, **extra)
            with pytest.raises(RuntimeError):
                getattr(dest.clone(), op)(*args[base], **{keyword: source}, **extra)
        assert getattr(torch.zeros(2, 2), op)(*args[base], torch.ones(2, 2), **extra).dtype == torch.float32
        if hasattr(torch, op):
            with pytest.raises(RuntimeError):
                getattr(torch, op)(torch.zeros(2, 2, dtype=torch.float16), *args[base], torch.ones(2, 2), **extra)


def test_module_self_calls_are_run_by_nn_module():
    """modules.MODULE_SELF_CALLS: each is a method of nn.Module, and nn.Module's own machinery runs the
    overrides of a subclass (a call of the module, repr, state_dict / load_state_dict, .to) with no call
    of their names; modules.MODULE_CLASSES spells torch.nn.Module."""
    from amplint.torch_api.modules import MODULE_CLASSES, MODULE_SELF_CALLS

    for name in MODULE_SELF_CALLS:
        assert callable(getattr(torch.nn.Module, name)), name
    for spelled in MODULE_CLASSES:
        module, _, attr = spelled.rpartition(".")
        assert getattr(importlib.import_module(module), attr) is torch.nn.Module, spelled
    ran = set()
    overridden = ("forward", "extra_repr", "_get_name", "_save_to_state_dict", "_load_from_state_dict", "_apply")

    def recording(name):
        def method(self, *args, **kwargs):
            ran.add(name)
            return getattr(torch.nn.Module, name)(self, *args, **kwargs) if name != "forward" else args[0]
        return method

    Net = type("Net", (torch.nn.Module,), {name: recording(name) for name in overridden})
    net = Net()
    net(torch.ones(1))
    repr(net)
    net.load_state_dict(net.state_dict())
    net.to(torch.float64)
    assert ran == set(overridden)
