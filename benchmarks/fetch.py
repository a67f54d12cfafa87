"""Download pinned releases of real public PyTorch code into benchmarks/.cache/ and extract them.

    python benchmarks/fetch.py            # fetch every project (skips those already extracted)
    python benchmarks/fetch.py timm       # only these
    python benchmarks/fetch.py --list     # what would be fetched, with versions and hashes

Nothing fetched is ever committed: benchmarks/.cache/ is in .gitignore. Archives come from PyPI
through pip's ordinary client (``pip download --no-deps``), pinned to an exact version and checked
against the sha256 recorded below, so a sweep is reproducible.

Each project is extracted to ``benchmarks/.cache/src/<name>-<version>/`` and made to look like a
checkout of its repository: ``git init`` there (an empty repository, nothing is added). That makes
the directory a project root of its own for amplint (the regime is inferred per project) and keeps
amplint from applying this repository's .gitignore (which ignores benchmarks/.cache/) to it.
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
DIST = CACHE / "dist"
SRC = CACHE / "src"

# A wheel for another interpreter/platform than this one (fairseq ships no sdist that builds without
# torch and a compiler, and no wheel newer than cp38). The code is pure Python text to us.
CP38_LINUX = ("--python-version", "3.8", "--implementation", "cp", "--abi", "cp38",
              "--platform", "manylinux1_x86_64", "--platform", "manylinux_2_5_x86_64")


@dataclass(frozen=True)
class Project:
    name: str                       # short name used in results and triage keys
    dist: str                       # PyPI distribution name
    version: str                    # exact pinned version
    kind: str                       # "sdist" or "wheel"
    filename: str                   # the archive pip downloads
    sha256: str
    include: Tuple[str, ...] = ()   # path prefixes (inside the archive's top folder) to keep; () = all .py
    exclude: Tuple[str, ...] = ()   # path prefixes to drop
    pip_args: Tuple[str, ...] = ()
    why: str = ""

    @property
    def root(self) -> Path:
        return SRC / f"{self.name}-{self.version}"

    @property
    def archive(self) -> Path:
        return DIST / self.filename


_TRANSFORMERS_MODELS = ("bert", "bart", "clip", "gpt2", "llama", "t5", "vit", "whisper")

PROJECTS: List[Project] = [
    Project(
        "timm", "timm", "1.0.31", "sdist", "timm-1.0.31.tar.gz",
        "baa0b333339c46d3d6d4965d99b69f5053afed71210e8f433d7ea5ee6a18f0ec",
        why="image models, layers (attention, norms), optimizers (many Adam variants with eps), "
            "NativeScaler (GradScaler wrapper). The sdist does not ship train.py.",
    ),
    Project(
        "open_clip", "open-clip-torch", "3.3.0", "sdist", "open_clip_torch-3.3.0.tar.gz",
        "904b1a9f909df8281bb3de60ab95491cd2994a509177ea4f9d6292a84fe24d6d",
        why="CLIP models with a learnable logit_scale, contrastive losses, and the training loop "
            "(src/open_clip_train: autocast, GradScaler, clipping, logit_scale clamp).",
    ),
    Project(
        "transformers", "transformers", "4.46.3", "wheel", "transformers-4.46.3-py3-none-any.whl",
        "a12ef6f52841fd190a3e5602145b542d03507222f2c64ebb7ee92e8788093aef",
        include=tuple(f"transformers/models/{m}/" for m in _TRANSFORMERS_MODELS) + tuple(
            f"transformers/{f}.py" for f in (
                "trainer", "trainer_pt_utils", "trainer_utils", "training_args", "optimization",
                "modeling_utils", "modeling_attn_mask_utils", "pytorch_utils", "activations",
            )),
        # TensorFlow and Flax ports are not PyTorch code.
        exclude=tuple(f"transformers/models/{m}/modeling_{p}_{m}.py" for m in _TRANSFORMERS_MODELS
                      for p in ("tf", "flax")),
        why="a Hugging Face model family (attention masks, layer norms, T5's fp16 clamps) plus "
            "the Trainer and its optimizers (Adafactor).",
    ),
    Project(
        "ultralytics", "ultralytics", "8.4.190", "sdist", "ultralytics-8.4.190.tar.gz",
        "c7a0ebb21d10f1de98682b6a4dc22bc0d1d0634b9398c086bd03b1e5bf40cbc3",
        why="a production training engine (engine/trainer.py: autocast, GradScaler, clipping, "
            "NaN recovery), detection losses and heads.",
    ),
    Project(
        "fairseq", "fairseq", "0.12.2", "wheel",
        "fairseq-0.12.2-cp38-cp38-manylinux_2_5_x86_64.manylinux1_x86_64.whl",
        "08fa308c760f995cdc13d9c385e2b9d923a78b48275d8b4d78f3a854c71a8f29",
        include=("fairseq/", "fairseq_cli/"),
        pip_args=CP38_LINUX,
        why="fp16 training done by hand: FP16Optimizer / MemoryEfficientFP16Optimizer with a "
            "dynamic loss scaler, model.half(), many attention masks and epsilons.",
    ),
    Project(
        "speechbrain", "speechbrain", "1.1.2", "wheel", "speechbrain-1.1.2-py3-none-any.whl",
        "9fea4144c917ea58bcf13f17a1a1759179ed7472a30ec8416e7c7c8cf21d9c9a",
        why="a speech toolkit: the Brain training loop (autocast, GradScaler, non-finite loss "
            "patience), attention, TTS models, and much float32 signal processing (features, "
            "NMF, STOI) that must not be taken for float16.",
    ),
    Project(
        "mmengine", "mmengine", "0.10.7", "wheel", "mmengine-0.10.7-py3-none-any.whl",
        "262ac976a925562f78cd5fd14dd1bc9b680ed0aa81f0d85b723ef782f99c54ee",
        why="OpenMMLab's training engine: AmpOptimWrapper (GradScaler, unscale_, clipping behind "
            "wrapper methods), autocast helpers, runners and hooks.",
    ),
    Project(
        "accelerate", "accelerate", "1.15.0", "wheel", "accelerate-1.15.0-py3-none-any.whl",
        "97eacca0b73e45cb867dbf8c5d5d4dc32219544300e0c8992c7334dc2ef33cec",
        why="Hugging Face's training wrapper: mixed_precision='fp16' plumbing, the scaler inside "
            "Accelerator.backward / clip_grad_norm_ (which unscales), checkpointing of scalers.",
    ),
    # Issue 8: projects of other kinds (a monorepo of many models, libraries with no training loop,
    # precision set in the user's configuration / on the command line).
    Project(
        "diffusers", "diffusers", "0.31.0", "sdist", "diffusers-0.31.0.tar.gz",
        "b1d01a73e45d43a0630c299173915dddd69fc50f2ae8f2ab5de4fd245eaed72f",
        why="a monorepo of many models (UNets, VAEs, transformers, schedulers, pipelines) with no "
            "training loop of its own: its users train in fp16 and bf16, inference pipelines cast to "
            "float16 everywhere (the stray-inference-cast class).",
    ),
    Project(
        "peft", "peft", "0.13.2", "sdist", "peft-0.13.2.tar.gz",
        "0e0cbd40ebdf5fe4ea79f255880d02f96712d18899509369a2cc5768ad46d672",
        why="a library with no training loop (LoRA and other adapters): the library policy, "
            "dtype-generic helpers, adapters kept in float32 beside half base models.",
    ),
    Project(
        "axolotl", "axolotl", "0.5.2", "sdist", "axolotl-0.5.2.tar.gz",
        "ee5f86e6260ef28074baffcff8a21ac89144f8282cc9d87dd5e240604f9a6e9c",
        why="a fine-tuning harness whose precision is set in the user's YAML (cfg.fp16 / cfg.bf16 / "
            "DeepSpeed JSON) and handed to Hugging Face TrainingArguments: one-of evidence.",
    ),
    Project(
        "litgpt", "litgpt", "0.5.3", "sdist", "litgpt-0.5.3.tar.gz",
        "6b212a81333cd2afdeec8091068f317c68d7613f9793266d28ecefb128147d50",
        why="Lightning Fabric pre-training / fine-tuning scripts whose precision comes from the "
            "command line or a YAML config (bf16-true, 16-mixed), many model variants in one config.",
    ),
]

BY_NAME = {p.name: p for p in PROJECTS}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download(p: Project, quiet: bool = True) -> Path:
    if p.archive.is_file() and sha256(p.archive) == p.sha256:
        return p.archive
    DIST.mkdir(parents=True, exist_ok=True)
    binary = ("--no-binary", ":all:") if p.kind == "sdist" else ("--only-binary", ":all:")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *binary, *p.pip_args,
           "--dest", str(DIST), f"{p.dist}=={p.version}"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fetch: pip download of {p.dist}=={p.version} failed:\n{proc.stdout[-3000:]}")
    if not p.archive.is_file():
        got = sorted(x.name for x in DIST.iterdir())
        raise SystemExit(f"fetch: expected {p.filename} in {DIST}, found {got}")
    digest = sha256(p.archive)
    if digest != p.sha256:
        raise SystemExit(f"fetch: {p.filename}: sha256 {digest} does not match the pinned {p.sha256}")
    return p.archive


def _members(p: Project, names: Sequence[str]) -> List[Tuple[str, str]]:
    """(archive member, path relative to the project root) for the files to keep."""
    out = []
    for name in names:
        if name.endswith("/"):
            continue
        rel = name.split("/", 1)[1] if p.kind == "sdist" and "/" in name else name
        if p.kind == "wheel" and ".dist-info/" in name:
            continue
        if not rel.endswith(".py"):
            # Keep the packaging files that mark a project root, nothing else that is not Python.
            if not (p.kind == "sdist" and rel in ("pyproject.toml", "setup.py", "setup.cfg")):
                continue
        if p.include and not any(rel.startswith(i) or rel == i for i in p.include) and rel not in (
                "pyproject.toml", "setup.py", "setup.cfg"):
            continue
        if any(rel.startswith(e) for e in p.exclude):
            continue
        out.append((name, rel))
    return out


def _safe_target(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if root.resolve() not in target.parents:
        raise SystemExit(f"fetch: refusing archive member outside the project: {rel}")
    return target


def extract(p: Project, archive: Path) -> Path:
    if p.root.exists():
        shutil.rmtree(p.root)
    tmp = p.root.with_name(p.root.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if p.kind == "sdist":
        with tarfile.open(archive) as tf:
            by_name = {m.name: m for m in tf.getmembers() if m.isfile()}
            for name, rel in _members(p, list(by_name)):
                target = _safe_target(tmp, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(by_name[name])
                assert src is not None
                target.write_bytes(src.read())
    else:
        with zipfile.ZipFile(archive) as zf:
            for name, rel in _members(p, zf.namelist()):
                target = _safe_target(tmp, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(name))
    _init_git(tmp)
    tmp.rename(p.root)
    (p.root / ".amplint-bench").write_text(f"{p.dist}=={p.version} {p.sha256}\n")
    return p.root


def _init_git(d: Path) -> None:
    """An empty git repository: a project root marker and the top of .gitignore lookup."""
    if shutil.which("git"):
        r = subprocess.run(["git", "init", "-q", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            return
    (d / ".git").mkdir(exist_ok=True)


def is_fetched(p: Project) -> bool:
    stamp = p.root / ".amplint-bench"
    return stamp.is_file() and stamp.read_text().split()[:2] == [f"{p.dist}=={p.version}", p.sha256]


def ensure(p: Project, force: bool = False, log=print) -> Path:
    """The extracted project root, downloading and extracting it first when needed."""
    if not force and is_fetched(p):
        return p.root
    log(f"fetching {p.dist}=={p.version} ({p.kind}) ...")
    extract(p, download(p))
    n = sum(1 for _ in p.root.rglob("*.py"))
    log(f"  {p.root.relative_to(HERE.parent)}: {n} Python files")
    return p.root


def fetch_files(root: Path) -> List[Path]:
    """The Python files of an extracted project (what was extracted; amplint walks the same)."""
    return sorted(p for p in root.rglob("*.py") if ".git" not in p.relative_to(root).parts)


def select(names: Sequence[str]) -> List[Project]:
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown project(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    return [BY_NAME[n] for n in names] if names else list(PROJECTS)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("projects", nargs="*", help=f"subset of: {', '.join(BY_NAME)}")
    ap.add_argument("--force", action="store_true", help="download and extract again")
    ap.add_argument("--list", action="store_true", help="print the pinned projects and exit")
    args = ap.parse_args(argv)
    projects = select(args.projects)
    if args.list:
        for p in projects:
            print(f"{p.name:<13} {p.dist}=={p.version} ({p.kind}) sha256 {p.sha256}\n    {p.why}")
        return 0
    for p in projects:
        ensure(p, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
