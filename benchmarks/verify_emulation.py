"""How closely amplint verify's CPU emulation of CUDA autocast matches CUDA autocast.

The reference is PyTorch's own CUDA autocast test expectations: every entry of
torch.testing._internal.autocast_test_lists.AutocastTestLists (the lists test/test_cuda.py runs on a
GPU), each an op, its arguments and the output dtype CUDA autocast must give. Each entry is run on CPU
twice: under plain CPU autocast at float16, and under amplint's emulation (amplint.verify.emulation).
An entry agrees when the output dtype is the expected one (a banned op agrees when it raises).

    python benchmarks/verify_emulation.py        # writes benchmarks/results/verify_emulation.json
"""
from __future__ import annotations

import json
import platform
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

import torch  # noqa: E402

# autocast_test_lists imports two names from common_utils, which needs test-only packages
# (expecttest, numpy) that a torch install lacks; the lists themselves need neither.
if "torch.testing._internal.common_utils" not in sys.modules:
    import types
    _stub = types.ModuleType("torch.testing._internal.common_utils")
    _stub.TEST_WITH_ROCM, _stub.TestCase = False, object
    sys.modules["torch.testing._internal.common_utils"] = _stub
from torch.testing._internal.autocast_test_lists import AutocastTestLists  # noqa: E402

from amplint.verify.emulation import CudaAutocastOnCpu  # noqa: E402


def entries():
    """(list name, op, callable, expected dtype or 'raises') for every entry of the CUDA lists."""
    lists = AutocastTestLists(torch.device("cpu"))
    half, single = torch.float16, torch.float32
    plan = [("torch_expect_builtin_promote", torch, None), ("methods_expect_builtin_promote", None, None),
            ("torch_fp16", torch, half), ("torch_fp32", torch, single),
            ("torch_need_autocast_promote", torch, single), ("nn_fp16", torch._C._nn, half),
            ("nn_fp32", torch._C._nn, single), ("linalg_fp16", torch._C._linalg, half),
            ("methods_fp16", None, half), ("methods_fp32", None, single)]
    for name, module, expected in plan:
        for entry in getattr(lists, name):
            op, args = entry[0], entry[1]
            kwargs = entry[2] if len(entry) > 2 and isinstance(entry[2], dict) else {}
            want = entry[2] if expected is None and len(entry) > 2 else expected
            if module is None:
                fn = (lambda op=op, args=args, kwargs=kwargs: getattr(args[0], op)(*args[1:], **kwargs))
            else:
                fn = (lambda op=op, args=args, kwargs=kwargs, module=module: getattr(module, op)(*args, **kwargs))
            yield name, op, fn, want
    for op, args, module in lists.banned:
        yield "banned", op, (lambda op=op, args=args, module=module: getattr(module, op)(*args)), "raises"


def outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - an op may not exist on CPU at all
        return "raises", f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    out = out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(out, torch.Tensor):
        return "not a tensor", ""  # torch.equal: test_cuda checks dtypes of tensor outputs only
    return out.dtype, ""


def run(context):
    agree, disagree = 0, []
    for name, op, fn, want in entries():
        if name.endswith("builtin_promote"):
            continue  # built-in type promotion (add of float16 and float32 ...) is not autocast's doing
        with context():
            got, why = outcome(fn)
        if got == want or got == "not a tensor":
            agree += 1
        else:
            disagree.append({"list": name, "op": op, "expected": str(want), "got": str(got), "error": why})
    return agree, disagree


def main() -> int:
    every = list(entries())
    treated = [e for e in every if not e[0].endswith("builtin_promote")]
    total = len(treated)
    cpu_agree, cpu_disagree = run(lambda: torch.autocast("cpu", dtype=torch.float16))
    emu_agree, emu_disagree = run(CudaAutocastOnCpu)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {
        "commit": commit, "torch": torch.__version__, "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "entries_in_lists": len(every), "autocast_treated_entries": len(treated),
        "compared": total,
        "cpu_autocast_fp16": {"agree": cpu_agree, "disagree": cpu_disagree},
        "amplint_emulation": {"agree": emu_agree, "disagree": emu_disagree},
    }
    out = ROOT / "benchmarks" / "results" / "verify_emulation.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"CUDA autocast expectations compared: {total} (the autocast-treated entries of {len(every)}); plain CPU autocast (float16) agrees with {cpu_agree}, "
          f"amplint's emulation with {emu_agree}")
    for d in emu_disagree:
        print(f"  emulation differs: {d['list']} {d['op']}: expected {d['expected']}, got {d['got']} {d['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
