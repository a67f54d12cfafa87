"""What recording costs: amplint verify's float16 run against a plain step, on CPU.

For each target, the median over repeats of one step (forward + backward) run
  plain32  as float32, no recording (what the user's step costs),
  emu16    under the CUDA-autocast emulation, no recording (what float16 costs on this CPU),
  rec16    under the emulation with amplint's recorder (the float16 run of `amplint verify`),
  verify   one whole `verify()` step (float32 reference + float16 run, both recorded, gradients, matching),
and the ratios rec16/plain32 (the goal: at most 3), rec16/emu16 (the recorder's own cost) and
verify/plain32. Targets: the harness's functions (tiny tensors, so per-op Python overhead dominates)
and a small transformer block at a realistic size for a CPU (batch 8, 128 tokens, width 256).

    nice python benchmarks/verify_overhead.py      # ~1-2 min; writes benchmarks/results/verify_overhead.md
"""
from __future__ import annotations

import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

import torch  # noqa: E402

from amplint.verify import verify  # noqa: E402
from amplint.verify.emulation import CudaAutocastOnCpu, CudaPolicyKernels  # noqa: E402
from amplint.verify.record import ModuleTracker, Recorder  # noqa: E402
from amplint.verify.target import load  # noqa: E402

HARNESS = ROOT / "examples" / "verify" / "harness.py"
REPEATS = 7


def transformer_block():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    x = torch.randn(8, 128, 256)
    return (lambda: layer(x).pow(2).mean()), torch.optim.SGD(layer.parameters(), lr=1e-3)


def median_time(fn) -> float:
    fn()  # warm up
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(name, step, optimizer):
    params = [p for g in optimizer.param_groups for p in g["params"]]

    def zero():
        for p in params:
            p.grad = None

    def plain32():
        zero()
        step().backward()

    def emu16():
        zero()
        with CudaAutocastOnCpu():
            loss = step()
        loss.backward()

    modules = ModuleTracker()
    recorder = Recorder(modules)

    def rec16():
        zero()
        with modules, recorder:
            with CudaAutocastOnCpu():
                loss = step()
            recorder.begin_backward()
            loss.backward()
        recorder.end_step()

    def whole():
        verify(step, device="cpu")  # no optimizer: one recorded reference + float16 forward and backward

    t = {"plain32": median_time(plain32), "verify": median_time(whole)}
    with CudaPolicyKernels():  # registered once per verify run, as verify() does
        t.update(emu16=median_time(emu16), rec16=median_time(rec16))
    return name, t


def main() -> int:
    rows = []
    for function in ("einsum_normaliser", "log_sigmoid", "temperature", "clean"):
        step, optimizer, _ = load(f"{HARNESS}:{function}")
        rows.append(measure(f"harness:{function}", step, optimizer))
    rows.append(measure("transformer block 8x128x256", *transformer_block()))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = [f"# amplint verify: recording cost (CPU)", "",
             f"Commit {commit}; torch {torch.__version__}; {platform.machine()}, {torch.get_num_threads()} threads; "
             f"median of {REPEATS} steps (forward + backward). Machine shared with other jobs: ratios are more "
             "stable than times.", "",
             "| target | plain32 ms | emu16 ms | rec16 ms | verify ms | rec16 / plain32 | rec16 / emu16 | verify / plain32 |",
             "|---|---|---|---|---|---|---|---|"]
    for name, t in rows:
        lines.append(f"| {name} | {t['plain32'] * 1e3:.2f} | {t['emu16'] * 1e3:.2f} | {t['rec16'] * 1e3:.2f} | "
                     f"{t['verify'] * 1e3:.2f} | {t['rec16'] / t['plain32']:.2f} | {t['rec16'] / t['emu16']:.2f} | "
                     f"{t['verify'] / t['plain32']:.2f} |")
    text = "\n".join(lines) + "\n"
    (ROOT / "benchmarks" / "results" / "verify_overhead.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
