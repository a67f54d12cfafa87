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
REPEATS = 9


def transformer_block(batch=8, tokens=128, width=256):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0, batch_first=True)
    x = torch.randn(batch, tokens, width)
    return (lambda: layer(x).pow(2).mean()), torch.optim.SGD(layer.parameters(), lr=1e-3)


def median_time(fn) -> float:
    """The least CPU time of REPEATS runs (one thread): the machine is shared, and CPU time with the
    minimum is what other jobs disturb least."""
    fn()  # warm up
    times = []
    for _ in range(REPEATS):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


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
    torch.set_num_threads(1)
    rows = []
    for function in ("einsum_normaliser", "log_sigmoid", "temperature", "clean"):
        step, optimizer, _ = load(f"{HARNESS}:{function}")
        rows.append(measure(f"harness:{function}", step, optimizer))
    rows.append(measure("transformer block 2x32x64", *transformer_block(2, 32, 64)))
    rows.append(measure("transformer block 8x128x256", *transformer_block()))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = [f"# amplint verify: recording cost (CPU)", "",
             f"Commit {commit}; torch {torch.__version__}; {platform.machine()} ({platform.processor() or 'cpu'}), "
             f"{torch.get_num_threads()} thread; least CPU time of {REPEATS} steps (forward + backward); the "
             "machine is shared with other jobs.", "",
             "plain32: the step in float32; emu16: under the CUDA-autocast emulation, not recorded (CPU float16 "
             "kernels are much slower than float32 ones on a CPU without native float16 arithmetic: that is "
             "emu16 / plain32, not amplint's cost); rec16: the float16 run as `amplint verify` records it; "
             "verify: one whole `verify()` step (float32 reference + float16 run, both recorded).", "",
             "| target | plain32 ms | emu16 ms | rec16 ms | verify ms | rec16 / plain32 | rec16 / emu16 | verify / plain32 |",
             "|---|---|---|---|---|---|---|---|"]
    for name, t in rows:
        lines.append(f"| {name} | {t['plain32'] * 1e3:.2f} | {t['emu16'] * 1e3:.2f} | {t['rec16'] * 1e3:.2f} | "
                     f"{t['verify'] * 1e3:.2f} | {t['rec16'] / t['plain32']:.2f} | {t['rec16'] / t['emu16']:.2f} | "
                     f"{t['verify'] / t['plain32']:.2f} |")
    lines += ["", "Reading: the recorder costs a fixed ~0.1 ms of Python per aten op (the dispatch mode, the source "
              "line, two reductions), and verify() ~50 ms per run (registering the emulation's kernels). On "
              "the harness's tiny tensors an op itself takes microseconds, so recording multiplies the step "
              "(rec16 / emu16); at a realistic size the reductions are all that is left and recording is "
              "nearly free. On this CPU the float16 kernels alone are slower than float32 ones "
              "(emu16 / plain32): that is the price of running float16 on a CPU, not of recording. "
              "Not measured on a GPU."]
    text = "\n".join(lines) + "\n"
    (ROOT / "benchmarks" / "results" / "verify_overhead.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
