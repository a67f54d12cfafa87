"""Project-wide facts: training entry points, the precision each file runs in, and constants
other modules import.

Pre-commit passes only the changed files, yet whether ``AdamW(eps=1e-8)`` is a hazard depends on
how the code that builds it is trained. So every Python file under the project root is read with
the stdlib ``ast`` (``precision_facts.file_facts``: evidence with roles, entry points, imports),
and the project's configuration files for settings (``config_evidence``). A training entry point's
precision is the training evidence in the files it imports (transitively) and in the configuration
files beside it; a file runs in the precision of the entry points that reach it
(``Project.regime_for``). See docs/precision.md.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .cache import ProjectCache, content_key, digest
from .context.evidence import DEEPSPEED_FP16, Evidence, Signal, ast_dotted
from .config_evidence import RUN_PRECISION
from .discovery import ROOT_MARKERS, TEST_PATH, Discovery, project_root
from .parsing import DEFAULT_LIMITS, Limits
from .project_index import Argument, CallSite, ProjectIndex, Symbol, _candidates
from .precision_facts import PRECISION_WORDS, TRAINING, TRAINING_WORDS, file_facts  # noqa: F401 (re-exported)
from .precision_facts import DEEPSPEED_OPTION, GENERIC_AMP_FLAGS, LAUNCHER_TRAINERS, LOSS_SCALER_CALL, NEVER_TRAINS, precision_call_signal, precision_call_values
from .precision_facts import DTYPE_LOOKUP, _INFERENCE_DIR, _INFERENCE_FILE
from .precision_facts import _SETTING_KEY
from .summary import FileSummary, summarise

REGIMES = ("auto", "fp16-mixed", "fp16", "fp16-master", "bf16", "fp32")


LIBRARY_SCOPE = "library code"
# a package's file that only example scripts without precision evidence reach (linformer-pytorch)
EXAMPLES_ONLY = "a package of the project, reached only by example scripts with no precision evidence"
# a package's file that only the package's own optimisation loops without precision evidence reach (kornia)
LIBRARY_LOOPS_ONLY = ("a package of the project, reached only by optimisation loops of the package itself (functions its "
                      "users call, not scripts) with no precision evidence")
# a project none of whose files trains (whisper: its --fp16 and .half() are its decoder's)
NOTHING_TRAINS = "nothing in the project trains (no backward, optimizer step or trainer)"
# a file no entry point's imports reach, judged by the precision the entry points agree on
UNREACHED = "not reached by an entry point's imports; the project's precision"
# such a file that is a program of its own (a notebook, a script run as ``__main__``)
UNREACHED_PROGRAM = "a program no entry point's imports reach; the project's precision"
ONLY_OTHER_PROGRAMS = "no training run imports it: a program that does not train, or imported only by such programs"
# a file that only modules nothing imports and that register nothing lead to, beside registry-built models (FunASR's
# legacy EEND model beside its `@tables.register`ed ones): no run builds it
NO_RUN_LOADS = ("no run loads it: it is imported only by modules that nothing imports and that register no class, beside "
                "models that register theirs for the runs to build")
# a Hugging Face hub port of a model (``modeling_*.py``) that nothing outside its directory imports (FlagAI's
# examples/AltCLIP/hf_altclip/): transformers loads it from a model repository in its users' programs
HUB_PORT = ("a Hugging Face hub port (a modeling_*.py nothing outside its directory imports, in a directory with no "
            "program): its users load it from the hub, none of the project's trainings runs it")
_WHO_REACHES = {HUB_PORT: "no training run imports (a Hugging Face hub port nothing in the project imports)",
                NOTHING_TRAINS: "nothing in the project trains: no training entry point reaches",
                NO_RUN_LOADS: "no run loads (imported only by unregistered modules nothing imports, beside registered models)",
                EXAMPLES_ONLY: "only example scripts with no precision evidence reach",
                ONLY_OTHER_PROGRAMS: "no training run imports (only programs that do not train run it)",
                LIBRARY_LOOPS_ONLY: "only the package's own optimisation loops with no precision evidence reach"}


def who_reaches(scope: str) -> str:
    """How library code was reached, for people: "no training entry point reaches" or why the
    entry points that reach it do not set its precision."""
    return next((words for marker, words in _WHO_REACHES.items() if marker in scope), "no training entry point reaches")
ANY_FP16_USE = "any float16 use of library code"
# a file no training run reaches, in a project whose own training runs say their precision (Amphion's
# unbuilt ForwardAttentionV2, physicsnemo's metrics beside its example trainings): run by none of them, so
# not judged in float16 and not looked at by the library policy (``Project._unreached_library``)
NOT_RUN = "not run by the project's trainings"
# library code of a project that refuses float16 tensors itself (theseus's `_CHECK_DTYPE_SUPPORTED`: "only supports
# 32- and 64-bit tensors"): its users cannot run it in float16, so it is neither judged in float16 nor given the library
# policy's look (``Project.refuses_half``)
REFUSES_FLOAT16 = "not run in float16: the project refuses float16 tensors"
LAUNCHED = "launched in fp16:"  # in an ANY_FP16_USE scope: the launcher decides the precision


@dataclass
class Regime:
    """The precision evidence behind some code, and what it adds up to.

    ``signals`` holds the training evidence of the entry points that reach the code (or of the
    whole project, see ``Project.regime_for``); the properties answer the questions rules ask.
    ``override`` is the configured ``precision`` when it is not "auto". ``scope`` says whose
    precision this is (for ``--show-settings`` and the summary line).

    ``origins`` (parallel to ``signals``, or empty) names the training entry points each signal
    came from: whether a half cast taken only in some runs has a mixed-precision alternative is a
    question about one run, so it is asked within the signals of the same entry point (pykoi's
    reward trainer loads its model in float16 unless ``cfg.bf16``; the project's other entry
    point trains another model with ``fp16=True``). Empty: all the signals are of one run.
    """
    signals: List[Tuple[Signal, Evidence]] = field(default_factory=list)
    override: Optional[str] = None
    scope: str = "project"
    entry_points: Tuple[str, ...] = ()
    origins: Tuple[Tuple[str, ...], ...] = ()

    def _first(self, pred) -> Optional[Evidence]:
        for sig, ev in self.signals:
            if pred(sig):
                return ev
        return None

    def _configured(self) -> Evidence:
        if self.any_fp16_use and LAUNCHED in self.scope:
            return Evidence("an fp16 launch (the launcher decides the precision, fp16 autocast included: judged as "
                            "under fp16 autocast, docs/precision.md)", "launcher", 0)
        if self.any_fp16_use:
            return Evidence("any float16 use of this library code (no training entry point reaches it: the library "
                            "policy judges it as under fp16 autocast, docs/precision.md)", "library policy", 0)
        return Evidence(f'precision = "{self.override}" in configuration', "config", 0)

    @property
    def library(self) -> bool:
        """Library code judged by the library policy: no training entry point reaches it, nothing
        says its precision and no ``assume-precision`` is set (``Project._library``)."""
        return not self.signals and self.override is None and self.scope.startswith(LIBRARY_SCOPE)

    @property
    def not_run(self) -> bool:
        """Code no training run of the project reaches, in a project whose own training runs say their
        precision (``Project._unreached_library``): not judged in float16, no library look."""
        return not self.signals and self.override is None and self.scope.startswith((NOT_RUN, REFUSES_FLOAT16))

    @property
    def any_fp16_use(self) -> bool:
        """The library policy's second look (``Regime.assuming_any_fp16_use``): library code
        judged as its users would run it in float16; only hazards under any float16 use count."""
        return self.scope.startswith(ANY_FP16_USE)

    @property
    def users_run_it(self) -> bool:
        """Code its users run, in the precision they pick: library code (the library policy) and its
        look under any float16 use (not a launcher's fp16 run of the project's own code): what the
        project's own uses of it say (a class it builds only to take parts of) is not all there is."""
        return self.library or self.any_fp16_use and LAUNCHED not in self.scope

    @property
    def backward_known(self) -> bool:
        """A backward pass is known to run through code judged under this regime: a training entry
        point reaches it, or a configured precision (``--precision``, ``assume-precision``) says how
        it trains. No for library code judged under any float16 use (inference is such a use), and
        for code no training entry point reaches, judged by the project's precision for want of its
        own (a frozen feature extractor a data-preparation script runs)."""
        if self.any_fp16_use:
            return False
        return self.override is not None or self.scope.startswith("entry point")

    def assuming_any_fp16_use(self, launched: bool = False) -> "Regime":
        """This library code as under fp16 autocast, the float16 use whose activations are float16
        only where they are float16 under every float16 use (pure half makes more of them float16,
        never fewer); parameters stay float32, so nothing is said about optimizers. ``launched``:
        code whose precision a launcher decides, looked at as under its fp16 run."""
        scope = f"{LAUNCHED} {self.scope}" if launched else self.scope
        return Regime([], "fp16-mixed", f"{ANY_FP16_USE} ({scope})", self.entry_points)

    @property
    def half_params(self) -> Optional[Evidence]:
        """The model itself is float16 (pure half, or a half model with fp32 master weights):
        activations and parameters seen by the forward pass are float16."""
        if self.override:
            return self._configured() if self.override in ("fp16", "fp16-master") else None
        if self.scope.startswith((UNREACHED, UNREACHED_PROGRAM)):
            # In a file no entry point reaches, a half model without a master copy (a `.half()` of the model an
            # entry point builds, a pretrained model it loads in float16) is that model, whose code the entry
            # point's imports reach, not this file's modules: their activations are judged as under mixed
            # precision (seamless' finetune.py loads UnitY with dtype=torch.float16; the PRETSSEL models beside it
            # never train there). A half model with float32 master weights is the project's way of training
            # what it builds at run time (fairseq's registry models under its FP16Optimizer): it stays. Whether
            # an optimizer module's parameters are half stays half_optimizer's question.
            return self._first_half(lambda s: s.master)
        return self._first_half(lambda s: True)

    def _first_half(self, pred) -> Optional[Evidence]:
        for i, (sig, ev) in enumerate(self.signals):
            if pred(sig) and self._pure_half(sig, i):
                return ev
        return None

    def _same_run(self, i: int, j: int) -> bool:
        if len(self.origins) != len(self.signals):
            return True
        return bool(set(self.origins[i]) & set(self.origins[j]))

    def _pure_half(self, s: Signal, i: int = -1) -> bool:
        """``s`` makes the parameters float16. A half cast taken only in some runs (``if precision ==
        "fp16": model.half()``, ``dtype = torch.float16 if ... else torch.bfloat16``) beside an fp16
        autocast or a GradScaler is one option of a script that trains in mixed precision (open_clip's
        ``--precision fp16`` next to its default ``amp``): the mixed-precision path is the one judged.
        A half option whose optimizer keeps float32 master weights is a training mode of its own, the
        one such a project is built for (fairseq's ``--fp16`` with its FP16Optimizer beside a later
        ``--amp``): it is judged, and its activations are float16 everywhere."""
        if not (s.pure and s.dtype == "float16" and s.enabled and s.note != "inference"):
            return False
        if s.master:
            return True
        return not (s.conditional and self._mixed_alternative(s, i))

    def _mixed_alternative(self, half: Signal, i: int = -1) -> bool:
        # (a frozen module's float16 copy, a flag naming its ``model``, follows the same dtype switch
        # as the half cast: no alternative to it)
        # (a flag read only into a DeepSpeed config is apex / fp16 inside DeepSpeed's run, not an
        # alternative to a half model stepped by the script's own optimizer: DALLE-pytorch's --amp)
        return any(o.kind in ("autocast", "grad_scaler", "flag") and not o.pure and o.dtype == "float16"
                   and not _same_option(half, o) and not (o.kind == "flag" and o.model)
                   and not (o.kind == "flag" and DEEPSPEED_OPTION in o.note) and not _same_switch(half, o)
                   and (i < 0 or self._same_run(i, j)) for j, (o, _) in enumerate(self.signals))

    @property
    def half_optimizer(self) -> Optional[Evidence]:
        """The optimizer steps float16 parameters (its eps and state are float16): pure half with
        no float32 master copy (DeepSpeed fp16, apex O2, FSDP's param_dtype keep one)."""
        if self.override:
            return self._configured() if self.override == "fp16" else None
        for i, (sig, ev) in enumerate(self.signals):
            if not sig.master and self._pure_half(sig, i) and (sig.conditional or not self._deepspeed_fp16_engine(i)):
                return ev
        return None

    def _deepspeed_fp16_engine(self, i: int) -> bool:
        """The run of signal ``i`` hands its model to a DeepSpeed fp16 engine (a config with ``"fp16":
        {"enabled": true}`` that no condition switches): the engine keeps float32 master weights of the
        model it is given, halved before or not (DeepKE's ``model.half()`` then ``deepspeed.initialize``).
        (A half cast under a condition may be the branch that runs without DeepSpeed: DALLE-pytorch's
        ``if not using_deepspeed: if args.fp16: dalle = dalle.half()`` steps torch's Adam; the caller
        asks only for unconditional casts.)"""
        return any(o.kind == "flag" and o.master and o.enabled and not o.conditional and o.dtype == "float16"
                   and o.note.startswith(DEEPSPEED_FP16) and self._same_run(i, j)
                   for j, (o, _) in enumerate(self.signals))

    def _in_some_run_of(self, model: Optional[str]) -> Optional[Evidence]:
        """``half_optimizer_in_some_run`` for an optimizer over ``model``'s parameters: a half cast taken only in
        some runs counts when it casts that very model (a probe's new head beside the converted backbone, open_clip's
        genlip_attentive_probe.py, trains float32 parameters whatever the backbone's precision)."""
        found = self.half_optimizer
        if found is not None or self.override:
            return found
        if not model:
            return None
        for sig, ev in self.signals:
            if sig.model == model and self._half_in_some_run(sig):
                return ev
        return None

    @property
    def half_optimizer_in_some_run(self) -> Optional[Evidence]:
        """``half_optimizer``, or a half cast without master weights taken only in some runs beside a
        mixed-precision alternative (open_clip's ``--precision fp16``, ``model.to(dtype=torch.float16)``,
        beside its default ``amp``): the code is judged under mixed precision, but in the runs that take
        the cast the optimizer steps float16 parameters, so its eps is asked about (AMP101; triage T6-14)."""
        found = self.half_optimizer
        if found is not None or self.override:
            return found
        return next((ev for sig, ev in self.signals if self._half_in_some_run(sig)), None)

    @staticmethod
    def _half_in_some_run(sig: Signal) -> bool:
        # (not a cast taken only on old torch versions: mmcv's wrap_fp16_model, whose runs there kept float32
        # master weights in its optimizer hook)
        return sig.pure and sig.dtype == "float16" and sig.enabled and sig.note != "inference" and not sig.master \
            and sig.conditional and "version" not in sig.condition.lower()

    def half_optimizer_of(self, model: Optional[str], path: Optional[str] = None,
                          some_run: bool = False) -> Optional[Evidence]:
        """``half_optimizer`` for an optimizer over ``model``'s parameters built in the file shown as
        ``path``: when that file casts some objects to half and ``model`` is not one of them (a
        frozen ``vae.to(dtype=weight_dtype)`` beside ``AdamW(unet.parameters())``), the cast does
        not reach the optimizer's parameters. In a program of its own that no entry point reaches (judged
        by the project's precision), another file's half cast is of the models the entry points train,
        not of what this program's optimizer gets (llama-recipes' notebooks, each with its own loop,
        beside finetuning.py's ``use_fp16`` load)."""
        if self.override or not path:
            return self._in_some_run_of(model) if some_run else self.half_optimizer
        target = Path(path).resolve()
        if self.scope.startswith(UNREACHED_PROGRAM):
            keep = [i for i, (s, ev) in enumerate(self.signals)
                    if s.kind != "half_params" or Path(ev.path).resolve() == target]
            if len(keep) < len(self.signals):
                origins = tuple(self.origins[i] for i in keep) if len(self.origins) == len(self.signals) else ()
                return Regime([self.signals[i] for i in keep], origins=origins).half_optimizer_of(model, path, some_run)
        if not model:
            return self._in_some_run_of(model) if some_run else self.half_optimizer
        same = {ev.path: Path(ev.path).resolve() == target for _, ev in self.signals}
        here = [(s, ev) for s, ev in self.signals
                if same[ev.path] and s.kind == "half_params" and s.pure and not s.master and s.dtype == "float16"
                and s.enabled and s.model]
        if here and all(s.model != model for s, _ in here):
            keep = [i for i, (_, ev) in enumerate(self.signals) if not same[ev.path]]
            origins = tuple(self.origins[i] for i in keep) if len(self.origins) == len(self.signals) else ()
            rest = Regime([self.signals[i] for i in keep], origins=origins)
            return rest._in_some_run_of(model) if some_run else rest.half_optimizer
        return self._in_some_run_of(model) if some_run else self.half_optimizer

    @property
    def fp16(self) -> Optional[Evidence]:
        """Activations run in float16 somewhere: fp16 autocast, a GradScaler, a trainer flag or
        half parameters."""
        if self.override:
            return self._configured() if self.override in ("fp16", "fp16-mixed", "fp16-master") else None
        vestigial = self._scaler_beside_bf16_autocast()
        return self._first(lambda s: s.dtype == "float16" and s.enabled and s.note != "inference"
                           and not (vestigial and (s.kind == "grad_scaler" or _amp_switch(s))))

    @property
    def fp16_autocast(self) -> Optional[Evidence]:
        if self.override:
            return self._configured() if self.override == "fp16-mixed" else None
        vestigial = self._scaler_beside_bf16_autocast()
        found = self._first(lambda s: s.kind in ("autocast", "flag") and s.dtype == "float16" and not s.pure and s.enabled
                            and not (vestigial and _amp_switch(s)))
        # A GradScaler exists only for float16 autocast (loss scaling is pointless otherwise), so
        # it stands for the autocast when that is out of sight (timm builds its scaler in utils/).
        if found or vestigial:
            return found
        found = self._first(lambda s: s.kind == "grad_scaler" and s.enabled)
        if found is None and self.scope.startswith((UNREACHED, UNREACHED_PROGRAM)) and self.half_params is None:
            # a file no entry point reaches, beside a half model without master weights: judged as under fp16
            # mixed precision (``half_params``), float16 where autocast would make values float16
            half = self._first_half(lambda s: not s.master)
            if half is not None:
                return Evidence(f"{half.what} (another file's half model: code its imports do not reach is judged as "
                                f"under fp16 autocast)", half.path, half.line)
        return found

    def _scaler_beside_bf16_autocast(self) -> bool:
        """The autocast in sight is bfloat16 and none is float16: a GradScaler beside it is left over
        (harmless: nothing overflows to skip), not a float16 autocast out of sight. rf-detr's
        ``GradScaler(enabled=args.amp)`` next to ``autocast(**get_autocast_args(args))`` whose helper
        returns ``"dtype": torch.bfloat16``. A command line's ``--amp`` switches that autocast on; it
        says no dtype of its own (rf-detr's main.py, the launcher of its engine's loop)."""
        kinds = [(s.kind, s.dtype) for s, _ in self.signals if s.enabled and not s.pure and not _amp_switch(s)]
        return ("autocast", "bfloat16") in kinds and not any(
            k in ("autocast", "flag") and d == "float16" for k, d in kinds)

    @property
    def launcher(self) -> Optional[Evidence]:
        """The precision is the launcher's (``accelerate launch``, an accelerate config): fp32, fp16 or
        bf16 autocast. Only what fails under any CUDA autocast is judged by it."""
        if self.override:
            return None
        return self._first(lambda s: s.kind == "launcher")

    @property
    def grad_scaler(self) -> Optional[Evidence]:
        return self._first(lambda s: s.kind == "grad_scaler" and s.enabled)

    @property
    def bf16(self) -> Optional[Evidence]:
        if self.override:
            return self._configured() if self.override == "bf16" else None
        return self._first(lambda s: s.dtype == "bfloat16" and s.enabled)

    @property
    def mode(self) -> str:
        if self.override:
            return self.override
        if self.half_params:
            return "fp16" if self.half_optimizer else "fp16-master"
        if self.half_optimizer:
            return "fp16"  # a file no entry point reaches, beside a half model without master weights (half_params)
        if self.fp16:
            return "fp16-mixed"
        if self.bf16:
            return "bf16"
        return "fp32"


_EXAMPLE_DIR = re.compile(r"(?i)(^|/)(examples?|tutorials?|demos?|notebooks?|samples?)/")
# directories of programs, not of a package's API (``tools/train.py`` inside a package is a program)
_SCRIPT_DIR = re.compile(r"(?i)(^|/)(scripts?|tools|bin|cli|apps?|train(ing)?_scripts?|experiments?|recipes?)/")
_PROGRAM_FILE = re.compile(r"(^|/)(hubconf|setup)\.py$")  # torch.hub's entry module; a package's build script
# programs that run a model for inference: torch.hub's entry module, apps, demos, inference / evaluation scripts
_INFERENCE_PROGRAM = re.compile(r"(?i)(^|/)hubconf\.py$|(^|/)(apps?|demos?|gradio|streamlit)/|" + _INFERENCE_FILE.pattern[4:] +
                                "|" + _INFERENCE_DIR.pattern[4:])
# a directory holding a copy of a third-party library: named for vendoring, or (below the project's top
# package) for a training library whose hooks and runners are built by its users' configurations
# (ControlNet's annotator/uniformer/mmcv/: an inference annotator's copy of mmcv)
_VENDOR_DIRS = {"third_party", "thirdparty", "third-party", "3rdparty", "vendor", "vendored", "_vendor", "extern",
                "external", "externals"}
_VENDORED_LIBRARIES = {"mmcv", "mmengine", "mmdet", "mmdet3d", "mmseg", "mmpose", "mmocr", "mmaction", "mmcls",
                       "mmpretrain", "detectron2", "timm", "fairseq", "apex", "ignite", "deepspeed"}
_HALF_OPTION = {"fp16", "half", "float16"}
_MIXED_OPTION = {"amp", "mixed", "autocast", "precision"}


def _amp_switch(s: Signal) -> bool:
    """A command-line ``--amp`` / ``--use_amp`` flag: mixed precision on, in the dtype of the autocast it
    switches (float16 when none says otherwise)."""
    return s.kind == "flag" and bool(re.match(r"command line --(use[_-])?amp\b", s.note))


def _words(text: str) -> set:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _same_option(half: Signal, flag: Signal) -> bool:
    """``flag`` is the switch of the half cast ``half`` itself, not a mixed-precision alternative:
    a command-line or configuration flag named like the condition of the cast (``--fp16`` on the
    command line, ``fp16: true`` in a config, and ``if args.fp16: model.half()``)."""
    if flag.kind != "flag" or not half.condition:
        return False
    named = _words(flag.note)
    return bool(named & _HALF_OPTION & _words(half.condition)) and not named & _MIXED_OPTION


_CONDITION = re.compile(r"\b(?:if|elif)\s+(.+?)\s*(?:\)|$)")
_FLAG = re.compile(r"[A-Za-z_][\w.]*")
# a variable compared with a string (``precision == 'fp16'``): a switch as a flag is
_CHOICE = re.compile(r"([A-Za-z_][\w.]*)\s*==\s*(['\"])(\w+)\2")


def _conjuncts(condition: str) -> Tuple[set, bool]:
    """The flags a condition's text (``if a and b.c``, ``if precision == 'fp16'``) ands together, and
    whether that is all of it (no call, negation, other comparison or cut-off text among its parts)."""
    m = _CONDITION.search(condition or "")
    if not m:
        return set(), False
    parts = [p.strip() for p in m.group(1).split(" and ")]
    flags = {p for p in parts if _FLAG.fullmatch(p)}
    flags |= {f"{c.group(1)}=={c.group(3)}" for c in map(_CHOICE.fullmatch, parts) if c}
    return flags, len(flags) == len(parts)


def _same_switch(half: Signal, other: Signal) -> bool:
    """``other`` is on only in runs where the half cast is taken (every flag of the half cast's
    condition is one of those ``other``'s condition ands), so they are one option, not alternatives:
    llama-recipes' ``from_pretrained(torch_dtype=torch.float16 if cfg.use_fp16 else "auto")`` beside
    ``GradScaler() if cfg.use_fp16 else None`` and ``autocast(enabled=cfg.use_fp16)`` loads float16
    parameters for the same run that scales its loss (AdamW's eps on float16); so does its
    ``ShardedGradScaler() if use_fp16 and enable_fsdp``."""
    a, whole = _conjuncts(half.condition)
    b, _ = _conjuncts(other.condition)
    return bool(a) and whole and a <= b


def module_name_for(path: Path, root: Path) -> Optional[str]:
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    return module_from_relative(rel.as_posix())


def module_from_relative(rel: str) -> Optional[str]:
    """The module a file at ``rel`` (a path relative to the project root) defines."""
    parts = list(Path(rel).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if parts and parts[0] == "src":
        parts.pop(0)
    return ".".join(parts) if parts else None


def signals_of(facts: dict, display_path: str, roles=(TRAINING,),
               master_weights: bool = False) -> List[Tuple[Signal, Evidence]]:
    """The evidence of one file's facts (``precision_facts.file_facts``) with the given roles, as
    (Signal, Evidence) pairs. ``master_weights``: the project ships an optimizer that keeps float32
    master weights of a half model (``Project.master_optimizers``), so its half casts are of that kind."""
    out = []
    for s in facts["signals"]:
        if s["role"] not in roles:
            continue
        master = s["master"] or (master_weights and s["kind"] == "half_params" and s["dtype"] == "float16")
        sig = Signal(s["kind"], s["dtype"], s["enabled"], s["pure"], s["note"], master, s.get("model", ""),
                     bool(s.get("one_of")), s.get("one_of") or "")
        out.append((sig, Evidence(f"`{s['text']}`", display_path, s["line"])))
    return out


_HAND_OFF = ("fit", "train", "initialize", "prepare", "setup", "run")
# the note of an mmcv 1.x Python config's float16 setting (``fp16 = dict(loss_scale=512.)``)
MM_CONFIG_FP16 = ("mmcv config fp16: Fp16OptimizerHook (the models' auto_fp16 forwards under autocast, a GradScaler; "
                  "torch >= 1.6)")


def _hands_off(functions) -> bool:
    return any(w.rsplit(".", 1)[-1] in _HAND_OFF for e in functions for w in e["why"])


# ``precision == "float16"`` / ``cfg.precision == 'bf16'``: a branch on a run's precision setting
_PRECISION_TEST = re.compile(r"""\bprecision\s*==\s*["']([\w-]+)["']""")
_PRECISION_WORDS = {"fp16": "float16", "float16": "float16", "half": "float16", "16": "float16", "16-mixed": "float16",
                    "bf16": "bfloat16", "bfloat16": "bfloat16", "bf16-mixed": "bfloat16",
                    "fp32": "float32", "float32": "float32", "32": "float32", "full": "float32"}


def _branch_of_another_precision(sig: Signal, stated: set) -> bool:
    """Is ``sig`` (an autocast, a GradScaler, a cast) taken only when the run's ``precision`` setting names
    another dtype than the one its config states (``if precision == "float16":`` under ``precision: float32``)?"""
    if not sig.conditional or sig.note.endswith(RUN_PRECISION):
        return False
    tests = _PRECISION_TEST.findall(sig.condition)
    named = {_PRECISION_WORDS.get(t.lower()) for t in tests}
    return bool(tests) and None not in named and not named & stated


def _setting(expr: ast.AST, leaves: Dict[str, object]):
    """The value of the setting ``expr`` reads (``cfg.training.amp``, ``self.amp``, a local ``dtype``) in a Hydra
    config's ``leaves``: the leaf whose dotted path ends like the attribute chain after its root name
    (``training.amp``, else ``amp`` when one leaf ends so). ``_MISSING`` when the config does not say."""
    parts = _setting_parts(expr)
    if not parts or not parts[0]:
        return _MISSING
    if len(parts) > 1 and not _CONFIG_ROOT.fullmatch(parts[0]):
        return _MISSING  # ``device.type``: an object of the program, not a setting
    for start in range(1, len(parts) + 1) if len(parts) > 1 else (0,):
        tail = ".".join(parts[start:]) if len(parts) > 1 else parts[0]
        if not tail:
            break
        hits = [v for k, v in leaves.items() if k == tail or k.endswith("." + tail)]
        if len(hits) == 1 or hits and all(h == hits[0] for h in hits):
            return hits[0]
        if hits:
            return _MISSING
    return _MISSING


def _setting_parts(expr: ast.AST) -> List[str]:
    """The names a setting is read through: ``cfg.train.amp`` -> cfg, train, amp; a string key of a dict is one
    too (``self.cfg.hyperparams["precision"]`` -> self, cfg, hyperparams, precision). Empty for anything else."""
    if isinstance(expr, ast.Subscript):
        key = expr.slice.value if isinstance(expr.slice, ast.Index) else expr.slice  # (3.8's ast.Index)
        inner = _setting_parts(expr.value)
        return [*inner, key.value] if inner and isinstance(key, ast.Constant) and isinstance(key.value, str) else []
    return (ast_dotted(expr) or "").split(".") if ast_dotted(expr) else []


_MISSING = object()
# an attribute read in a condition (``args.fp16``, ``self.amp``): not a module constant's test
_ATTRIBUTE_READ = re.compile(r"[\w)\]]\.[A-Za-z_]")
# a setting read by a string key (``cfg["precision"]``, ``self.cfg.hyperparams['grad_scaler_enabled']``)
_KEYED_READ = re.compile(r"""\w\s*\[\s*["'][\w.-]+["']\s*\]""")
# the roots a setting is read through: the config object (``cfg.train.amp``, ``config.amp.enabled``, ``hparams``)
# or an attribute the program copied it to (``self.amp = cfg.amp``)
_CONFIG_ROOT = re.compile(r"(?i)self|c|h?params|hp|opts?|args|\w*(?:cfg|conf|config)\w*")


def _read_by_setting(sig: Signal) -> bool:
    """Is ``sig`` an autocast or GradScaler read through a setting the program's own settings may hold: one read by a
    string key (``self.cfg.hyperparams["precision"]``, T12-5), or an autocast whose dtype is looked up by a setting
    (``dtype=dtype_map[cfg.training.amp_precision]`` with the program's YAML saying ``amp_precision: bfloat16``,
    T15-4)?"""
    return sig.kind in ("autocast", "grad_scaler") and bool(
        _KEYED_READ.search(sig.condition + sig.note) or sig.kind == "autocast" and sig.note.startswith(DTYPE_LOOKUP))


# a setting read as an attribute of a config object (``self.config.use_amp``, ``cfg.train.amp``; not ``args.amp``)
_ATTRIBUTE_SETTING_READ = re.compile(r"(?i)\b\w*(?:cfg|conf|config|hparams?)\w*\.[A-Za-z_]\w*")


def _read_by_attribute_setting(sig: Signal) -> bool:
    """Is ``sig`` an autocast or GradScaler switched by a setting read as an attribute of a config object
    (``autocast(enabled=self.config.use_amp)``), which an attribute dict built from the settings dicts may hold
    (ZoeDepth's ``edict`` of ``{"use_amp": False, ...}``, T21-3)?"""
    return sig.kind in ("autocast", "grad_scaler") and sig.conditional and not _read_by_setting(sig) \
        and bool(_ATTRIBUTE_SETTING_READ.search(sig.condition))


def _option_truth(value, compare) -> Optional[bool]:
    """The truth of a constructor option's value, or of ``value <op> number`` (``compare``: [op, number]); None when
    the comparison cannot be made (``None > 0``)."""
    if not compare:
        return bool(value)
    import operator
    op = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq,
          "!=": operator.ne}.get(compare[0])
    try:
        return bool(op(value, compare[1])) if op is not None else None
    except TypeError:
        return None


def _not_read(roles: list, where: Dict[str, str]) -> list:
    """``roles`` (``--show-settings``' (role, evidence, why) rows) with the evidence in ``where`` marked
    "not read", for the reason ``where`` gives."""
    return [("not read", r[1], where[r[1]]) if r[1] in where else r for r in roles]


def _without(signals: list, roles: list, where: Dict[str, str]):
    """``signals`` less the evidence ``where`` names, and ``roles`` with it marked "not read" for ``where``'s reason."""
    if not where:
        return signals, roles
    return [(sig, ev) for sig, ev in signals if str(ev) not in where], _not_read(roles, where)


def _truth(condition: str, leaf) -> Optional[bool]:
    """Whether ``condition`` (``if `` optional) holds, three-valued: ``not`` / ``and`` / ``or`` combine what ``leaf``
    says of each other part (True, False, or None: not settled); None also when it does not parse."""
    text = condition[3:] if condition.startswith("if ") else condition
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None

    def truth(n: ast.AST) -> Optional[bool]:
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            t = truth(n.operand)
            return None if t is None else not t
        if isinstance(n, ast.BoolOp):
            values = [truth(v) for v in n.values]
            if isinstance(n.op, ast.And):
                return False if False in values else (True if all(v is True for v in values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)
        return leaf(n)

    return truth(node)


def _config_truth(condition: str, leaves: Dict[str, object]) -> Optional[bool]:
    """Whether ``condition`` (a signal's ``if self.amp`` / ``if dtype == "float16"``) holds under a Hydra program's
    config ``leaves``: None when it reads anything the config does not settle."""

    def leaf(n: ast.AST) -> Optional[bool]:
        if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)):
            v = _setting(n, leaves)
            return bool(v) if isinstance(v, (bool, int)) or v is None else None
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.left, (ast.Name, ast.Attribute, ast.Subscript)):
            op, right = n.ops[0], n.comparators[0]
            if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
                choices = [right.value]
            elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.List, ast.Tuple, ast.Set)) \
                    and all(isinstance(e, ast.Constant) for e in right.elts):
                # ``ShardedGradScaler(enabled=args.precision in ["fp16"])`` (LLaMA2-Accessory, T11-9)
                choices = [e.value for e in right.elts]
            elif isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) and isinstance(right, ast.Constant) \
                    and type(right.value) in (int, float):
                # ``autocast(enabled=cfg.fp16 > 0)`` (insightface, a numeric fp16 mode, T16-5)
                v = _setting(n.left, leaves)
                if type(v) not in (int, float):
                    return None
                return {ast.Gt: v > right.value, ast.GtE: v >= right.value, ast.Lt: v < right.value,
                        ast.LtE: v <= right.value}[type(op)]
            else:
                return None
            v = _setting(n.left, leaves)
            if v is _MISSING or isinstance(v, (dict, list)):
                return None
            same = str(v).lower() in {str(c).lower() for c in choices}
            return same if isinstance(op, (ast.Eq, ast.In)) else not same
        return None

    return _truth(condition, leaf)


def _settings_applied(leaves: Dict[str, object], signals, roles, source: str):
    """``signals`` and ``roles`` as the settings ``leaves`` (dotted key -> value) set them: an autocast or GradScaler
    switched by a setting they turn off is not read, and an autocast whose dtype is looked up by a setting's string
    (``dtype=getattr(torch, dtype)``) takes their dtype. ``source`` says where the settings are written."""
    where = {}
    kept = []
    for sig, ev in signals:
        if sig.kind in ("autocast", "grad_scaler") and sig.conditional and sig.condition \
                and _config_truth(sig.condition, leaves) is False:
            where[str(ev)] = f"switched off by {source} ({sig.condition})"
            continue
        lookup = sig.note[len(DTYPE_LOOKUP):].strip("`") if sig.kind == "autocast" and sig.note.startswith(DTYPE_LOOKUP) else ""
        if lookup:
            try:
                value = _setting(ast.parse(lookup, mode="eval").body, leaves)
            except SyntaxError:
                value = _MISSING
            dtype = _PRECISION_WORDS.get(str(value).lower()) if isinstance(value, str) else None
            if dtype is not None and dtype != sig.dtype:
                sig = dataclasses.replace(sig, dtype=dtype, enabled=sig.enabled and dtype != "float32")
        kept.append((sig, ev))
    off_files = {ev.path for sig, ev in signals if str(ev) in where and sig.kind == "autocast"}
    if off_files and not any(sig.kind in ("autocast", "half_params") and sig.enabled and sig.dtype == "float16"
                             for sig, _ in kept):
        # vortex_shedding_mgn: `self.scaler = GradScaler()` beside `autocast(enabled=self.amp)` and `amp: False`,
        # scaling only `if self.amp:`: with no float16 autocast or half cast left, its scaler scales nothing
        for sig, ev in kept:
            if sig.kind == "grad_scaler" and not sig.conditional and ev.path in off_files:
                where[str(ev)] = f"a GradScaler beside the autocast that {source} switches off"
        kept = [(sig, ev) for sig, ev in kept if str(ev) not in where]
    if where:
        roles = _not_read(roles, where)
    return kept, roles


# a Hydra / OmegaConf command-line override: ``use_AMP=True``, ``+trainer.amp=true``, ``++optim.lr='1e-4'``
_HYDRA_OVERRIDE = re.compile(r"""(?<![\w.=/-])(\+{0,2})([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)=("[^"]*"|'[^']*'|[^\s"';|&]+)""")


# a program's own command-line precision option (``precision_facts._cli_signal``): ``command line --fp16 (one of)``
_CLI_SWITCH = re.compile(r"command line (--[\w-]+)")


def _unread_cli_switches(signals: List[Tuple[Signal, "Evidence"]], roles: List[Tuple[str, str, str]],
                         functions: List[dict]):
    """``signals`` and ``roles`` less a program's own command-line precision switch (``add_argument("--fp16",
    action="store_true")``) and the launcher flags passing it, where nothing the program runs has float16 code for the
    switch to turn on: a loop of its own (no trainer it hands the model to) whose run holds no other evidence of a
    half precision, no autocast, GradScaler, half cast, apex or framework setting (vilbert-multi-task's
    train_tasks.py: its ``--fp16`` only shortens the LR warm-up, the model trains in float32 either way; T19-4).
    A switch is float16 evidence where what it switches is."""
    if _hands_off(functions):
        return signals, roles
    cli = {(sig, ev): m.group(1) for sig, ev in signals
           if sig.kind == "flag" and (m := _CLI_SWITCH.match(sig.note)) is not None}
    if not cli:
        return signals, roles
    names = set(cli.values())
    passing = {(sig, ev) for sig, ev in signals if sig.kind == "flag" and ev.path.endswith((".sh", ".md"))
               and sig.note.split()[0] in names}
    if any(sig.dtype in ("float16", "bfloat16") or sig.kind in ("autocast", "grad_scaler", "launcher")
           for sig, ev in signals if (sig, ev) not in cli and (sig, ev) not in passing):
        return signals, roles
    where = {str(ev): f"the command-line switch {cli.get((sig, ev), sig.note.split()[0])} turns on no float16 code: "
                      f"this program's own loop has no autocast, GradScaler, half cast or trainer it could switch"
             for sig, ev in signals if (sig, ev) in cli or (sig, ev) in passing}
    return _without(signals, roles, where)


def _unread_amp_switches(signals: List[Tuple[Signal, "Evidence"]], roles: List[Tuple[str, str, str]],
                         from_files: List[Tuple[Signal, "Evidence"]], functions: List[dict]):
    """``signals`` and ``roles`` less a configuration file's autocast switch (``SOLVER.AMP.ENABLED: True``,
    ``amp: true``, ``fp16: true``) that nothing in the entry point's run reads: a loop of its own (backward
    and an optimizer step, no trainer it hands the model to) whose code holds no evidence of a half
    precision at all, no autocast or GradScaler the switch could turn on (fast-reid's
    ``tools/plain_train_net.py``, beside the ``DefaultTrainer`` whose AMP trainer reads the Base configs'
    ``SOLVER.AMP.ENABLED``). Asked of a program (a ``__main__`` script) that is no launcher. A trainer reads such settings itself (the Hugging Face Trainer's ``fp16``,
    detectron2's ``DefaultTrainer``, Lightning's ``Trainer`` its ``precision: 16``, accelerate's ``Accelerator`` its
    ``mixed_precision: fp16``), so a hand-off keeps them; so does a launcher script's flag, which names the program
    it runs. (safari's ``standalone_cifar.py``, a plain loop beside the Hydra ``trainer.precision: 16`` configs
    that only ``train.py``'s ``pl.Trainer`` reads, trains in float32.)"""
    switches = [(sig, ev) for sig, ev in from_files
                if sig.kind == "flag" and not sig.pure and not sig.master and sig.dtype in ("float16", "bfloat16")
                and not sig.note.endswith(RUN_PRECISION)]
    if not switches or _hands_off(functions):
        return signals, roles
    config = set(from_files)
    if any(sig.dtype in ("float16", "bfloat16") or sig.kind in ("autocast", "grad_scaler", "launcher")
           for sig, ev in signals if (sig, ev) not in config):
        return signals, roles
    dropped = {str(ev) for _, ev in switches}
    kept = [(sig, ev) for sig, ev in signals if (sig, ev) not in set(switches)]
    roles = [("not read", where, "a configuration's autocast switch; this entry point's own loop has no autocast, "
              "GradScaler or trainer that reads it") if role == "training" and why == "configuration" and where in dropped
             else (role, where, why) for role, where, why in roles]
    return kept, roles


def _seen_from(facts: dict, own: bool, runs_its_loop: bool = False) -> dict:
    """``facts`` as an entry point that imports the file sees them: evidence inside a function of
    that file which hands a model to a trainer (a Lightning module's ``cli_main`` with
    ``Trainer(precision=16).fit(...)``) sets the precision of that script's own run, not of every
    script that imports the module for its classes, unless the entry point is the program that runs
    that function (``runs_its_loop``: gpt-neox's train.py runs megatron/training.py's ``pretrain``,
    which builds the DeepSpeed config and engine)."""
    if own:
        return facts
    mains = {e["function"] for e in facts.get("entry_points", ()) if _hands_off([e])} if not runs_its_loop else set()
    if any(s.get("main") for s in facts["signals"]):
        # an ``if __name__ == "__main__":`` block runs when the file is the program, not on import
        facts = {**facts, "signals": [s for s in facts["signals"] if not s.get("main")]}
    if not mains:
        return facts
    return {**facts, "signals": [s for s in facts["signals"] if s.get("function") not in mains],
            "precision_calls": [c for c in facts.get("precision_calls", ()) if c.get("function") not in mains]}


def _called_from(facts: dict, path: Path, reached: "_Reached", reach: set = frozenset()) -> dict:
    """``facts`` of a file an entry point imports, less the evidence inside functions that the entry
    point's code never calls (the project's call graph): a helper module's ``build_half_model()``
    used by another script of a monorepo is not this script's precision. Module-level evidence runs
    on import and stays; so does evidence in a function the call graph does not know, and an FSDP mixed-precision
    policy built in a method that a file of ``reach`` calls on an object the call graph does not follow."""
    kept = [s for s in facts["signals"] if not s.get("function") or reached.holds(path, s["function"])
            or s["note"].startswith(_FSDP_POLICY) and reached.calls_method(path, s["function"], reach)]
    return facts if len(kept) == len(facts["signals"]) else {**facts, "signals": kept}


# an FSDP mixed-precision policy (``MixedPrecision`` / FSDP2's ``MixedPrecisionPolicy``, precision_facts._extra_signal)
_FSDP_POLICY = "FSDP MixedPrecision"


# the DeepSpeed config a command line hands the Hugging Face trainer (``--deepspeed ds_zero3_config.json``)
_DEEPSPEED_CONFIG_OPTION = re.compile(r"(?<![\w-])--deepspeed(?:[_-]config)?(?:=|[ \t]+)[\"']?([^\s\"']+\.json)\b")


def _auto_blocks_follow_flags(signals: List[Tuple[Signal, Evidence]]) -> List[Tuple[Signal, Evidence]]:
    """A DeepSpeed block ``"fp16": {"enabled": "auto"}`` takes its value from the trainer's flags
    (Hugging Face's integration): where the run states a trainer flag (``--bf16 True`` in the script
    that launches it, ``TrainingArguments(bf16=True)``), the auto blocks of the other dtype are not
    enabled (InternVL: fp16 and bf16 both "auto", every launcher passes ``--bf16 True``: bf16, not
    fp16 master weights). With no stated flag both stay (float16 first)."""
    auto = [(sig, ev) for sig, ev in signals if sig.kind == "flag" and '"enabled": "auto"' in sig.note]
    stated = {sig.dtype for sig, ev in signals if sig.kind == "flag" and sig.enabled and not sig.conditional
              and '"auto"' not in sig.note and sig.dtype in ("float16", "bfloat16")}
    if not auto or not stated:
        return signals
    return [(sig, ev) for sig, ev in signals if (sig, ev) not in auto or sig.dtype in stated]


def _deepspeed_masters(signals: List[Tuple[Signal, Evidence]]) -> List[Tuple[Signal, Evidence]]:
    """``signals`` with the half loads of a run that DeepSpeed's fp16 engine trains marked as keeping float32
    master weights: its optimizer is DeepSpeed's, which keeps them whatever dtype the model was loaded in
    (Chinese-LLaMA-Alpaca's run_pt.sh: ``--deepspeed ds_zero2_no_offload.json --fp16 --torch_dtype float16``)."""
    if not any(sig.kind == "flag" and sig.master and sig.dtype == "float16" and sig.note.startswith('DeepSpeed "')
               and not sig.conditional and ev.path.endswith((".json", ".yaml", ".yml")) for sig, ev in signals):
        return signals
    # (a half cast taken only in some runs may be those without DeepSpeed: DALLE-pytorch's ``if not using_deepspeed:
    # if args.fp16: dalle.half()``)
    # A cast switched by the trainer's fp16 flag alone is taken in DeepSpeed's fp16 runs: an "auto" block follows
    # that flag, and Hugging Face refuses a config whose fp16 block disagrees with it (MiniCPM-V's finetune.py:
    # `compute_dtype = torch.float16 if training_args.fp16 else ...`, launched with `--fp16 true --deepspeed
    # ds_config_zero2.json`; T11-1)
    kept = "DeepSpeed's fp16 optimizer keeps float32 master weights"
    return [(dataclasses.replace(sig, master=True, note="; ".join(x for x in (sig.note, kept) if x)), ev)
            if sig.kind == "half_params" and sig.dtype == "float16" and not sig.master
            and (not sig.conditional or _fp16_switch_only(sig))
            else (sig, ev) for sig, ev in signals]


_HALF_WHEN = re.compile(r"\(float16 if (.+)\)$")


def _fp16_switch_only(half: Signal) -> bool:
    """The half cast ``half`` is taken when a flag named for float16 is on, and on nothing else: ``if args.fp16:
    model.half()``, ``torch.float16 if training_args.fp16 else ...`` (not ``if args.fp16 and not
    using_deepspeed``, nor a dtype compared with a string)."""
    m = _HALF_WHEN.search(half.condition or "")
    flags, whole = _conjuncts(f"if {m.group(1)}" if m else half.condition)
    return bool(flags) and whole and all(
        "==" not in f and _words(f.rsplit(".", 1)[-1]) & _HALF_OPTION and "deepspeed" not in f.lower() for f in flags)


def _without_other_loops_options(facts: dict) -> dict:
    """``facts`` of a file an entry point reaches, less the autocast / GradScaler options (``if use_amp:``)
    of that file's own training loops, for an entry point that hands its model to a trainer with a
    precision stated in its own code: sentence-transformers' ``CrossEncoderTrainingArguments(fp16=False,
    bf16=True)`` runs the Trainer in bf16, not the deprecated ``old_fit`` loop of the model class and its
    ``use_amp`` autocast."""
    loops = {e["function"] for e in facts.get("entry_points", ())}
    kept = [s for s in facts["signals"] if not (s.get("function") in loops and s.get("one_of")
                                                and s["kind"] in ("autocast", "grad_scaler"))]
    return facts if len(kept) == len(facts["signals"]) else {**facts, "signals": kept}


def scan_source(source: bytes, display_path: str, module_name: Optional[str] = None) -> List[Tuple[Signal, Evidence]]:
    """Training precision evidence in one file's source."""
    return signals_of(file_facts(source, display_path, module_name), display_path)


@dataclass
class EntryPoint:
    """A file holding training entry points (functions running backward / an optimizer step, or
    handing a model to a trainer), what it reaches, and its training evidence."""
    path: Path
    display: str
    functions: List[dict]
    reach: set
    signals: List[Tuple[Signal, Evidence]]
    roles: List[Tuple[str, str, str]]  # (role, evidence, why) of every piece of evidence it reaches
    script: bool = False  # its file runs as a program (``if __name__ == "__main__":``)

    def name(self) -> str:
        first = self.functions[0]
        return f"{self.display}:{first['line']} ({first['function']})"


def regime_data(regime: Regime) -> dict:
    return {"signals": [[sig.kind, sig.dtype, sig.enabled, sig.pure, sig.note, sig.master, ev.what, ev.path, ev.line, sig.model,
                         sig.conditional, sig.condition]
                        for sig, ev in regime.signals],
            "override": regime.override, "scope": regime.scope, "entry_points": list(regime.entry_points),
            "origins": [list(o) for o in regime.origins]}


def regime_from(data) -> Optional[Regime]:
    """The regime in ``data`` (from the cache), or None when it is not one."""
    try:
        signals = []
        for kind, dtype, enabled, pure, note, master, what, path, line, model, conditional, condition in data["signals"]:
            if not (all(isinstance(x, str) for x in (kind, dtype, note, what, path, model, condition))
                    and all(isinstance(x, bool) for x in (enabled, pure, master, conditional)) and isinstance(line, int)):
                return None
            signals.append((Signal(kind, dtype, enabled, pure, note, master, model, conditional, condition),
                            Evidence(what, path, line)))
        override, scope, eps, origins = data["override"], data["scope"], data["entry_points"], data["origins"]
        if not (isinstance(override, (str, type(None))) and isinstance(scope, str)
                and all(isinstance(e, str) for e in eps)
                and all(isinstance(o, list) and all(isinstance(e, str) for e in o) for o in origins)):
            return None
        return Regime(signals, override, scope, tuple(eps), tuple(tuple(o) for o in origins))
    except (KeyError, TypeError, ValueError):
        return None


class Project:
    """One project root: its files' summaries (precision facts, constants; read from the cache when
    unchanged), its training entry points and the precision each file runs in (computed once).

    Other files are known only through their summaries: a run reads the stat of every file of the
    project, and reads and summarises only the files that changed since the cache last saw them.
    ``cache`` is None for a run without one (``--no-cache``, the API, the tests)."""

    def __init__(self, root: Path, discovery: Optional[Discovery] = None, override: Optional[str] = None,
                 display_base: Optional[Path] = None, cache: Optional[ProjectCache] = None,
                 overlay: Optional[Dict[Path, bytes]] = None, assume: Optional[str] = None,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self.root = root.resolve()
        self.limits = limits  # a file over them is never parsed for facts (amplint.parsing)
        self._root_prefix = str(self.root).rstrip(os.sep) + os.sep
        self._rels: Optional[Dict[Path, str]] = None
        self._displays: Dict[Path, str] = {}
        self._recording: Optional[list] = None
        self._fingerprint: Optional[str] = None
        self._facts_fingerprint: Optional[str] = None
        self._digests: Dict[Path, str] = {}
        self._declarations: Optional[str] = None
        self._resolved: Dict[Path, Path] = {}
        self._summaries: Dict[Path, FileSummary] = {}
        self._keys: Dict[Path, str] = {}
        self.cache = cache
        self._overlay = overlay or {}  # resolved path -> contents that stand in for the file on disk
        # the precision assumed for library code (``assume-precision``); None: the library policy
        self.assume = assume if assume and assume != "auto" else None
        self.discovery = discovery or Discovery()
        self._override = override if override and override != "auto" else None
        self._regime: Optional[Regime] = None
        self._modules: Optional[Dict[str, Path]] = None
        self._files: Optional[List[Path]] = None
        self._configs: Optional[List[Path]] = None
        self._facts: Optional[Dict[Path, dict]] = None
        self._entry_points: Optional[List[EntryPoint]] = None
        self._regimes: Dict[Path, Regime] = {}
        self._anywhere: Optional[Regime] = None
        self._index: Optional[ProjectIndex] = None
        self._reached: Dict[Path, "_Reached"] = {}
        self._runs_of: Dict[Path, list] = {}
        self._vendored_hooks: Dict[Path, bool] = {}
        self._memos: Dict[str, dict] = {}
        self.display_base = display_base

    # The facts rules read of the project, recorded while a file is analysed so that its cached
    # result is reused only while they are the same (amplint.results): name -> kinds of the arguments.
    RECORDED = {"regime": (), "evidence_anywhere": (), "regime_for": ("path",), "constant": ("str",),
                "callers": ("str",), "calls_named": ("str",), "subclasses": ("str",), "looked_into": ("path",),
                "imported": ("str",), "named_in_configs": ("str", "path"), "imported_by_name_only": ("str",), "imported_by_name_or_star": ("str",),
                "whole_imports": ("str",), "config_leaves_off": ("str", "str"), "ships": ("path",)}

    def start_recording(self) -> None:
        self._recording = []

    def stop_recording(self) -> list:
        deps, self._recording = self._recording or [], None
        return deps

    def note_fact(self, name: str, args, value) -> None:
        if getattr(self, "_recording", None) is not None:
            from .results import fact_digest
            entry = [name, [str(a) for a in args], fact_digest(value)]
            if entry not in self._recording:
                self._recording.append(entry)

    def fingerprint(self) -> str:
        """Changes whenever any project fact may: every Python file's content key, and the files
        declaring the project (see ``declarations``)."""
        if self._fingerprint is None:
            from .cache import digest
            keys = sorted((self.relative(f), self.content_key(f) or "") for f in self.files())
            self._fingerprint = digest(repr(keys), self.declarations())
        return self._fingerprint

    def facts_fingerprint(self) -> str:
        """Changes whenever a fact derived from the files' summaries may: every file's path and
        summary digest (from the cache's index when its stat is unchanged: no summary is read), and
        the declarations. An edit that changes no summary (a function's body, a comment) leaves it
        as it was, so the entry points and regimes cached under it still hold."""
        if self._facts_fingerprint is None:
            from .cache import digest
            parts = sorted((self.relative(f), self.summary_digest(f)) for f in self.files())
            self._facts_fingerprint = digest(repr(parts), self.declarations())
        return self._facts_fingerprint

    def summary_digest(self, path: Path) -> str:
        found = self._digests.get(path)
        if found is None:
            if self.cache is not None and not self._overlay:
                try:
                    found = self.cache.known_digest(self.relative(path), os.stat(path))
                except OSError:
                    found = None
            if found is None:
                from .cache import summary_digest
                found = summary_digest(self.summary(path).to_data())
            self._digests[path] = found
        return found

    def declarations(self) -> str:
        """A digest of the project's non-Python files that facts are read from: packaging and
        requirements (the supported torch versions) and configuration files (precision evidence)."""
        if self._declarations is None:
            from .cache import digest
            files = [self.root / n for n in ("pyproject.toml", "setup.cfg")]
            from .context.requirements import install_files, requirement_files, sub_declaration_files
            files += requirement_files(self.root)
            files += [f for f in install_files(self.root) if f not in files]
            # the sub-projects' own requirement lists / conda environments (a torch pin for the files below them)
            dirs = set()
            for f in self.files():
                d = f.parent
                while d != self.root and self.root in d.parents and d not in dirs:
                    dirs.add(d)
                    d = d.parent
            for d in sorted(dirs):
                files += sub_declaration_files(d)
            files += self.config_files()
            # README files: an external trainer's command line (``unicore-train --user-dir ./pkg --fp16``)
            files += sorted(self.root.glob("README*.md")) + sorted(self.root.glob("*/README*.md"))
            parts = []
            for f in files:
                try:
                    parts.append((str(f), f.read_bytes()))
                except OSError:
                    parts.append((str(f), b""))
            self._declarations = digest(repr(parts))
        return self._declarations

    # Memos of questions a file's analysis asks of the project and of other files, each worked out
    # once per run and worker process (name -> what it holds, who fills it). Keyed by name so that
    # one project object holds them all; an OverlayProject (an editor's buffer) holds its own.
    MEMOS = {
        "caller_contexts": "other files' FileContexts, least recently used dropped (engine.project_context)",
        "linted_trees": "the trees of the files linted last, for the next files' questions (engine)",
        "grep_lines": "pattern -> the project's lines that match it (context.project_text)",
        "torch_floor": "the lowest torch version the project supports, and each sub-directory's own pin (context.requirements)",
        "runs_master": "frozenset(an entry point's files) -> whether they use a master-weights optimizer (Project._runs_master)",
        "heard_elsewhere": "what other files' calls pass to a helper's parameter (context.precision)",
        "project_passed": "the calls of a helper in other files and what they pass (context.callers.project_passed_once)",
        "engine_methods": "the project's methods that run a GradScaler for their caller (context.training)",
        "config_selections": "configuration file (as shown) -> the registered class names it selects (regime_for)",
        "programs_below": "top directory -> whether it holds a program of its own (regime_for)",
        "importers": "project file -> the project files that import it (Project._imported_by_none_outside)",
        "shell_runs": "the shell scripts naming programs, with the dtype options they pass (Project._shell_runs_of)",
        "config_options": "option -> (YAML file, value, where) of each setting of that name (Project._config_option_values)",
        "fallback_classes": "the project classes imported only as a library's fallback (Project.fallback_classes)",
        "config_texts": "the text of each configuration file (named_in_configs)",
        "named_in_configs": "word -> whether a configuration file names it (named_in_configs)",
        "loaded_by_no_run": "the files only unregistered modules nothing imports lead to, beside registered models (regime_for)",
        "config_targets": "YAML configuration file -> the dotted names of its `target:` keys (_add_config_target_edges)",
        "config_dotted_pairs": "consecutive parts of the dotted names in configuration files (_loaded_by_no_run)",
        "package_loops_f16": "the package loops holding all the project's float16 evidence, or none (regime_for)",
        "own_runs": "the project's own training runs that say their precision (Project.own_runs_saying_precision)",
        "refuses_half": "where the project refuses every dtype but float32 / float64, or None (Project.refuses_half)",
        "library_loops": "entry point file -> whether it is a package file no script runs (Project._library_loop)",
        "directories_above": "path -> set(path.parents) (Project._nearest_entry_points)",
    }
    # parsed trees (and calls in them): cheaper to parse again than to pickle
    _HEAVY_MEMOS = ("caller_contexts", "linted_trees", "project_passed")

    def memo(self, name: str) -> dict:
        """This project's memo ``name`` (one of ``MEMOS``), empty at first."""
        if name not in self.MEMOS:
            raise KeyError(f"undeclared project memo {name!r}")
        return self._memos.setdefault(name, {})

    def __getstate__(self):
        state = dict(self.__dict__)
        state["cache"] = None  # worker processes read the summaries computed here; the parent writes
        state["_memos"] = {k: v for k, v in self._memos.items() if k not in self._HEAVY_MEMOS}
        return state

    def files(self) -> List[Path]:
        """The project's Python files: what discovery would lint under the root, less nested
        projects (a directory with its own pyproject.toml, setup.py, setup.cfg or .git is a project
        of its own, with its own regime). Walked once per Project."""
        if self._files is None:
            self._walk_once()
        return list(self._files)

    def config_files(self) -> List[Path]:
        """The project's JSON / YAML / TOML / shell files that may hold precision settings."""
        if self._configs is None:
            self._walk_once()
        return list(self._configs)

    def _walk_once(self) -> None:
        """The Python files and the configuration files, from one walk of the tree (every run
        needs both: the configuration files are among the declarations)."""
        from .config_evidence import CONFIG_SUFFIXES, launcher_doc
        python, configs = [], []
        top = self._root_prefix
        for f in self.discovery.walk(self.root, self.root, stop_at_projects=True, suffixes=(".py", *CONFIG_SUFFIXES)):
            if f.name.endswith(".py"):
                python.append(f)
            elif f.suffix != ".md" or launcher_doc(str(f)[len(top):].replace(os.sep, "/") if str(f).startswith(top)
                                                   else f.name):
                configs.append(f)
        if self._files is None:
            self._files = python
        if self._configs is None:
            self._configs = configs

    def prepare(self) -> "Project":
        """Compute the facts every file needs (file list, regimes, module paths) now: the runner
        does this in the parent process before handing the project to worker processes."""
        self.summaries()
        self.regime
        for f in self.files():
            self.regime_for(f)
        self.evidence_anywhere  # else each worker derives it again, and none caches it
        self._module_paths()
        return self

    def display(self, path: Path) -> str:
        found = self._displays.get(path)
        if found is None:
            base = self.display_base or Path.cwd()
            try:
                found = self.resolved(path).relative_to(base.resolve()).as_posix()
            except ValueError:
                found = path.as_posix()
            self._displays[path] = found
        return found

    def resolved(self, path: Path) -> Path:
        """``path.resolve()``, without the system calls for a file discovery found under the root
        that is not itself a link (its directories are real: see ``_relative_or_none``)."""
        found = self._resolved.get(path)
        if found is None:
            self._relative_or_none(path)
            found = path if path in self._rels and not os.path.islink(path) else Path(path).resolve()
            self._resolved[path] = found
        return found

    def is_test(self, path: Path) -> bool:
        return bool(TEST_PATH.search(self.relative(path)))

    def facts(self) -> Dict[Path, dict]:
        """Every file's precision facts (``precision_facts.file_facts``), by resolved path."""
        if self._facts is None:
            self._facts = {}
            for f in self.files():
                facts = self.summary(f).facts
                if facts is not None:
                    self._facts[self.resolved(f)] = facts
            for path, facts in list(self._facts.items()):
                if any(s.get("default_of") for s in facts.get("signals", ())):
                    self._facts[path] = self._with_field_defaults(facts)
            if any(f.get("peft_classes") for f in self._facts.values()):
                for path, facts in list(self._facts.items()):
                    if any(s.get("passed_on") for s in facts.get("signals", ())):
                        self._facts[path] = self._with_peft_wrapped(path, facts)
        return self._facts

    def _with_peft_wrapped(self, path: Path, facts: dict) -> dict:
        """``facts`` with each float16 load or cast that its function then hands to a project class whose ``__init__``
        wraps it with PEFT (``precision_facts._peft_classes``: xtuner's ``build_lora_model``, ``llm =
        from_pretrained(..., torch_dtype=torch.float16)`` then ``SupervisedFinetune(llm, lora=lora_config)``, whose
        ``_prepare_for_lora`` runs ``prepare_model_for_kbit_training`` and ``get_peft_model``) read as the same calls
        written inline are: a frozen base whose adapters train in float32, not a half model the optimizer steps
        (T11-6). Only where the call passes the model for a parameter the wrapped attribute is built from and a
        value other than None for each parameter the wrap is switched by (``SupervisedFinetune(llm)`` fine-tunes the
        whole half model)."""
        index, out, changed = self.index, [], False
        fns = [x for x in index.symbols_in(path) if x.kind == "function"]
        for s in facts["signals"]:
            wrapper = self._peft_wrapper(s, fns) if s.get("passed_on") and s["role"] == TRAINING else None
            if wrapper is None:
                out.append(s)
                continue
            changed = True
            if s["passed_on"] == "literal":
                out.append({**s, "role": "inference", "why": f"`{s['model']}` is handed to PEFT by {wrapper} (a "
                                                             f"frozen base, always float16): its own dtype, not the "
                                                             f"trained model's"})
            else:
                out.append({**s, "kind": "flag", "pure": False, "master": False,
                            "note": f"`{s['model']}` is handed to PEFT by {wrapper} and cast to float16: the "
                                    f"trained model runs in fp16 mixed precision"})
        return {**facts, "signals": out} if changed else facts

    def _peft_wrapper(self, s: dict, fns: list) -> Optional[str]:
        """The project class (`` `Class` (file)``) that the function holding the half cast ``s`` hands its model to, whose
        ``__init__`` wraps it with PEFT in that call; None if none does."""
        index = self.index
        for fn in fns:
            if fn.qualname.rsplit(".", 1)[-1] != s.get("function"):
                continue
            for site in index.calls_from(fn.name):
                if site.line <= s["line"]:
                    continue
                cls = index.resolve(site.callee, fn.module)
                if cls is None or cls.kind != "class":
                    continue
                spec = self._facts.get(cls.path, {}).get("peft_classes", {}).get(cls.qualname)
                init = index.symbol(f"{cls.name}.__init__")
                if not spec or init is None:
                    continue
                if not any(arg is not None and arg.kind == "name" and arg.text == s["model"]
                           for arg in (site.argument_for(init, p)[1] for p in spec["params"])):
                    continue
                passed = [site.argument_for(init, w) for w in spec["when"]]
                if all(known and arg is not None and arg.text != "None" for known, arg in passed):
                    return f"`{cls.qualname}` ({self.display(cls.path)})"
        return None

    def _with_field_defaults(self, facts: dict) -> dict:
        """``facts`` with each half load whose dtype is a config object's attribute of a class in another file
        (fairseq2's ``load_model(..., dtype=config.amp_dtype if config.amp else torch.float32)``, ``config:
        TrainingConfig`` from config.py) read at that class's default (``amp_dtype: torch.dtype = torch.float16``,
        ``precision_facts._Fields``), its bases' included; a class or attribute with no half default is no
        evidence."""
        index, module, out = self.index, facts.get("module") or "", []
        for s in facts["signals"]:
            pending = s.get("default_of")
            if not pending:
                out.append(s)
                continue
            cls_name, attr = pending
            cls = index.resolve(cls_name, module)
            todo, seen, found = [cls] if cls is not None and cls.kind == "class" else [], set(), None
            while todo and found is None:
                c = todo.pop(0)
                if c.name in seen:
                    continue
                seen.add(c.name)
                found = self._facts.get(c.path, {}).get("dtype_defaults", {}).get(c.qualname, {}).get(attr)
                todo.extend(index.bases(c.name))
            if found is None:
                continue
            note = s["note"].replace("torch.float16", found)
            out.append({**s, "dtype": "bfloat16" if found == "torch.bfloat16" else "float16", "default_of": None,
                        "note": f"{note} (`{attr}` defaults to {found} in `{cls.qualname}`)"})
        return {**facts, "signals": out}

    # ---- summaries ---------------------------------------------------------------------------------
    def summary(self, path: Path) -> FileSummary:
        """The summary of one project file (empty for a file that cannot be read)."""
        found = self._summaries.get(path)
        if found is not None:
            return found
        summary = self._summarise(path)
        self._summaries[path] = summary
        return summary

    def summaries(self) -> Dict[Path, FileSummary]:
        return {f: self.summary(f) for f in self.files()}

    def looked_into(self, path: Path) -> Optional[str]:
        """The content key of another project file a file's analysis reads itself
        (``FileContext.other_file``: the hook a helper registers, the autocast it opens). Recorded,
        so that a cached result that looked into that file is reused only while it is unchanged."""
        return self.content_key(path)

    def content_key(self, path: Path) -> Optional[str]:
        """The content key of a project file (None for one that cannot be read): from the cache
        when its stat is unchanged (neither read nor decoded), else from its summary."""
        found = self._keys.get(path)
        if found is not None:
            return found
        if self.cache is not None and not self._overlay:
            try:
                key = self.cache.known_key(self.relative(path), os.stat(path))
            except OSError:
                key = None
            if key is not None:  # the key of these bytes: its summary is read only when asked for
                self._keys[path] = key
                return key
        self.summary(path)
        return self._keys.get(path)

    def _summarise(self, path: Path) -> FileSummary:
        rel = self.relative(path)
        module = self.module_name(path)
        overlaid = self._overlay.get(path.resolve()) if self._overlay else None
        # Cached summaries were made under the default limits: other limits go without the cache.
        cache, st = (self.cache if self.limits == DEFAULT_LIMITS else None), None
        if cache is not None and overlaid is None:
            try:
                st = os.stat(path)
            except OSError:
                return FileSummary()
            key = cache.known_key(rel, st)
            if key is not None:
                cached = cache.summary(key)
                if cached is not None:
                    self._keys[path] = key
                    return cached
        try:
            source = overlaid if overlaid is not None else self.read(path)
        except OSError:
            return FileSummary()
        key = content_key(source, rel, module)
        self._keys[path] = key
        if cache is not None and overlaid is None:
            cached = cache.summary(key)
            if cached is None:
                cached = summarise(source, rel, module)
            cache.remember(rel, st, key, cached)
            return cached
        return summarise(source, rel, module, self.limits)

    def save_cache(self) -> None:
        if self.cache is not None:
            self.cache.save(self.relative(f) for f in self.files())

    def _config_signals(self) -> List[Tuple[Path, Signal, Evidence]]:
        from .config_evidence import config_signals
        out = []
        self._shell_programs: Dict[Path, List[str]] = {}
        self._command_programs: Dict[Tuple[Path, int], List[str]] = {}
        for f in self.config_files():
            try:
                text = self.read(f)
            except OSError:
                continue
            found = config_signals(text, f.name)
            for sig, line, what in found:
                out.append((f.resolve(), sig, Evidence(what, self.display(f), line)))
            if found and f.suffix == ".sh":
                self._shell_programs[f.resolve()] = self._shell_named_programs(text.decode("utf-8", "replace"))
            elif found and f.suffix == ".md":
                # a Markdown file's flags are those of the command they are passed in (one page documents many
                # programs' runs: tevatron's docs/training.md)
                spans = _command_spans(self._launcher_text(f))
                for _, line, _ in found:
                    command = next((c for start, end, c in spans if start <= line <= end), "")
                    self._command_programs[(f.resolve(), line)] = self._shell_named_programs(command)
        # mmcv 1.x Python configs under a configuration directory: ``fp16 = dict(loss_scale=512.)`` (T11-10)
        for path, facts in self.facts().items():
            if not facts.get("mm_config_fp16") or self.is_test(path):
                continue
            rel = self._relative_or_none(path) or ""
            if not any(_CONFIG_DIR.fullmatch(part) for part in rel.split("/")[:-1]):
                continue
            for line, text in facts["mm_config_fp16"]:
                sig = Signal("flag", "float16", note=MM_CONFIG_FP16, conditional=True,
                             condition=f"in the runs given {rel}")
                out.append((path, sig, Evidence(f"`{text}`", self.display(path), line)))
        return out

    def _run_by_shell(self, config: Path, entry: Path, line: int = 0) -> Optional[bool]:
        """Does the shell script ``config`` run the program ``entry``? None when it names no Python
        program (its flags then belong to the entry points around it); else whether one of the programs
        it names is ``entry`` (Megatron's examples/mamba/train.sh runs pretrain_hybrid.py with --bf16,
        examples/gpt3/train_gpt3_175b_distributed.sh runs pretrain_gpt.py with --fp16: each its own).
        A Markdown file's flag at ``line`` belongs to the programs its command names, else to none."""
        if config.suffix == ".md":
            named = getattr(self, "_command_programs", {}).get((config, line))
            return bool(named) and self._names_program(config, named, entry)
        named = getattr(self, "_shell_programs", {}).get(config)
        if not named:
            return None
        return self._names_program(config, named, entry)

    def _shell_named_programs(self, text: str) -> List[str]:
        """The programs a shell script runs (``_named_programs``), with the project's modules it runs by name
        (``torchrun -m pkg.finetune.base``, ``deepspeed --module pkg.run``) as the files Python runs for them:
        ``pkg/finetune/base/__main__.py`` or ``pkg/finetune/base.py``, whichever is a project file. (A module
        that is not the project's, ``python -m pip``, names no program of it.)"""
        out = _named_programs(text)
        modules = _named_modules(text)
        if modules:
            rels = self.memo("shell_runs").get("rels")
            if rels is None:
                rels = self.memo("shell_runs")["rels"] = {r for r in map(self._relative_or_none, self.files()) if r}
            for module in modules:
                base = module.replace(".", "/")
                for tail in (f"{base}/__main__.py", f"{base}.py"):
                    if tail not in out and any(r == tail or r.endswith("/" + tail) for r in rels):
                        out.append(tail)
        return out

    def _names_program(self, script: Path, tails: List[str], entry: Path) -> bool:
        """Is ``entry`` one of the programs a shell script names (``_named_programs``)? A path that
        ends like a named tail is, unless a file of that tail lies beside the script or in a directory
        above it (up to the root), where the script runs it from: PhysicsNeMo's examples/.../airfrans/run.sh
        runs the ``train.py`` beside it with ``--amp``, not the other examples' ``train.py``; CAME's
        scripts/run_glue.sh runs CAME/run_glue.py, not DynaBERT's (T17-6). With no such file, the files of
        that tail nearest the script (sharing most of its directories) are the ones it runs."""
        rel = self._relative_or_none(entry) or ""
        for tail in tails:
            if (rel == tail or rel.endswith("/" + tail)) and entry.resolve() in self._programs_run_as(script, tail):
                return True
        return False

    def _programs_run_as(self, script: Path, tail: str) -> set:
        """The project files a shell script runs by the path ``tail`` (``_names_program``)."""
        memo = self.memo("shell_runs").setdefault("programs", {})
        key = (str(script), tail)
        if key not in memo:
            script = script.resolve()
            root = self.root.resolve()
            dirs = [script.parent, *[d for d in script.parent.parents if d == root or root in d.parents]]
            if root not in dirs:
                dirs.append(root)
            near = {(d / tail).resolve() for d in dirs if (d / tail).is_file()}
            if not near:
                rels = self.memo("shell_runs").get("rels")
                if rels is None:
                    rels = self.memo("shell_runs")["rels"] = {r for r in map(self._relative_or_none, self.files()) if r}
                here = (self._relative_or_none(script) or "").split("/")[:-1]

                def shared(r: str) -> int:
                    n = 0
                    for a, b in zip(r.split("/")[:-1], here):
                        if a != b:
                            break
                        n += 1
                    return n

                named = [r for r in rels if r == tail or r.endswith("/" + tail)]
                best = max(map(shared, named), default=0)
                near = {(self.root / r).resolve() for r in named if shared(r) == best}
            memo[key] = near
        return memo[key]

    def entry_points(self) -> List[EntryPoint]:
        """The project's training entry points (test files hold none), each with the files it
        reaches through imports and the training evidence found there and in the configuration
        files that belong to it (those in its directory, above it or below it)."""
        if self._entry_points is None:
            facts = self.facts()
            graph = self._import_graph()
            importers: Dict[Path, set] = {}
            for src, targets in graph.items():
                for t in targets:
                    importers.setdefault(t, set()).add(src)
            configs = self._config_signals()
            master = bool(self.master_optimizers())
            reached_of: Dict[Path, _Reached] = {}
            eps = []
            trainers = [(path, f["entry_points"]) for path, f in facts.items()
                        if f["entry_points"] and not self.is_test(path)]
            trainers += self._launchers(trainers)
            # directories of code (Python files) that no training program lives in, not named for configurations
            sub_models = {p.parent for p in facts} - {p.parent for p, _ in trainers}
            sub_models = {d for d in sub_models if not _CONFIG_DIR.fullmatch(d.name)}
            # the programs that run a file's training loop (mPLUG-Owl2's train_mem.py runs train.py's ``train``)
            run_by: Dict[str, List[Path]] = {}
            for lpath, functions in trainers:
                for r in sorted({r for e in functions for r in e.get("runs", ())}):
                    run_by.setdefault(r, []).append(lpath)
            for path, functions in trainers:
                f = {**facts[path], "entry_points": functions}
                # a hand-off to a trainer whose precision the entry point's own code states
                # (``TrainingArguments(fp16=False, bf16=True)``): that trainer's run
                stated = _hands_off(functions) and any(s["kind"] == "flag" and s["role"] == TRAINING and not s.get("one_of")
                                                       for s in facts[path]["signals"])
                reach = _closure(path, graph)
                reached = reached_of[path] = _Reached(self, path)
                signals: List[Tuple[Signal, Evidence]] = []
                roles = []
                # the files whose training loops this program runs (a launcher): their hand-offs are its run
                runs = {r for e in functions for r in e.get("runs", ())}
                # files loaded by a literal module name: a class looked up in them by string runs, unseen by the call graph
                dynamic = self._dynamic_loads(reach)
                for p in sorted(reach):
                    pf = facts.get(p)
                    if pf is None or self.is_test(p):
                        continue
                    pf = _seen_from(pf, p == path, runs_its_loop=str(p) in runs)
                    if p != path and p not in dynamic:
                        pf = _called_from(pf, p, reached, reach)
                        if stated:
                            pf = _without_other_loops_options(pf)
                    else:
                        live = self._live_in_own_file(pf, path, f["entry_points"])
                        for s in pf["signals"]:
                            if s not in live["signals"] and s["role"] == TRAINING:
                                roles.append(("uncalled", f"`{s['text']}` at {self.display(p)}:{s['line']}",
                                              f"in `{s['function']}`, which nothing in the project calls"))
                        pf = live
                        if any(e.get("runs") for e in f["entry_points"]):
                            # a launcher trains through the loop it runs: its half casts are not "a script that
                            # never trains" (seamless' finetune.py: load_unity_model(..., dtype=torch.float16))
                            pf = {**pf, "signals": [{**s, "role": TRAINING, "why": ""} if s["why"] == NEVER_TRAINS
                                                    else s for s in pf["signals"]]}
                    pf = self._bound_parameters(p, pf)
                    pf = self._option_casts(path, p, pf, reach, None if p == path else reached)
                    pf, off = self._constructor_options(p, pf, reach)
                    pf, off2 = self._parameter_branches(path, p, pf, reach)
                    pf, off3 = self._option_branches(path, pf, reach, run_by.get(str(path), ()))
                    off = off + off2 + off3
                    roles.extend(("not read", f"`{s['text']}` at {self.display(p)}:{s['line']}", why) for s, why in off)
                    signals.extend(signals_of(pf, self.display(p), master_weights=master and self._runs_master(reach)))
                    for sig, ev in self._call_signals(p, pf, None if p == path else reached):
                        signals.append((sig, ev))
                        roles.append((TRAINING, str(ev), sig.note))
                    for s in pf["signals"]:
                        roles.append((s["role"], f"`{s['text']}` at {self.display(p)}:{s['line']}",
                                      "; ".join(x for x in (s["why"], s["one_of"], s["note"] if s["kind"] == "launcher"
                                                            or s.get("option") else "") if x)))
                runners = None
                from_files: List[Tuple[Signal, Evidence]] = []  # the configuration files' settings (not launchers')
                for cpath, sig, ev in configs:
                    by_shell = self._run_by_shell(cpath, path, ev.line)
                    if by_shell is not None:
                        # a launcher script's flags are those of the program it runs (or of a program that
                        # runs this entry point's code)
                        if runners is None:
                            runners = [r for r in _closure(path, importers) if r != path and not self.is_test(r)]
                        if by_shell or any(self._run_by_shell(cpath, r, ev.line) for r in runners):
                            sig = _as_the_program_reads(sig, facts[path]["signals"])
                            signals.append((sig, ev))
                            roles.append(("training", str(ev), "configuration"))
                        continue
                    hydra = facts[path].get("hydra_config_paths")
                    if hydra and cpath.suffix in (".yaml", ".yml") and not any(
                            (path.parent / d).resolve() in (cpath.parent, *cpath.parent.parents) for d in hydra):
                        # NeMo's train_asr_adapter.py: `@hydra_runner(config_path="../conf/asr_adapters", ...)` loads its
                        # configs from there, not the `trainer.precision: 16` of another directory's YAML (listed
                        # only where it would apply by its place, beside or above the program)
                        if _config_applies(cpath, path, self.root):
                            roles.append(("not read", str(ev), "a YAML outside the Hydra config_path of this program"))
                        continue
                    if sig.note == MM_CONFIG_FP16:
                        # an mmcv config's `fp16 = dict(...)` is read by mmcv's runner (its Fp16OptimizerHook) only, in a
                        # program given it on its command line, wherever it lies (BEVFormer's tools/fp16/train.py and
                        # projects/configs/bevformer_fp16/bevformer_tiny_fp16.py)
                        if not self._runs_mm_runner(reach):
                            if _config_applies(cpath, path, self.root):
                                roles.append(("not read", str(ev), "an mmcv config's fp16 setting; this program runs no "
                                                                    "mmcv runner"))
                            continue
                        signals.append((sig, ev))
                        roles.append(("training", str(ev), f"an mmcv config ({sig.condition})"))
                        from_files.append((sig, ev))
                        continue
                    if _YACS_AMP_SWITCH.match(sig.note) and not self._reads_yacs_configs(reach):
                        # LongLoRA's pdf2txt/configs/Base-RCNN-FPN.yaml (`SOLVER: AMP: ENABLED: True`), the config of a
                        # layout detector no training reads: only a program reading detectron2 / yacs configs runs it
                        # (P22-1)
                        if _config_applies(cpath, path, self.root):
                            roles.append(("not read", str(ev), "a detectron2 / yacs config's AMP switch; nothing this "
                                                                "program runs reads such configs"))
                        continue
                    if sig.note.startswith('DeepSpeed "') and cpath.suffix != ".sh" and self._launched_without(cpath, path):
                        # MedicalGPT's deepspeed_zero_stage2_config.json beside run_dpo.sh, which runs dpo_training.py
                        # without DeepSpeed: a DeepSpeed config is read only by the runs that are given it
                        roles.append(("not read", str(ev), "a DeepSpeed config that no launcher script of this program "
                                                            "passes"))
                        continue
                    if sig.note.startswith('DeepSpeed "') and cpath.suffix == ".json" \
                            and self._named_by_other_programs(cpath, path, reach, importers):
                        # FlagAI's examples/vit_cifar100/deepspeed.json, named by train_deepspeed.py's
                        # ``Trainer(env_type="deepspeed", deepspeed_config="./deepspeed.json")``: not read by the
                        # single-GPU train_single_gpu.py beside it, whose code never names it
                        roles.append(("not read", str(ev), "a DeepSpeed config that other programs name in their code "
                                                            "and this one does not"))
                        continue
                    if sig.note.startswith('DeepSpeed "') and cpath.suffix != ".sh" and self._runs_no_deepspeed(cpath, path, reach):
                        # xtuner's v1 engine (FSDP2) beside the v0 trainer's configs/deepspeed/*.json: no code it runs names
                        # DeepSpeed, and it hands its model to no framework that takes a DeepSpeed config (T11-7)
                        roles.append(("not read", str(ev), "a DeepSpeed config; nothing this program runs uses DeepSpeed"))
                        continue
                    if cpath.parent in sub_models and cpath.parent != path.parent and path.parent in cpath.parent.parents:
                        # StyleTTS2's Utils/PLBERT/config.yml (`mixed_precision: "fp16"`): the pretraining config
                        # shipped with a sub-model's code and checkpoint, read for its model_params, is not the
                        # precision of the trainers above it
                        continue
                    if not _config_applies(cpath, path, self.root):
                        # the configs of a script that runs this entry point's code (gpt-neox: train.py at
                        # the root beside configs/, the loop in megatron/training.py); not a run config's stated
                        # precision, which its recipe's own Brain reads (speechbrain's tokenizer loop is no recipe's)
                        if sig.note.endswith(RUN_PRECISION):
                            continue
                        if runners is None:
                            runners = [r for r in _closure(path, importers) if r != path and not self.is_test(r)]
                        if not any(_config_applies(cpath, r, self.root) for r in runners):
                            continue
                    signals.append((sig, ev))
                    roles.append(("training", str(ev), "configuration"))
                    from_files.append((sig, ev))
                if facts[path].get("script") and not runs:
                    # a program running a loop of its own (not a launcher of another file's loop, which may hand
                    # the model to a trainer; not a framework's callback, a Lightning strategy's optimizer_step)
                    signals, roles = _unread_cli_switches(signals, roles, f["entry_points"])
                    signals, roles = _unread_amp_switches(signals, roles, from_files, f["entry_points"])
                stated = {sig.dtype for sig, _ in signals if sig.note.endswith(RUN_PRECISION)}
                if stated:
                    # physicsnemo's recipes: `precision: float32` in the Hydra config, read by the program's own
                    # `get_autocast_context(cfg.precision)` (`if precision == "float16": return autocast(...)`) and
                    # `GradScaler(enabled=cfg.precision == "float16")`: the branches for another precision are not
                    # this run's (T10-8)
                    off = [(sig, ev) for sig, ev in signals if _branch_of_another_precision(sig, stated)]
                    if off:
                        roles = [(("not read", r[1], f"the branch of another precision than the config's "
                                                     f"`precision: {'/'.join(sorted(stated))}`")
                                  if any(str(ev) == r[1] for _, ev in off) else r) for r in roles]
                        signals = [x for x in signals if x not in off]
                if facts[path].get("hydra_config_names"):
                    signals, roles = self._hydra_settings(path, facts[path]["hydra_config_names"], signals, roles)
                signals, roles = self._python_config_settings(path, signals, roles)
                signals, roles = self._module_constant_settings(reach, signals, roles)
                signals, roles = self._dict_settings(path, reach, importers, signals, roles)
                signals, roles = self._option_conditions(path, reach, signals, roles)
                signals, roles = self._overridden_defaults(path, signals, roles)
                signals, roles = self._configured_autocast_dtype(path, reach, signals, roles)
                signals, roles = self._configured_lookup_dtype(path, signals, roles)
                if stated and "float16" not in stated:
                    # its run configs state fp32 / bf16 (speechbrain's `precision: fp32` recipes): the shared
                    # trainer's autocast and GradScaler, switched by that setting, are off or bfloat16 in its runs
                    kept = [(sig, ev) for sig, ev in signals
                            if not (sig.kind in ("autocast", "grad_scaler") and ev.path != self.display(path))]
                    roles = [r for r in roles if not any(str(ev) == r[1] for sig, ev in signals if (sig, ev) not in kept)]
                    signals = kept
                for sig, ev in self._launcher_trainer_signals(path, f["entry_points"]):
                    signals.append((sig, ev))
                    roles.append((TRAINING, str(ev), "a trainer whose precision the launcher sets"))
                signals, roles = self._auto_blocks(path, reach, signals, roles)
                signals = _deepspeed_masters(signals)
                eps.append(EntryPoint(path, self.display(path), f["entry_points"], reach, signals, roles,
                                      bool(facts[path].get("script"))))
            # A file holding training calls that another entry point imports, and that does not import
            # it back, is a helper of that entry point (a training-step utility), not an entry point.
            # A module that hands a model to a trainer itself (a Lightning module's ``cli_main``) is a
            # script of its own even when another script imports it for its classes.
            # (Only when the other's code calls its training functions, by the call graph: speechbrain's
            # tokenizer-training script imports the package, Brain.fit in core.py stays an entry point.)
            # (A loop that hands the model to DeepSpeed itself is still the helper of a launcher that calls
            # it, unless it is a program of its own: gpt-neox's train.py runs megatron/training.py's pretrain.)
            launched = {r for e in eps for f in e.functions for r in f.get("runs", ())}
            eps = [e for e in eps if _hands_off(e.functions) and not (str(e.path) in launched
                                                                    and not facts[e.path].get("script"))
                   or not any(o is not e and e.path in o.reach and o.path not in e.reach
                              and self._calls_training_of(o, e, reached_of) for o in eps)]
            external = self._external_trainer_entry_points(eps)
            if external:
                # a plug-in's framework hook (a fairseq / Uni-Core task's ``train_step``, which the external trainer
                # calls) holding no evidence of its own is no run apart from that trainer's: its file is judged under
                # the command line's precision (NeuralSpeech's FastCorrect: ``fairseq-train --fp16 --user-dir``, P21-3)
                eps = [e for e in eps if e.signals or not any(e.path in x.reach for x in external)
                       or not all(f["function"].rsplit(".", 1)[-1] in _EXTERNAL_TRAINER_HOOKS for f in e.functions)]
                eps.extend(external)
            for e in eps:  # name an entry point by a function that trains, not one that prepares
                e.functions.sort(key=lambda f: (not ({"backward", "optimizer step", LOSS_SCALER_CALL} & set(f["why"])),
                                                f["line"]))
            self._entry_points = sorted(eps, key=lambda e: e.display)
        return self._entry_points

    def _hydra_settings(self, path: Path, configs, signals, roles):
        """``signals`` and ``roles`` as the program's own Hydra config sets them: an autocast or GradScaler
        switched by a setting the config turns off (physicsnemo's `autocast(enabled=self.amp)` with
        ``self.amp = cfg.amp`` and ``amp: False``; torchrl's ``GradScaler(enabled=(dtype == "float16"))`` with
        ``sys.dtype: bfloat16``) is not read, and an autocast whose dtype is looked up by a setting's string
        (``dtype=getattr(torch, dtype)``) takes the config's dtype. Only the primary config
        (``config_name``) is read; a setting it does not hold, or holds twice with different values, stays
        as it was (a command-line override may set it)."""
        from .config_evidence import config_leaves  # noqa: PLC0415 (a leaf module; only Hydra programs ask)
        leaves: Dict[str, object] = {}
        for config_path, name in configs:
            for suffix in (".yaml", ".yml"):
                cfile = (path.parent / config_path / (name + suffix)) if not name.endswith((".yaml", ".yml")) \
                    else path.parent / config_path / name
                if cfile.is_file():
                    try:
                        leaves.update(config_leaves(self.read(cfile), cfile.name))
                    except OSError:
                        pass
                    break
        if not leaves:
            return signals, roles
        runs = self._hydra_override_runs(path, leaves)
        if not runs:
            return _settings_applied(leaves, signals, roles, "the program's Hydra config")
        # each launcher command is a run with the config as its overrides set it (ProphetNet's AR-diffusion:
        # `use_AMP: False` in config.yaml, `trainer_main.py ... use_AMP=True` in scripts/train.sh, M19-1): evidence
        # stays when one run keeps it
        results = [_settings_applied({**leaves, **overrides}, signals, roles,
                                     f"the program's Hydra config{' as ' + where + ' overrides it' if overrides else ''}")
                   for overrides, where in runs]
        kept_in = [{str(ev): (sig, ev) for sig, ev in kept} for kept, _ in results]
        kept = [next(k[str(ev)] for k in kept_in if str(ev) in k) for sig, ev in signals if any(str(ev) in k for k in kept_in)]
        dropped = {r[1] for r in results[0][1] if r[0] == "not read"} - {str(ev) for _, ev in kept}
        out_roles = [next(r for r in results[0][1] if r[1] == role[1]) if role[1] in dropped else role for role in roles]
        return kept, out_roles

    def _hydra_override_runs(self, path: Path, leaves: Dict[str, object]) -> List[Tuple[Dict[str, object], str]]:
        """The runs the launcher commands of the Hydra program ``path`` make: for each command naming it, the settings
        its command-line overrides give (``use_AMP=True``, ``+trainer.amp=true``, ``optim.lr=1e-4``: a key of the
        config's ``leaves`` or one added with ``+``; a config group's choice, ``trainer=gpu``, is no setting), with
        where it is. Empty when no launcher command runs the program."""
        import yaml  # noqa: PLC0415 (override values are YAML scalars, as Hydra's grammar reads the common ones)
        out = []
        for script, _, (_, text) in self._shell_runs_of(path):
            for start, _, command in _command_spans(text):
                named = self._shell_named_programs(command)
                if not self._names_program(script, named, path):
                    continue
                at = max((command.find(t) + len(t) for t in named if t in command), default=0)
                overrides: Dict[str, object] = {}
                for m in _HYDRA_OVERRIDE.finditer(command[at:]):
                    plus, key, raw = m.groups()
                    if not plus and key not in leaves:
                        continue
                    try:
                        value = yaml.safe_load(raw)
                    except yaml.YAMLError:
                        continue
                    if isinstance(value, (str, bool, int, float)) or value is None:
                        overrides[key] = value
                out.append((overrides, f"{self.display(script)}:{start}"))
        return out

    def _module_constant_settings(self, reach: set, signals, roles):
        """``signals`` and ``roles`` less an autocast or GradScaler switched off by a module constant of its own file:
        ``GradScaler(...) if FP16 == 1 else None`` under ``FP16 = 0`` (insightface's jmlr settings copied into the
        program, triage16/repro_4). A constant is a literal bound once at the module's top and nowhere else in the
        file (no other assignment, no ``global``)."""
        switched = [(sig, ev) for sig, ev in signals if sig.kind in ("autocast", "grad_scaler") and sig.conditional
                    and sig.condition and not _ATTRIBUTE_READ.search(sig.condition)]
        if not switched:
            return signals, roles
        files = {self.display(q): q for q in reach}
        where = {}
        for sig, ev in switched:
            q = files.get(ev.path)
            consts = self._literal_module_constants(q) if q is not None else {}
            if consts and _config_truth(sig.condition, consts) is False:
                where[str(ev)] = f"switched off by a constant of its module ({sig.condition})"
        if not where:
            return signals, roles
        return _without(signals, roles, where)

    def _literal_module_constants(self, path: Path) -> Dict[str, object]:
        """The names a module binds once, at its top, to a literal (``FP16 = 0``, ``USE_AMP = False``) and nowhere else
        in the file, with their values (integral numbers as ints)."""
        try:
            tree = ast.parse(self.read(path))
        except (OSError, SyntaxError, ValueError, RecursionError):
            return {}
        top: Dict[str, object] = {}
        for stmt in tree.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
                stmt.target if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else None
            if isinstance(target, ast.Name) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, (bool, int, float, str)):
                v = stmt.value.value
                top[target.id] = int(v) if isinstance(v, float) and v.is_integer() else v
        if not top:
            return {}
        bound: Dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound[node.id] = bound.get(node.id, 0) + 1
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    bound[name] = bound.get(name, 0) + 2
            elif isinstance(node, ast.arg):
                bound[node.arg] = bound.get(node.arg, 0) + 2
        return {k: v for k, v in top.items() if bound.get(k) == 1}

    def _python_config_settings(self, path: Path, signals, roles):
        """``signals`` and ``roles`` less an autocast or GradScaler switched by a setting that every Python
        configuration module of the program (a ``configs/*.py`` beside or above it, ``config.fp16 = 0``) turns off
        (insightface's reconstruction/jmlr: ``GradScaler(...)`` under ``if cfg.fp16 == 1:`` with ``cfg =
        get_config(args.config)`` and base.py, s1.py, s2.py all ``config.fp16 = 0``, T16-5). A config that does
        not set the key, or sets it on, keeps it."""
        facts = self.facts()
        if not any(f.get("py_config") for f in facts.values()):
            return signals, roles
        # (every configuration module applying counts: one holding no settings, or none of the key, settles nothing)
        configs = [(p, facts.get(p, {}).get("py_config", {})) for p in self.files()
                   if p.parent != path.parent and _PY_CONFIG_DIR.fullmatch(p.parent.name) and p.name != "__init__.py"
                   and not self.is_test(p) and _config_applies(p, path, self.root)]
        if not any(leaves for _, leaves in configs):
            return signals, roles
        where = {str(ev): (f"switched off by every Python config of this program ({sig.condition}: "
                           f"{', '.join(self.display(p) for p, _ in configs)})")
                 for sig, ev in signals if sig.kind in ("autocast", "grad_scaler") and sig.conditional and sig.condition
                 and all(_config_truth(sig.condition, leaves) is False for _, leaves in configs)}
        return _without(signals, roles, where)

    def _dict_settings(self, path: Path, reach: set, importers: Dict[Path, set], signals, roles):
        """``signals`` and ``roles`` as the precision settings written in dict literals set them (autogluon's Mitra:
        ``hyperparams={"precision": "bfloat16", "grad_scaler_enabled": False, ...}`` read by its trainer as
        ``autocast(dtype=getattr(torch, self.cfg.hyperparams["precision"]))`` and
        ``GradScaler(enabled=self.cfg.hyperparams["grad_scaler_enabled"])``, T12-5): only evidence that reads a
        setting by a string key, against the dicts of the files the entry point reaches or that run it (import it);
        a key written with different values stays unsettled."""
        if not any(_read_by_setting(sig) or _read_by_attribute_setting(sig) for sig, _ in signals):
            return signals, roles
        facts = self.facts()
        values: Dict[str, set] = {}
        attr_values: Dict[str, set] = {}
        lines: Dict[str, str] = {}
        for q in sorted(set(reach) | _closure(path, importers)):
            for key, value, line in facts.get(q, {}).get("setting_dicts", ()):
                values.setdefault(key, set()).add((type(value).__name__, value))
                lines.setdefault(key, f"the settings dict at {self.display(q)}:{line}")
                if facts[q].get("attr_dicts"):
                    attr_values.setdefault(key, set()).add((type(value).__name__, value))
        for key, value, where in self._own_yaml_settings(path):
            values.setdefault(key, set()).add((type(value).__name__, value))
            lines.setdefault(key, f"`{key.rsplit('.', 1)[-1]}: {value}` in the program's YAML {where}")
        if not values:
            return signals, roles
        leaves = {k: next(iter(v))[1] if len(v) == 1 else _MISSING for k, v in values.items()}
        subscripted = [(sig, ev) for sig, ev in signals if _read_by_setting(sig)]
        kept, roles = _settings_applied(leaves, subscripted, roles, "the program's own settings")
        # a setting read as an attribute (``self.config.use_amp``) is settled only by the settings dicts of a module
        # that turns dicts into attribute dicts (ZoeDepth's config.py: ``edict(...)`` of its dicts, T21-3); any
        # settings dict reached that gives the key another value leaves it unsettled
        attributed = [(sig, ev) for sig, ev in signals if _read_by_attribute_setting(sig)]
        if attributed and attr_values:
            attr_leaves = {k: next(iter(v))[1] if len(values[k]) == 1 else _MISSING for k, v in attr_values.items()}
            attr_kept, roles = _settings_applied(attr_leaves, attributed, roles, "the program's own settings dicts")
            subscripted += attributed
            kept += attr_kept
        changed = dict(zip(map(str, (ev for _, ev in subscripted)), [None] * len(subscripted)))
        before = {str(ev): sig.dtype for sig, ev in subscripted}
        for sig, ev in kept:
            changed[str(ev)] = (sig, ev)
            if sig.dtype != before[str(ev)]:
                key = sig.note[len(DTYPE_LOOKUP):].strip("`")
                read = "." + key.replace("'", "").replace('"', "").replace("[", ".").replace("]", "")
                tail = next((k for k in lines if read.endswith("." + k)), None)
                said = f"dtype {sig.dtype}: {lines[tail] if tail else 'the settings in the code'}"
                roles = [(r[0], r[1], "; ".join(x for x in (r[2], said) if x)) if r[1] == str(ev) else r
                         for r in roles]
        return [changed[str(ev)] if str(ev) in changed else (sig, ev) for sig, ev in signals
                if not (str(ev) in changed and changed[str(ev)] is None)], roles

    def _own_yaml_settings(self, path: Path) -> List[Tuple[str, object, str]]:
        """The precision settings of the YAML files the program ``path`` names in its code (nanuGPT-style:
        ``add_argument("--config", default="configs/base_config.yaml")`` then ``yaml.safe_load(open(args.config))``),
        found beside the program or at the project root: (dotted key, value, where) of each."""
        from .config_evidence import config_leaves  # noqa: PLC0415 (a leaf module; only such programs ask)
        out = []
        for rel in self.facts().get(path, {}).get("yaml_paths", ()):
            for base in (path.parent, self.root):
                cfile = base / rel
                if cfile.is_file():
                    try:
                        leaves = config_leaves(self.read(cfile), cfile.name)
                    except OSError:
                        break
                    where = self.display(cfile)
                    out.extend((k, v, where) for k, v in leaves.items()
                               if v is not None and _SETTING_KEY.search(k.rsplit(".", 1)[-1]))
                    break
        return out

    def _option_conditions(self, path: Path, reach: set, signals, roles):
        """``signals`` and ``roles`` less an autocast or GradScaler switched by a comparison of a dtype / precision
        option that no run of the entry point makes true (``ShardedGradScaler(enabled=args.precision in ["fp16"])``
        with ``--precision`` defaulting to ``bf16`` and no launcher passing ``fp16``: LLaMA2-Accessory, T11-9)."""
        where = {}
        for sig, ev in signals:
            options = re.findall(r"\b(?:args|opts?|cfg|config|self\.args)\.(\w*(?:dtype|precision)\w*)\s*(?:==|!=|in\b|not in\b)",
                                 sig.condition) if sig.kind in ("autocast", "grad_scaler") and sig.conditional else []
            if len(set(options)) == 1:
                values = self._option_values(path, options[0], reach)
                truths = [_config_truth(sig.condition, {options[0]: v}) for v, _ in values]
                if truths and all(t is False for t in truths):
                    where[str(ev)] = (f"switched off in this program's runs (`{options[0]}` is "
                                      f"{', '.join(sorted({v for v, _ in values}))}: {'; '.join(sorted({w for _, w in values}))})")
        return _without(signals, roles, where)


    def _configured_lookup_dtype(self, path: Path, signals, roles):
        """``signals`` and ``roles`` with an autocast whose dtype is looked up by a setting its own settings did not
        settle (``dtype=torch_dtype_map[cfg.training.amp_precision]``) taking the one dtype the program's YAML configs
        give that setting's key (xlstm's experiments/parity_*.yaml beside main.py, given by ``--config``:
        ``amp_precision: bfloat16``, T15-4), when the program names no YAML in its code. Configs that disagree, or none
        holding the key, leave it as it was."""
        looked = [(sig, ev) for sig, ev in signals if sig.kind == "autocast" and sig.dtype == "float16"
                  and sig.note.startswith(DTYPE_LOOKUP)]
        if not looked or self.facts().get(path, {}).get("yaml_paths"):
            # (a program naming its YAML in its code reads that one: ``_own_yaml_settings``, T12-5)
            return signals, roles
        changed = {}
        for sig, ev in looked:
            key = re.sub(r"""[\[\]"']""", ".", sig.note[len(DTYPE_LOOKUP):].strip("`")).strip(".").rsplit(".", 1)[-1]
            stated = [(v, w) for v, w in self._config_option_values(path, key) if _PRECISION_WORDS.get(v.lower())]
            dtypes = {_PRECISION_WORDS[v.lower()] for v, _ in stated}
            if len(dtypes) == 1 and dtypes != {"float16"}:
                dtype = dtypes.pop()
                said = f"dtype {dtype}: " + "; ".join(w for _, w in stated)
                changed[str(ev)] = dataclasses.replace(sig, dtype=dtype, enabled=sig.enabled and dtype != "float32",
                                                       note=f"{sig.note}; {said}")
        if not changed:
            return signals, roles
        return ([(changed.get(str(ev), sig), ev) for sig, ev in signals],
                [(r[0], r[1], "; ".join(x for x in (r[2], changed[r[1]].note[len(DTYPE_LOOKUP):]) if x))
                 if r[1] in changed else r for r in roles])

    def _configured_autocast_dtype(self, path: Path, reach: set, signals, roles):
        """``signals`` and ``roles`` with an autocast whose dtype the code does not say (nanuGPT: ``autocast(...,
        dtype=torch_info.pt_dtype)``, the dataclass field built in another function from ``config['general']['dtype']``)
        taking the dtype the program's YAML configs give the setting its code reads by that key (``dtype: 'bfloat16'``
        in configs/*.yaml beside train.py): bf16 when they name bfloat16 and never float16, off when all name float32.
        A config naming float16, or none naming a float dtype, leaves float16."""
        open_ = [(sig, ev) for sig, ev in signals if sig.kind == "autocast" and sig.dtype == "float16"
                 and sig.note == _OPEN_AUTOCAST_DTYPE]
        if not open_:
            return signals, roles
        facts = self.facts()
        keys = sorted({k for q in reach for k in facts.get(q, {}).get("keyed_settings", ())})
        stated = [(v, w) for k in keys for v, w in self._config_option_values(path, k)
                  if _PRECISION_WORDS.get(v.lower()) is not None]
        dtypes = {_PRECISION_WORDS[v.lower()] for v, _ in stated}
        if not dtypes or "float16" in dtypes:
            return signals, roles
        dtype = "bfloat16" if "bfloat16" in dtypes else "float32"
        said = f"dtype {dtype}: " + "; ".join(sorted({w for v, w in stated}))
        changed = {str(ev): dataclasses.replace(sig, dtype=dtype, enabled=sig.enabled and dtype != "float32",
                                                note=said) for sig, ev in open_}
        return ([(changed.get(str(ev), sig), ev) for sig, ev in signals],
                [(r[0], r[1], "; ".join(x for x in (r[2], changed[r[1]].note) if x)) if r[1] in changed else r
                 for r in roles])

    def _auto_blocks(self, path: Path, reach: set, signals, roles):
        """``signals`` and ``roles`` with the DeepSpeed ``"enabled": "auto"`` blocks read as Hugging Face reads them: the
        trainer's ``--fp16`` / ``--bf16`` of the run given that config. Where launcher commands of the program ``path``
        pass the config (``--deepspeed ds_zero3_config.json``), a block is on when one of them passes its dtype's flag
        and off otherwise, a flag not passed being at its default (tevatron's DSE README: ``--bf16``; neither flag:
        float32 with Hugging Face's defaults); for a config no command is known
        to pass, the run's stated trainer flags decide (``_auto_blocks_follow_flags``). An "auto" block is never
        float16 evidence by itself where the run is known."""
        auto = [(sig, ev) for sig, ev in signals if sig.kind == "flag" and '"enabled": "auto"' in sig.note]
        if not auto:
            return signals, roles
        commands = []
        all_closed = True  # (every command's arguments known: no forwarded "$@", no variable the script leaves unset)
        for script, _, (_, text) in self._shell_runs_of(path):
            assigned = None
            for c in _script_commands(text):
                if self._names_program(script, self._shell_named_programs(c), path):
                    commands.append((script, c))
                    assigned = _assigned_values(text) if assigned is None else assigned
                    all_closed = all_closed and _closed_command(c, assigned)
        defaults = self._switch_defaults(["fp16", "bf16"], reach) if commands else {}
        # (a trainer flag the code itself states, TrainingArguments(fp16=True): ``_auto_blocks_follow_flags``)
        stated = any(sig.kind == "flag" and sig.enabled and '"auto"' not in sig.note
                     and sig.dtype in ("float16", "bfloat16") for sig, _ in signals)
        where = {}
        for sig, ev in auto:
            name = ev.path.rsplit("/", 1)[-1]
            passing = [(script, c) for script, c in commands
                       if any(m.rsplit("/", 1)[-1] == name for m in _DEEPSPEED_CONFIG_OPTION.findall(c))]
            flag = "fp16" if sig.dtype == "float16" else "bf16"
            # (a command that does not pass the flag runs it at its default: FlagEmbedding's training arguments
            # default fp16 to True, T14-3)
            on = [_passed_switch(c, flag) or ({defaults[flag][0]} if flag in defaults else {True, False})
                  for _, c in passing]
            if passing and not any(True in values for values in on):
                shown = ", ".join(sorted({self.display(script) for script, _ in passing}))
                where[str(ev)] = (f'"auto" takes the trainer\'s --{flag}, which the commands passing {name} leave off '
                                  f"({shown})")
            elif not passing and commands and all_closed and flag in defaults and defaults[flag][0] is False and not stated and not any(
                    True in (_passed_switch(c, flag) or {False}) for _, c in commands):
                # a config no command passes, in a program whose every known command leaves the flag at its False
                # default and whose code states none: "auto" says nothing the commands do not (UnifiedSKG's
                # ds_config_zero1 / zero3 beside the zero2 its README passes without --fp16, P21-1)
                shown = ", ".join(sorted({self.display(script) for script, _ in commands}))
                where[str(ev)] = (f'"auto" takes the trainer\'s --{flag}, which no command running this program passes '
                                  f"({shown})")
        kept = [(sig, ev) for sig, ev in signals if str(ev) not in where]
        followed = _auto_blocks_follow_flags(kept)
        for sig, ev in kept:
            if (sig, ev) not in followed:
                where[str(ev)] = '"auto" takes the trainer\'s flags, which this run states for another precision'
        return followed, _not_read(roles, where) if where else roles

    def _overridden_defaults(self, path: Path, signals, roles):
        """``signals`` and ``roles`` less a command-line option's default (``add_argument("--precision",
        default="16-mixed")``) that every launcher script of the program ``path`` overrides (each passes
        ``--precision``: ``bf16-mixed`` in one, ``32`` in another): no run takes the default."""
        defaults = [(sig, ev) for sig, ev in signals
                    if sig.kind == "flag" and _CLI_DEFAULT.match(sig.note)]
        if not defaults:
            return signals, roles
        runs = self._shell_runs_of(path)
        if not runs:
            return signals, roles
        where = {}
        for sig, ev in defaults:
            option = _CLI_DEFAULT.match(sig.note).group(1).replace("-", "_")
            passed = [next((f"{self.display(script)}:{line} `{value}`" for line, name, value in options
                            if name.replace("-", "_") == option), None) for script, options, _ in runs]
            if all(passed):
                where[str(ev)] = f"every launcher script of this program passes --{option} ({'; '.join(passed)})"
        if not where:
            return signals, roles
        return ([(sig, ev) for sig, ev in signals if str(ev) not in where],
                _not_read(roles, where))

    def _bound_parameters(self, path: Path, facts: dict) -> dict:
        """``facts`` with the evidence whose precision is a parameter of its function (a ColossalAI
        plugin's ``precision=dtype`` in Open-Sora's ``create_colossalai_plugin(plugin, dtype, ...)``)
        read at what every caller passes, when each passes the same string (``dtype=cfg_dtype`` with
        ``cfg_dtype = cfg.get("dtype", "bf16")``: the configs' default, bf16). Otherwise "one of" stays."""
        if not any(s.get("param") for s in facts["signals"]):
            return facts
        index = self.index
        out = []
        for s in facts["signals"]:
            alternatives = s.get("alternatives")
            if not (s.get("param") and s.get("function") and isinstance(alternatives, dict)):
                out.append(s)
                continue
            values, known = set(), True
            fns = [x for x in index.symbols_in(path) if x.kind == "function" and x.qualname.rsplit(".", 1)[-1] == s["function"]]
            for site in (index.callers(fns[0].name) if len(fns) == 1 else ()):
                passed = [a.get("value") for a in self.facts().get(site.path, {}).get("literal_args", ())
                          if isinstance(a, dict) and a.get("line") == site.line and a.get("keyword") == s["param"]]
                if not passed or not isinstance(passed[0], str):
                    known = False
                    break
                values.add(passed[0])
            alt = alternatives.get(next(iter(values))) if known and len(values) == 1 else s
            if alt is s or alt is None:
                if alt is s:
                    out.append(s)
                continue  # fp32: no evidence
            if not (isinstance(alt, dict) and all(isinstance(alt.get(k), t) for k, t in (
                    ("kind", str), ("dtype", str), ("enabled", bool), ("pure", bool), ("master", bool), ("note", str)))):
                out.append(s)
                continue
            out.append({**s, **alt, "one_of": None,
                        "note": f"{alt['note']} (`{s['param']}` as every caller of `{s['function']}` passes it)"})
        return {**facts, "signals": out}

    def _option_casts(self, entry: Path, path: Path, facts: dict, reach: set, reached: Optional["_Reached"]) -> dict:
        """``facts`` (of the file ``path``, which the entry point ``entry`` reaches) with its loads and casts whose dtype
        is looked up by an option's string (``from_pretrained(..., torch_dtype=getattr(torch, args.torch_dtype))``,
        ``precision_facts._dtype_option``) as evidence of the dtype that option has in the entry point's runs: the
        value the launcher scripts that run it pass (MedicalGPT's run_dpo.sh: ``--torch_dtype float16``), else the
        option's default in the files it reaches (a dataclass field, an ``add_argument``). Several values: one of
        them, float16 first; no half value (``float32``, ``auto``, no default): no evidence."""
        casts = facts.get("option_casts")
        if not casts:
            return facts
        if reached is not None:  # (an imported file's: what the entry point's code runs of it)
            casts = [c for c in casts if not c.get("main") and (not c.get("function") or reached.holds(path, c["function"]))]
        out = []
        for c in casts:
            values = self._option_values(entry, c["option"], reach)
            if "option_key" in c:
                # an entry of a dict looked up by the option (``{"bf16": autocast(dtype=torch.bfloat16), ...}[
                # args.precision]``): evidence where the runs pick it; with no value known, one of the entries (T11-3)
                picked = sorted({v.lower() for v, _ in values})
                if not picked:
                    out.append(c)
                elif c["option_key"].lower() in picked:
                    where = next(w for v, w in values if v.lower() == c["option_key"].lower())
                    note = f"`--{c['option']} {c['option_key']}` ({where})"
                    out.append({**c, "one_of": None if len(picked) == 1 else f"`{c['option']}` is one of {', '.join(picked)}",
                                "note": f"{c['note']}; {note}" if c["note"] else note})
                continue
            half = sorted((_HALF_OPTION_VALUES[v.lower()], v, where) for v, where in values
                          if v.lower() in _HALF_OPTION_VALUES)
            if not half:
                continue
            dtype, value, where = half[0]
            note = f"`--{c['option']} {value}` ({where})"
            one_of = c.get("one_of")
            if len({v.lower() for v, _ in values}) > 1:
                one_of = f"`{c['option']}` is one of {', '.join(sorted({v for v, _ in values}))}"
            out.append({**c, "dtype": dtype, "one_of": one_of, "note": f"{c['note']}; {note}" if c["note"] else note})
        return {**facts, "signals": [*facts["signals"], *out]} if out else facts

    def _reads_yacs_configs(self, reach: set) -> bool:
        """Does code of ``reach`` read detectron2 / yacs-style configs: import detectron2, yacs, fvcore or detrex, or
        call ``merge_from_file`` (a project's own CfgNode)?"""
        facts = self.facts()
        for q in reach:
            if any(m.split(".", 1)[0] in _YACS_READERS for m in facts.get(q, {}).get("imports", ())):
                return True
            try:
                if b"merge_from_file" in self.read(q):
                    return True
            except OSError:
                continue
        return False

    def _runs_mm_runner(self, reach: set) -> bool:
        """Does a file of ``reach`` train through an mmcv 1.x runner (``runner.run(data_loaders, cfg.workflow)``)?"""
        facts = self.facts()
        return any(w.endswith(".run") for q in reach for e in facts.get(q, {}).get("entry_points", ()) for w in e["why"])

    def _constructor_options(self, path: Path, facts: dict, reach: set):
        """``facts`` (of ``path``, which an entry point reaches: ``reach``) less the evidence taken only under ``if
        self.<attr>:`` of a constructor option that no construction in ``reach`` turns that way (FlagAI's
        ``Trainer(..., fp16=False)`` with ``if self.fp16: model.half(); model = FP16_Module(model)``, built by a script
        as ``Trainer(env_type="pytorch", lr=1e-4)``, T12-3), and less a half-casting wrapper's cast whose every
        construction in ``reach`` sits under such an option that is off. Returns the facts and the dropped signals with
        why."""
        if not any(s.get("self_option") or s.get("wrapper_class") for s in facts["signals"]):
            return facts, []
        index = self.index
        memo: Dict[tuple, Optional[set]] = {}

        def values(cls_path: Path, cond: dict) -> Optional[set]:
            key = (cls_path, cond["class"], cond["param"])
            if key not in memo:
                memo[key] = self._constructed_with(index, cls_path, cond["class"], cond["param"], cond["default"], reach)
            return memo[key]

        def off(cls_path: Path, cond: dict) -> Optional[str]:
            vals = values(cls_path, cond)
            truths = [_option_truth(v, cond.get("compare")) for v in vals or ()]
            if not truths or any(t is None or t == cond["taken"] for t in truths):
                return None
            shown = ", ".join(sorted(repr(v) for v in vals))
            test = f"self.{cond['attr']}" + (f" {cond['compare'][0]} {cond['compare'][1]}" if cond.get("compare") else "")
            return (f"`{cond['class']}` is built with {cond['param']}={shown} in this program's runs: "
                    f"`{'' if cond['taken'] else 'not '}{test}` is not true")

        kept, dropped = [], []
        for s in facts["signals"]:
            why = off(path, s["self_option"]) if s.get("self_option") else None
            if why is None and s.get("wrapper_class"):
                why = self._wrapper_built_off(index, path, s["wrapper_class"], reach, off)
            if why is None:
                kept.append(s)
            else:
                dropped.append((s, why))
        return ({**facts, "signals": kept} if dropped else facts), dropped

    def _parameter_branches(self, entry: Path, path: Path, facts: dict, reach: set):
        """``facts`` (of ``path``, which the entry point ``entry`` reaches: ``reach``) less a half cast or load taken
        only when a parameter of its function compares so (``def get_model(name, dtype="bf16")`` with ``elif dtype ==
        "fp16": torch_dtype = torch.float16``) that no call in ``reach`` passes such a value: each call's literal, the
        parameter's default where it passes nothing, or the values of the option it passes (``dtype=model_args.dtype``:
        the launcher scripts' ``--dtype``, else the option's default; FlagEmbedding's activation_beacon, T14-2).
        Returns the facts and the dropped signals with why."""
        if not any(s.get("param_branch") for s in facts["signals"]):
            return facts, []
        index = self.index
        kept, dropped = [], []
        for s in facts["signals"]:
            branch = s.get("param_branch")
            values = self._passed_values(index, entry, path, branch, reach) if branch else None
            truths = [_config_truth(branch["test"], {branch["param"]: v}) for v, _ in values or ()]
            shown = "; ".join(sorted({f"{v} ({w})" for v, w in values or ()}))
            if truths and all(t is True for t in truths) and s.get("one_of"):
                # every run takes the float16 branch (FlagEmbedding's llm_embedder: ``DenseRetriever(**asdict(model_args))``
                # with ``dtype`` defaulting to "fp16", T14-3): a half load of this program, not one of several
                kept.append({**s, "one_of": None, "note": "; ".join(x for x in (
                    s["note"], f"float16: `{branch['param']}` of `{branch['function']}` is {shown} in this program's "
                               f"runs") if x)})
                continue
            if not truths or not all(t is False for t in truths):
                kept.append(s)
                continue
            dropped.append((s, f"`{branch['param']}` of `{branch['function']}` is {shown} in this program's runs: "
                               f"`{branch['test']}` is not taken"))
        return ({**facts, "signals": kept} if dropped or kept != facts["signals"] else facts), dropped

    def _option_branches(self, entry: Path, facts: dict, reach: set, runners=()):
        """``facts`` (of a file the entry point ``entry`` reaches: ``reach``) less the float16 evidence taken only under a
        test of boolean command-line switches (``option_branch``: ``torch_dtype=torch.bfloat16 if args.bf16 else
        torch.half``, ``TrainingArguments(fp16=not args.bf16)``, ``if training_args.fp16: model.to(torch.float16)``)
        that no run of the program makes true: the switches' values in each launcher script that runs it, or a
        ``store_true`` switch defaulting to True that no command line turns off (mPLUG-Owl, T17-1). Returns the facts
        and the dropped signals with why. A program no launcher script runs takes the runs of the programs that run its
        training loop (``runners``: mPLUG-Owl2's scripts run train_mem.py, which calls train.py's ``train``)."""
        if not any(s.get("option_branch") for s in facts["signals"]):
            return facts, []
        kept, dropped = [], []
        for s in facts["signals"]:
            test = s.get("option_branch")
            options = _switch_options(test) if test and s["dtype"] == "float16" else None
            runs = self._switch_runs(entry, options, reach, runners) if options else None
            if runs and all(_switch_truth(test, values) is False for values, _ in runs):
                dropped.append((s, f"`{test}` is false in this program's runs ({'; '.join(w for _, w in runs)})"))
            else:
                kept.append(s)
        return ({**facts, "signals": kept} if dropped else facts), dropped

    def _switch_defaults(self, options: List[str], reach: set) -> Dict[str, Tuple[bool, bool]]:
        """The defaults of the boolean switches ``options`` in the files ``reach`` (the project's ``add_argument`` /
        dataclass field, else Hugging Face ``TrainingArguments``'), each as (default, whether no command line can
        change it); a switch whose default is not known (none, or several) is left out."""
        from .torch_api.trainers import HF_TRAINING_ARGUMENTS_SWITCHES  # noqa: PLC0415 (data; only such tests ask)
        facts = self.facts()
        defaults: Dict[str, Tuple[bool, bool]] = {}
        for o in options:
            found = {tuple(facts.get(q, {}).get("switch_defaults", {})[o]) for q in reach
                     if o in facts.get(q, {}).get("switch_defaults", {})}
            if len(found) == 1:
                defaults[o] = found.pop()
            elif not found and o in HF_TRAINING_ARGUMENTS_SWITCHES and any(
                    m == "transformers" or m.startswith("transformers.") for q in reach
                    for m in facts.get(q, {}).get("imports", ())):
                defaults[o] = (HF_TRAINING_ARGUMENTS_SWITCHES[o], False)
        return defaults

    def _switch_runs(self, entry: Path, options: List[str], reach: set,
                     runners=()) -> Optional[List[Tuple[Dict[str, bool], str]]]:
        """The values the runs of the program ``entry`` give the boolean switches ``options``, each run's with where it
        is said: a switch no command line changes (``store_true`` with ``default=True``) has its default in every run;
        otherwise each launcher script that runs the program gives it, by passing it (``--bf16``, ``--bf16 True``) or,
        when it states a precision otherwise (``--bf16 True`` beside an unpassed ``--fp16``), by leaving it at its
        default (the project's ``add_argument`` / dataclass field, else Hugging Face ``TrainingArguments``'). None when
        a run's value is unknown or no launcher script runs the program."""
        defaults = self._switch_defaults(options, reach)
        if all(o in defaults and defaults[o][1] for o in options):
            return [({o: defaults[o][0] for o in options},
                     "; ".join(f"`--{o}` is a store_true switch defaulting to {defaults[o][0]}" for o in options))]
        runs = self._shell_runs_of(entry) or [r for runner in runners for r in self._shell_runs_of(runner)]
        if not runs:
            return None
        out = []
        for script, _, (_, text) in runs:
            # each command of the script that runs the program is a run (``python train.py --bf16`` and ``python
            # train.py`` are two), its shell variables expanded (mPLUG-Owl: ``train.py $@ ${options}`` with
            # ``options="... --bf16"``); a script whose commands name it only through what is not expanded is one run
            commands = [c for c in _script_commands(text)
                        if self._names_program(script, self._shell_named_programs(c), entry)] or [text]
            assigned = _assigned_values(text)
            for command, via in self._forwarded_runs(script, commands):
                values: Dict[str, bool] = {}
                for o in options:
                    passed = _passed_switch(command, o)
                    for name in _standalone_variables(command):
                        # (a variable the script sets to one of several values: ``TASK_EXTRA="--max_seq_len 256"``)
                        for value in assigned.get(name, ()):
                            passed |= _passed_switch(value, o)
                    if o in defaults and defaults[o][1]:
                        values[o] = defaults[o][0]
                    elif len(passed) == 1:
                        values[o] = passed.pop()
                    elif not passed and o in defaults and (_STATES_PRECISION.search(command) or (
                            # (the usual precision flags, --fp16 / --bf16, may be given by hand to any run: only a
                            # command stating a precision settles them; a switch of its own, MeZO's
                            # --efficient_zero_order_fp16, is what the documented runs pass)
                            _closed_command(command, assigned) and not _STATES_PRECISION.fullmatch("--" + o))):
                        values[o] = defaults[o][0]
                    else:
                        return None
                out.append((values, f"{self.display(script)}{via}: " + ", ".join(f"{o}={v}" for o, v in values.items())))
        return out

    def _forwarded_runs(self, script: Path, commands: List[str], depth: int = 0) -> List[Tuple[str, str]]:
        """``commands`` of the launcher ``script`` as they run, each with where its arguments come from: a command
        forwarding the script's own arguments (``python run.py ... "$@"``) runs once per command of another launcher
        that runs the script (``bash run_fewshot.sh --efficient_zero_order "$@"`` in MeZO's mezo.sh, itself run by
        the README's ``bash mezo.sh --prefix_tuning``), with those arguments in their place; a script no launcher
        runs is run as it is written (its ``"$@"``, its user's extras, dropped: T20-1)."""
        out: List[Tuple[str, str]] = []
        for command in commands:
            invocations = self._invocations(script) if depth < 3 and _FORWARDED.search(command) else []
            if not invocations:
                # (a script no launcher runs: its documented run is what it says; "$@" adds its user's extras)
                out.append((_FORWARDED.sub(" ", command) if depth < 3 else command, ""))
                continue
            for invoker, args in invocations:
                for outer, via in self._forwarded_runs(invoker, [args], depth + 1):
                    out.append((_FORWARDED.sub(lambda m: " " + outer + " ", command),
                                f" (run by {self.display(invoker)}{via})"))
        return out

    def _invocations(self, script: Path) -> List[Tuple[Path, str]]:
        """(launcher, the arguments it passes) of each launcher command that runs the shell script ``script``
        (``bash run_fewshot.sh --lr 1e-5``, ``sh scripts/x.sh``, ``./x.sh``), its variables expanded."""
        memo = self.memo("shell_runs").setdefault("invocations", {})
        key = str(script)
        if key not in memo:
            found: List[Tuple[Path, str]] = []
            if script.suffix == ".sh":
                target = script.resolve()
                for f in self.config_files():
                    if f.suffix not in (".sh", ".md") or f.resolve() == target:
                        continue
                    try:
                        text = self._launcher_text(f)
                    except OSError:
                        continue
                    if script.name not in text:
                        continue
                    for command in _script_commands(text):
                        for m in _SCRIPT_RUN.finditer(command):
                            ran = m.group(1).strip("\"'")
                            if Path(ran).name != script.name or "$" in ran:
                                continue
                            if any((d / ran).resolve() == target for d in (f.parent, self.root)):
                                found.append((f, command[m.end():]))
            memo[key] = found
        return memo[key]

    def _passed_values(self, index: ProjectIndex, entry: Path, path: Path, branch: dict,
                       reach: set) -> Optional[List[Tuple[str, str]]]:
        """The string values the calls in ``reach`` of ``branch``'s function (of ``path``) pass its parameter, each with
        where it comes from; None when one passes anything else, or no call is found."""
        if branch.get("option"):
            # a local read from the program's options by a key (``dtype = model_args_dict["dtype"]``)
            values = self._option_values(entry, branch["option"], reach)
            return [(v, f"`--{branch['option']}`: {w}") for v, w in values] or None
        qualname = branch["function"]
        fns = [x for x in index.symbols_in(path) if x.kind == "function" and x.qualname == qualname]
        if len(fns) != 1:
            return None
        target = fns[0]
        if qualname.endswith(".__init__"):
            classes = [x for x in index.symbols_in(path) if x.kind == "class" and x.qualname == qualname[:-len(".__init__")]]
            if len(classes) != 1:
                return None
            sites = index.callers(classes[0].name)
        else:
            sites = index.callers(target.name)
        sites = [c for c in sites if c.path in reach]
        if not sites:
            return None
        out: List[Tuple[str, str]] = []
        for site in sites:
            known, arg = site.argument_for(target, branch["param"])
            if not known and any(a.how == "**" and _FIELDS_SPREAD.fullmatch(a.text) for a in site.args) \
                    and not any(a.how == "*" for a in site.args):
                # ``DenseRetriever(**asdict(model_args))``: the option of the parameter's name, if the runs give it one
                values = self._option_values(entry, branch["param"], reach)
                if not values:
                    return None
                out.extend((v, f"`--{branch['param']}`: {w}") for v, w in values)
                continue
            if not known:
                return None
            if arg is None:
                if branch["default"] is None:
                    return None
                out.append((branch["default"], f"the default of `{branch['param']}`"))
            elif arg.kind == "string":
                try:
                    out.append((str(ast.literal_eval(arg.text)), f"{self.display(site.path)}:{site.line}"))
                except (ValueError, SyntaxError):
                    return None
            elif arg.kind == "attribute" and re.fullmatch(r"[\w.]+", arg.text) \
                    and _OPTIONS_OBJECT.fullmatch(arg.text.split(".")[-2]):
                # ``dtype=model_args.dtype``: an option of the program's arguments (not a local's value)
                option = arg.text.rsplit(".", 1)[-1]
                values = self._option_values(entry, option, reach)
                if not values:
                    return None
                out.extend((v, f"`{arg.text}`: {w}") for v, w in values)
            else:
                return None
        return out

    def _constructed_with(self, index: ProjectIndex, path: Path, cls: str, param: str, default, reach: set) -> Optional[set]:
        """The values the constructions of the class ``cls`` (defined in ``path``) found in the files ``reach`` pass
        for its ``__init__``'s ``param`` (the ``default`` where they pass nothing); None when one passes something
        else than a literal, or none is found."""
        syms = [x for x in index.symbols_in(path) if x.kind == "class" and x.qualname == cls]
        inits = [x for x in index.symbols_in(path) if x.kind == "function" and x.qualname == f"{cls}.__init__"]
        if len(syms) != 1 or len(inits) != 1:
            return None
        sites = [c for c in index.callers(syms[0].name) if c.path in reach]
        if not sites:
            return None
        out = set()
        for site in sites:
            known, arg = site.argument_for(inits[0], param)
            if not known:
                handed = self._forwarded_values(index, site, param, default, reach, 0)
                if handed is None:
                    return None
                out |= handed
                continue
            if arg is None:
                out.add(default)
                continue
            if arg.kind not in ("constant", "number", "string"):
                return None
            try:
                out.add(ast.literal_eval(arg.text))
            except (ValueError, SyntaxError):
                return None
        return out

    def _forwarded_values(self, index: ProjectIndex, site, param: str, default, reach: set, depth: int) -> Optional[set]:
        """What reaches ``param`` through a call ``site`` that hands on the ``**kwargs`` of the function it sits in
        (insightface's ``_iresnet(arch, block, layers, pretrained, progress, **kwargs)`` building ``IResNet(block,
        layers, **kwargs)``, called by ``iresnet50(pretrained=False, progress=True, **kwargs)``, called by
        ``get_model(name, **kwargs)``, called as ``get_model(cfg.arcface_model, input_size=...)``): the literal each
        call of that function in ``reach`` passes as ``param=``, the ``default`` where none does, followed up
        through calls that hand on their own ``**kwargs`` in turn (three functions up); None when it cannot be told
        (a ``*args`` / a non-literal, ``param`` a named parameter of a function on the way)."""
        if depth >= 3 or any(a.how == "*" for a in site.args):
            return None
        spread = [a for a in site.args if a.how == "**"]
        fn = index.symbol(site.caller)
        if len(spread) != 1 or spread[0].kind != "name" or fn is None or fn.kind != "function" or not fn.varkw \
                or param in fn.params or param in fn.kwonly:
            return None
        calls = [c for c in index.callers(fn.name) if c.path in reach and not self.is_test(c.path)]
        if len(calls) > 16:
            return None
        # (a function no call in this program's files makes hands nothing on: ``iresnet120`` beside ``get_model``)
        out = set()
        for call in calls:
            given = [a for a in call.args if a.how == param]
            if given:
                if given[0].kind not in ("constant", "number", "string"):
                    return None
                try:
                    out.add(ast.literal_eval(given[0].text))
                except (ValueError, SyntaxError):
                    return None
            elif any(a.how == "**" for a in call.args):
                handed = self._forwarded_values(index, call, param, default, reach, depth + 1)
                if handed is None:
                    return None
                out |= handed
            else:
                out.add(default)
        return out

    def _wrapper_built_off(self, index: ProjectIndex, path: Path, cls: str, reach: set, off) -> Optional[str]:
        """Why the half-casting wrapper class ``cls`` (of ``path``) is built in none of the runs: every construction of it
        in ``reach`` sits under ``if self.<attr>:`` of a constructor option that is off there (``off``), else None."""
        syms = [x for x in index.symbols_in(path) if x.kind == "class" and x.qualname == cls]
        if len(syms) != 1:
            return None
        sites = [c for c in index.callers(syms[0].name) if c.path in reach]
        if not sites:
            return None
        whys = []
        for site in sites:
            builds = [b for b in self.facts().get(site.path, {}).get("conditional_builds", ())
                      if b["line"] == site.line and b["callee"].rsplit(".", 1)[-1] == cls]
            why = off(site.path, builds[0]) if len(builds) == 1 else None
            if why is None:
                return None
            whys.append(why)
        return f"`{cls}` is built only where {whys[0]}"

    def _option_values(self, entry: Path, option: str, reach: set) -> List[Tuple[str, str]]:
        """The values an entry point's runs give a command-line option, each with where it is stated: those the
        shell scripts naming the program pass, else the option's string default in the files the entry point
        reaches (when they agree)."""
        found = [(value, f"{self.display(script)}:{line}") for script, options, _ in self._shell_runs_of(entry)
                 for line, name, value in options if name.replace("-", "_") == option]
        if found:
            return found
        defaults = {self.facts().get(q, {}).get("option_defaults", {}).get(option, "") for q in reach} - {""}
        default = [(next(iter(defaults)), "its default")] if len(defaults) == 1 and isinstance(next(iter(defaults)), str) \
            else []
        # the YAML configs of the program that set it (lingua: a dataclass field ``model_dtype: str = "bf16"`` that
        # ``distributed: {model_dtype: fp16}`` in configs/ beside train.py sets, M14-2): those runs', and the default's
        # of a run given none
        configured = self._config_option_values(entry, option)
        return configured + [d for d in default if d[0].lower() not in {v.lower() for v, _ in configured}]

    def _config_option_values(self, entry: Path, option: str) -> List[Tuple[str, str]]:
        """The string values the YAML configs of the program ``entry`` (``_config_applies``) give a setting whose
        last key is ``option``, each with where it is written."""
        from .config_evidence import config_leaves  # noqa: PLC0415 (a leaf module; only option reads ask)
        memo = self.memo("config_options")
        if option not in memo:  # every YAML's values of the option, read once per option
            word = re.compile(rb"(?m)^\s*" + re.escape(option.encode()) + rb"\s*:")
            found: List[Tuple[Path, str, str]] = []
            for cfile in self.config_files():
                if cfile.suffix not in (".yaml", ".yml"):
                    continue
                try:
                    text = self.read(cfile)
                except OSError:
                    continue
                if not word.search(text):
                    continue
                for k, v in config_leaves(text, cfile.name).items():
                    if k.rsplit(".", 1)[-1] == option and isinstance(v, (str, int)) and not isinstance(v, bool):
                        found.append((cfile, str(v), f"`{option}: {v}` in {self.display(cfile)}"))
            memo[option] = found
        out: List[Tuple[str, str]] = []
        for cfile, value, where in memo[option]:
            if value not in {x for x, _ in out} and _config_applies(cfile, entry, self.root) \
                    and not _nearer_program(cfile, entry):
                out.append((value, where))
        return out

    def launcher_options(self, path: Path, option: str) -> List[str]:
        """The values the shell scripts that run the program ``path`` pass its option ``option`` (``adam_epsilon``;
        the dtype, precision and optimizer options ``config_evidence.shell_options`` reads)."""
        return [value for _, options, _ in self._shell_runs_of(self.resolved(path))
                for _, name, value in options if name.replace("-", "_") == option]

    def _launched_without(self, config: Path, entry: Path) -> bool:
        """Do the shell scripts that run the program ``entry`` exist and all run it without DeepSpeed (none names
        DeepSpeed nor the configuration file ``config``), in a program that does not run DeepSpeed itself (``import
        deepspeed``, ``deepspeed.initialize``), with no other configuration file naming ``config`` (a YAML's
        ``deepspeed: ds_zero2.json``) and no mention of it in the program's code?"""
        runs = self._shell_runs_of(entry)
        if not runs or any(deepspeed or config.name in text for _, _, (deepspeed, text) in runs):
            return False
        try:
            source = self.read(entry)
        except OSError:
            return False
        if _DEEPSPEED_PROGRAM.search(source) or config.name.encode() in source:
            return False
        return not self._named_by_another_config(config)

    def _runs_no_deepspeed(self, config: Path, entry: Path, reach: set) -> bool:
        """Does the program ``entry`` run without DeepSpeed whatever it is given: no file it reaches names DeepSpeed in
        its code (``import deepspeed``, ``--deepspeed``, ``DeepSpeedStrategy``: ``precision_facts._names_deepspeed``),
        none uses a framework's trainer that takes a DeepSpeed config from its command line or its own config
        (transformers' Trainer / TrainingArguments, accelerate's Accelerator, Lightning's Trainer, trl, mmengine's
        Runner), no launcher script of it names DeepSpeed or ``config``, and no other
        configuration file names ``config``?"""
        facts = self.facts()
        for q in reach:
            f = facts.get(q)
            if f is None or self.is_test(q):
                continue
            if f.get("deepspeed") or f.get("deepspeed_framework"):
                return False
        if any(deepspeed or config.name in text for _, _, (deepspeed, text) in self._shell_runs_of(entry)):
            return False
        return not self._named_by_another_config(config)

    def _named_by_other_programs(self, config: Path, entry: Path, reach: set, importers: Dict[Path, set]) -> bool:
        """Is the JSON file ``config`` named by a string in the code of some of the project's files (its file name:
        ``deepspeed_config="./deepspeed.json"``), none of them a file the program ``entry`` reaches or one that runs
        it, with no launcher script of the program and no other configuration file naming it?"""
        memo = self.memo("shell_runs")
        if "json_namers" not in memo:  # JSON file name -> the files naming it, once per run
            namers_of: Dict[str, List[Path]] = {}
            for q, f in self.facts().items():
                for name in f.get("json_names", ()):
                    namers_of.setdefault(name, []).append(q)
            memo["json_namers"] = namers_of
        namers = memo["json_namers"].get(config.name, [])
        if not namers:
            return False
        if any(q in reach for q in namers) or set(namers) & _closure(entry, importers):
            return False
        if any(config.name in text for _, _, (_, text) in self._shell_runs_of(entry)):
            return False
        return not self._named_by_another_config(config)

    def _named_by_another_config(self, config: Path) -> bool:
        memo = self.memo("shell_runs")
        if "named_configs" not in memo:
            texts = []
            for f in self.config_files():
                if f.suffix not in (".sh", ".md"):
                    try:
                        if os.path.getsize(f) <= 256 * 1024:  # (bigger ones are data, config_evidence.MAX_CONFIG_BYTES)
                            texts.append((f, self.read(f)))
                    except OSError:
                        continue
            memo["named_configs"] = texts
        name = config.name.encode()
        return any(name in text for f, text in memo["named_configs"] if f != config)

    def _shell_runs_of(self, entry: Path) -> List[Tuple[Path, List[Tuple[int, str, str]], Tuple[bool, str]]]:
        """The shell scripts that name the program ``entry``: (script, the dtype / precision options it passes as
        (line, option, value), (whether it names DeepSpeed, its text)). A Markdown file's documented commands
        (``config_evidence.markdown_commands``) are its runs: only those that name ``entry`` are its text (a
        page documents many programs' runs)."""
        from .config_evidence import shell_options
        memo = self.memo("shell_runs")
        if "scripts" not in memo:
            scripts = []
            for f in self.config_files():
                if f.suffix not in (".sh", ".md"):
                    continue
                try:
                    text = self._launcher_text(f)
                except OSError:
                    continue
                programs = self._shell_named_programs(text)
                if not programs:
                    continue
                if f.suffix == ".md":
                    spans = [(start, end, self._shell_named_programs(c)) for start, end, c in _command_spans(text)]
                    scripts.append((f, programs, [(start, end, named) for start, end, named in spans if named], text))
                else:
                    # (each command's options as it runs, its variables expanded: per command, like its switches)
                    spans = [(start, self._shell_named_programs(c), shell_options(c)) for start, _, c in _command_spans(text)]
                    scripts.append((f, programs, (shell_options(text), [s for s in spans if s[1]]),
                                    (bool(_DEEPSPEED_WORD.search(text)), text)))
            memo["scripts"] = scripts
        out = []
        for f, programs, options, ds in memo["scripts"]:
            if not self._names_program(f, programs, entry):
                continue
            if f.suffix == ".sh":
                # the options of the commands that run the program (a script running train.py with --torch_dtype
                # bfloat16 and eval.py with --torch_dtype float16 gives train.py bfloat16); a script naming it only
                # through what is not expanded: all its options
                whole, spans = options
                own = [(start, name, value) for start, named, found in spans if self._names_program(f, named, entry)
                       for _, name, value in found]
                options = own if any(self._names_program(f, named, entry) for _, named, _ in spans) else whole
            elif f.suffix == ".md":
                lines = ds.splitlines()
                kept = [""] * len(lines)
                for start, end, named in options:
                    if self._names_program(f, named, entry):
                        kept[start - 1:end] = lines[start - 1:end]
                text = "\n".join(kept)
                options, ds = shell_options(text), (bool(_DEEPSPEED_WORD.search(text)), text)
            out.append((f, options, ds))
        return out

    def _launchers(self, trainers: List[Tuple[Path, List[dict]]]) -> List[Tuple[Path, List[dict]]]:
        """The files that run a training loop defined in another file and train nothing themselves,
        each with the functions that call it: llama-recipes' ``finetuning.py`` builds the model (in
        float16 when ``use_fp16``) and its AdamW, then calls ``train(model, ..., optimizer)`` from
        ``utils/train_utils.py``; DETR's ``main.py`` builds the model and calls ``engine.train_one_epoch``.
        Such a file is the program the loop runs in: its casts, optimizers and the models it builds are
        judged under that run, and it becomes the entry point (the loop's file is then its helper).
        Only calls of module-level functions count (a subclass calling ``self.fit_batch`` is no
        program), and test files run no training."""
        index = self.index
        known = {path for path, _ in trainers}
        found: Dict[Path, Dict[str, dict]] = {}
        todo = list(trainers)
        while todo:
            path, functions = todo.pop()
            names = {e["function"] for e in functions}
            stepping = {e["function"] for e in functions if "optimizer step" in e["why"] or LOSS_SCALER_CALL in e["why"]}
            # a method handing the model to a trainer (FlagEmbedding's ``AbsRunner.run``: ``self.trainer.train()``,
            # the Trainer built in ``__init__``) runs the training of whoever builds the class, as a stepping one does
            handing = {e["function"] for e in functions
                       if any(w not in ("backward", "optimizer step", LOSS_SCALER_CALL) and not w.startswith("runs ")
                              for w in e["why"])}
            for sym in index.symbols_in(path):
                if sym.kind != "function" or sym.qualname.rsplit(".", 1)[-1] not in names:
                    continue
                sites = list(index.callers(sym.name)) if not sym.is_method and sym.qualname in names else []
                via = {}
                if not sym.is_method and sym.qualname in names:
                    # the loop's own file runs it from its module-level functions (Megatron's
                    # ``pretrain()`` -> ``train()`` -> ``train_step()``): a program calling one of them runs it
                    for runner in self._runs_in_file(path, sym):
                        for site in index.callers(runner.name):
                            if site.path != path:
                                sites.append(site)
                                via[id(site)] = runner.qualname
                cls = index.symbol(sym.name.rsplit(".", 1)[0]) if sym.is_method else None
                if cls is not None and cls.kind == "class" and sym.qualname.rsplit(".", 1)[-1] in stepping | handing:
                    # a trainer class whose method steps the optimizer (or hands the model to a trainer), built by a
                    # program's function or module-level code in another file (seamless_communication's finetune.py:
                    # the model loaded in float16, then ``UnitYFinetune(model=model, ...).run()`` from trainer.py), or a
                    # subclass of it (FlagEmbedding's ``python -m ...finetune.embedder.encoder_only.base``: its
                    # ``__main__.py`` builds ``EncoderOnlyEmbedderRunner(...)`` and calls ``run()`` of ``AbsRunner``)
                    built = [cls] + [c for c in index.subclasses(cls.name)
                                     if index.symbol(f"{c.name}.{sym.qualname.rsplit('.', 1)[-1]}") is None]
                    sites = [c for k in built for c in list(index.callers(k.name)) + self._lookup_sites(k)
                             if c.caller == index.module_level(c.path) or not (index.symbol(c.caller) and
                                                                               index.symbol(c.caller).is_method)]
                for site in sites:
                    if site.path in known or site.on_self or self.is_test(site.path):
                        continue
                    module = index.module_level(site.path)
                    caller = site.caller[len(module) + 1:] if site.caller != module else "<module>"
                    defined = index.symbol(site.caller) if caller != "<module>" else None
                    line = defined.line if defined is not None else site.line
                    rel = self.relative(path)
                    e = found.setdefault(site.path, {}).setdefault(caller, {"function": caller, "line": line, "why": [],
                                                                            "runs": []})
                    why = f"runs the training loop `{sym.qualname}` of {rel}" + \
                        (f" (through `{via[id(site)]}`)" if id(site) in via else "")
                    if why not in e["why"]:
                        e["why"].append(why)
                        e["runs"].append(str(path))
            for p in list(found):
                if p not in known:
                    known.add(p)
                    todo.append((p, sorted(found[p].values(), key=lambda e: e["line"])))
        return [(p, sorted(fs.values(), key=lambda e: e["line"])) for p, fs in sorted(found.items())]

    def _lookup_sites(self, cls: Symbol) -> list:
        """The calls of the module-level functions of ``cls``'s file that look a class of that file up by
        its name (DomainBed's ``get_algorithm_class(name)``: ``return globals()[name]``): each may build
        ``cls``, so a program calling one and then the loop method of what it gets runs that loop."""
        index = self.index
        try:
            lines = self.read(cls.path).decode("utf-8", "replace").splitlines()
        except OSError:
            return []
        sites = []
        for sym in index.symbols_in(cls.path):
            if sym.kind != "function" or sym.is_method:
                continue
            body = []
            for line in lines[sym.line:]:
                if line.strip() and not line[:1].isspace():
                    break
                body.append(line)
            if any(_NAME_LOOKUP.search(line) for line in body):
                sites.extend(index.callers(sym.name))
        return sites

    def _runs_in_file(self, path: Path, sym: Symbol) -> List[Symbol]:
        """The module-level functions of ``path`` other than ``sym`` that call the module-level function
        ``sym``, directly or through one another (a few levels: Megatron's ``pretrain`` calls ``train``,
        which calls ``train_step``)."""
        index = self.index
        found: List[Symbol] = [sym]
        seen = {sym.name}
        i = 0
        while i < len(found) and len(found) < 8:
            for site in index.callers(found[i].name):
                if site.path != path or site.caller in seen:
                    continue
                seen.add(site.caller)
                defined = index.symbol(site.caller)
                if defined is not None and defined.kind == "function" and not defined.is_method:
                    found.append(defined)
            i += 1
        return found[1:]

    def _live_in_own_file(self, facts: dict, path: Path, functions: List[dict]) -> dict:
        """``facts`` of an entry point's own file, less the evidence in its module-level functions
        that nothing in the project calls and that do not lead to the entry point's training
        functions (LAVIS's vendored mmcv: ``wrap_fp16_model(model)`` beside an optimizer hook's
        ``after_train_iter``, never called: not the hook's precision). Methods stay (a framework
        calls them); so does a function the call graph does not know."""
        index = self.index
        defined = {s.qualname: s for s in index.symbols_in(path) if s.kind == "function" and not s.is_method}
        if not defined:
            return facts
        module = self.module_name(path) or ""
        trains = {f"{module}.{e['function']}" for e in functions}
        dead = set()
        for s in facts["signals"]:
            fn = s.get("function")
            sym = defined.get(fn) if fn else None
            if sym is None or fn in dead or fn in {e["function"] for e in functions}:
                continue
            if not index.callers(sym.name) and not (index.reachable([sym.name]) & trains):
                dead.add(fn)
        if not dead:
            return facts
        return {**facts, "signals": [s for s in facts["signals"] if s.get("function") not in dead]}

    def _launcher_trainer_signals(self, path: Path, functions: List[dict]) -> List[Tuple[Signal, Evidence]]:
        """A project subclass of a trainer whose precision is accelerate's (``class Yolov7Trainer(
        pytorch_accelerated.Trainer)``), built by the entry point's training functions: the launcher
        sets the precision, as for the trainer itself (``precision_facts._launcher_signal``)."""
        index = self.index
        trainers = {s.name for base in LAUNCHER_TRAINERS for s in index.subclasses(base)}
        module = self.module_name(path)
        if not trainers or module is None:
            return []
        out = []
        for fn in {f["function"] for f in functions}:
            caller = module if fn in (None, "<module>") else f"{module}.{fn}"
            for site in index.calls_from(caller):
                found = index.resolve(site.callee, module)
                if found is not None and found.name in trainers:
                    note = f"`{found.qualname}` derives from a pytorch_accelerated trainer: the precision is the launcher's"
                    out.append((Signal("launcher", "", note=note),
                                Evidence(f"`{site.callee}(...)`", self.display(path), site.line)))
        return out

    @staticmethod
    def _calls_training_of(other: "EntryPoint", e: "EntryPoint", reached_of: Dict[Path, "_Reached"]) -> bool:
        """Does ``other``'s code run ``e``'s training functions (module-level training code runs on import,
        unless it is a launcher's call in a program's ``__main__`` block: Megatron's pretrain_vlm.py imports
        ``loss_func`` from pretrain_gpt.py, whose ``pretrain(...)`` runs only as a program)?"""
        reached = reached_of[other.path]
        return any(not (f.get("runs") and e.script) if f["function"] == "<module>"
                   else reached.holds(e.path, f["function"]) for f in e.functions)

    def _call_signals(self, path: Path, facts: dict, reached: Optional["_Reached"] = None) -> List[Tuple[Signal, Evidence]]:
        """The training evidence of ``facts``' trainer precisions set by a call of a project function
        (litgpt's ``precision or get_default_supported_precision(training=True)``, returning "16-mixed"
        or "bf16-mixed" by the hardware): what the function returns on the branches the call selects.
        ``reached``: only calls in functions an entry point's code calls (litgpt's ``LLM.distribute``
        builds an inference Fabric in a module every script imports)."""
        out = []
        for call in facts.get("precision_calls", ()):
            if call.get("role") != TRAINING:
                continue
            if reached is not None and call.get("function") and not reached.holds(path, call["function"]):
                continue
            if call.get("setting") or call.get("key"):
                sig = self._setting_precision(call["setting"]) if call.get("setting") else \
                    self._sacred_precision(path, call["key"])
                if sig is not None:
                    out.append((sig, Evidence(f"`{call['text']}`", self.display(path), call["line"])))
                continue
            returns = self._precision_function(facts, call["callee"])
            sig = precision_call_signal(call, precision_call_values(call, returns)) if returns else None
            if sig is not None:
                out.append((sig, Evidence(f"`{call['text']}`", self.display(path), call["line"])))
        return out

    def _external_trainer_entry_points(self, eps: List["EntryPoint"]) -> List["EntryPoint"]:
        """The packages an external trainer's command line trains (Uni-Mol's README: ``unicore-train ... --user-dir
        ./unimol ... --fp16``; fairseq's ``fairseq-train --user-dir``, M16-1): an entry point for each such directory,
        reaching its files (beside the package's own loops: Uni-Mol's pose refinement), with that command's precision as
        evidence
        (``--fp16``: a half model with float32 master weights, the trainer's FP16Optimizer; ``--bf16`` likewise in
        bfloat16; ``--amp``: fp16 autocast)."""
        runs = self._external_trainer_runs()
        if not runs:
            return []
        files = [f for f in self.files() if not self.is_test(f)]
        out: Dict[Path, EntryPoint] = {}
        for directory, trainer, sig, source, line, text in runs:
            below = {f for f in files if directory in f.parents}
            if not below:
                continue
            init = directory / "__init__.py"
            path = init if init in below else sorted(below)[0]
            if path not in out:  # one entry point per package, with the evidence of each command training it
                functions = [{"function": f"<{trainer}>", "line": 1, "why": [f"{trainer} --user-dir"]}]
                out[path] = EntryPoint(path, self.display(path), functions, below, [], [])
            if sig is not None:
                ev = Evidence(f"`{text}`", self.display(source), line)
                out[path].signals.append((sig, ev))
                out[path].roles.append((TRAINING, str(ev), f"the command line of the external trainer {trainer}"))
        return list(out.values())

    def _external_trainer_runs(self) -> List[Tuple[Path, str, Optional[Signal], Path, int, str]]:
        """(user directory, trainer, precision signal or None, file, line, command) of each ``fairseq-train`` / ``unicore-train``
        command naming a ``--user-dir`` in the project's shell scripts and README files."""
        memo = self.memo("shell_runs")
        if "external" not in memo:
            sources = [f for f in self.config_files() if f.suffix == ".sh"]
            sources += sorted(self.root.glob("README*.md")) + sorted(self.root.glob("*/README*.md"))
            out = []
            for f in sources:
                try:
                    text = self.read(f).decode("utf-8", "replace")
                except OSError:
                    continue
                if "--user-dir" not in text or not _EXTERNAL_TRAINER.search(text):
                    continue
                lines = text.splitlines()
                i = 0
                while i < len(lines):
                    start, command = i + 1, lines[i].split("#", 1)[0]
                    while command.rstrip().endswith("\\") and i + 1 < len(lines):
                        i += 1
                        command = command.rstrip()[:-1] + " " + lines[i].split("#", 1)[0]
                    i += 1
                    m = _EXTERNAL_TRAINER.search(command)
                    d = _USER_DIR.search(command)
                    if not (m and d):
                        continue
                    target = d.group(1).strip("\"'").rstrip("/")
                    bases = [f.parent, self.root]
                    rooted = _VARIABLE_ROOTED.fullmatch(target)
                    if rooted and "$" not in rooted.group(1):
                        # ``--user-dir $EXP_HOME/FastCorrect`` with ``EXP_HOME=$(cd `dirname $0`; pwd)/..`` (NeuralSpeech,
                        # P21-3): a directory of that name beside the script or in a directory above it
                        target = rooted.group(1)
                        bases = [b for b in f.parents if b == self.root or self.root in b.parents]
                    if "$" in target:
                        continue
                    directory = next((b / target for b in bases if (b / target).is_dir()), None)
                    if directory is None:
                        continue
                    directory = directory.resolve()
                    flags = set(_EXTERNAL_FLAG.findall(command))
                    sig = Signal("flag", "float16", pure=True, note=f"{m.group(0)} --memory-efficient-fp16: half "
                                 f"parameters") if "memory-efficient-fp16" in flags else \
                        Signal("flag", "float16", pure=True, master=True, note=f"{m.group(0)} --fp16: a half model, "
                               f"float32 master weights") if "fp16" in flags else \
                        Signal("flag", "bfloat16", pure=True, master=True, note=f"{m.group(0)} --bf16") \
                        if "bf16" in flags else \
                        Signal("flag", "float16", note=f"{m.group(0)} --amp: fp16 autocast") if "amp" in flags else None
                    text = " ".join(command[m.start():].split())
                    out.append((directory, m.group(0), sig, f, start, text if len(text) <= 60 else text[:57] + "..."))
            memo["external"] = out
        return memo["external"]

    def _setting_precision(self, setting: str) -> Optional[Signal]:
        """The precision a trainer given ``precision=configs.trainer.precision`` runs in, by the project's structured-config
        dataclasses for that section (openspeech: ``GPUTrainerConfigs.precision = 32``, ``Fp16GPUTrainerConfigs.precision
        = 16``, picked by ``trainer=gpu-fp16`` on the command line, M16-2): one of their values, float16 first."""
        section = setting.split(".")[-2].lower()
        values = sorted({v for f in self.facts().values() for cls, _, v in f.get("setting_fields", ())
                         if section in cls.lower()})
        half = [v for v in values if v.lower() in _LIGHTNING_VALUES]
        if not half:
            return None
        half.sort(key=lambda v: _LIGHTNING_VALUES[v.lower()][0] != "float16")
        dtype, pure = _LIGHTNING_VALUES[half[0].lower()]
        others = [v for v in values if v != half[0]]
        note = f"precision={half[0]} of the `{section}` configs" + (f" (one of {', '.join(values)})" if others else "")
        return Signal("flag", dtype, pure=pure, note=note, conditional=bool(others),
                      condition=f"`{setting}` is one of {', '.join(values)}" if others else "")

    def _sacred_precision(self, path: Path, key: str) -> Optional[Signal]:
        """The precision a trainer given ``precision=_config["precision"]`` runs in, by the sacred experiment's config
        functions in the file ``path`` or the project files it imports (ViLT's ``@ex.config def config(): precision =
        16``, P21-2): the default config's value, or one of it and the named configs' (``with task_x``) values, float16
        first. None where no such config says it."""
        facts, graph = self.facts(), self._import_graph()
        values, default = [], None
        for q in sorted(_closure(path, graph)):
            for name, kind, settings in facts.get(q, {}).get("sacred_configs", ()):
                if key in settings:
                    value = str(settings[key])
                    default = value if kind == "config" and default is None else default
                    if value not in values:
                        values.append(value)
        if default is None:
            return None  # (named configs alone: a run without one takes Lightning's default)
        half = [v for v in values if v.lower() in _LIGHTNING_VALUES]
        if not half:
            return None
        half.sort(key=lambda v: (_LIGHTNING_VALUES[v.lower()][0] != "float16", v != default))
        dtype, pure = _LIGHTNING_VALUES[half[0].lower()]
        others = [v for v in values if v != half[0]]
        note = f"precision={half[0]} of the sacred configs (default {default}" + \
            (f"; one of {', '.join(values)})" if others else ")")
        return Signal("flag", dtype, pure=pure, note=note, conditional=bool(others),
                      condition=f"`{key}` is one of {', '.join(values)}" if others else "")

    def _precision_function(self, facts: dict, name: str) -> Optional[list]:
        """What the function ``name`` called in the file of ``facts`` returns, when it is a precision
        function (``precision_facts._precision_functions``) of that file or of a module it imports."""
        own = facts.get("precision_functions", {}).get(name)
        if own:
            return own
        modules = self._module_paths()
        for imported in facts.get("imports", ()):
            module, _, last = imported.rpartition(".")
            target = modules.get(module) if last == name else None
            if target is not None:
                found = self.facts().get(self.resolved(target), {}).get("precision_functions", {}).get(name)
                if found:
                    return found
        return None

    def _runs_master(self, reach: set) -> bool:
        """Does code in ``reach`` (an entry point's files) use one of the project's master-weights optimizers: call a
        library one (apex's ``FP16_Optimizer``), or build / call a method of a class the project defines
        (fairseq's ``FP16Optimizer.build_optimizer(...)``)? sentiment-discovery's finetune_classifier.py imports
        ``FP16_Optimizer`` beside its pre-training scripts and never wraps its Adam in it: a pure half run (M17-1).
        A class the index does not know counts as used."""
        memo = self.memo("runs_master")
        key = frozenset(reach)
        if key not in memo:
            facts, index, used = self.facts(), self.index, False
            for p, f in facts.items():
                if used or self.is_test(p):
                    continue
                for name in f.get("master_optimizers", ()):
                    classes = [x for x in index.symbols_in(p) if x.kind == "class" and x.qualname == name]
                    if not classes:
                        used = used or p in reach  # a library's optimizer, called in ``p``
                        continue
                    members = [x for x in index.symbols_in(p) if x.qualname == name or x.qualname.startswith(name + ".")]
                    inside = classes[0].name + "."  # (the class's own methods calling each other)
                    if any(site.path in reach and not site.caller.startswith(inside)
                           for x in members for site in index.callers(x.name)):
                        used = True
            memo[key] = used
        return memo[key]

    def master_optimizers(self) -> List[str]:
        """The optimizer classes of the project that keep float32 master weights of a half model
        (``file:Class``): a project that ships one trains its half models through it (fairseq's
        ``--fp16``), so its half casts are "half model with fp32 master weights"."""
        return [f"{self.display(p)}:{c}" for p, f in self.facts().items() if not self.is_test(p)
                for c in f.get("master_optimizers", ())]

    def _import_graph(self) -> Dict[Path, set]:
        """Each file -> the project files it imports; built once (the entry points, the run
        configs of each entry point and the programs' imports all read it: at 1M lines each build
        was ~0.4 s, made a dozen times)."""
        graph = self.__dict__.get("_imports_of")
        if graph is None:
            graph = self._imports_of = self._built_import_graph()
        return graph

    def _built_import_graph(self) -> Dict[Path, set]:
        modules = {name: self.resolved(p) for name, p in self._module_paths().items()}
        facts = self.facts()
        names = {path: graph.get("names", {}) for path, graph in self.index._graphs.items()}
        packages = {p: m for m, p in modules.items() if p.name == "__init__.py"}
        graph: Dict[Path, set] = {}
        for path, f in facts.items():
            targets = set()
            module = f["module"] or ""
            package = module.rpartition(".")[0]
            # the packages this file imports names from (``from pkg import X`` lists ``pkg`` and ``pkg.X``)
            named_from = {n.rpartition(".")[0] for n in f["imports"]}
            for name in f["imports"]:
                for base in _candidates(name, package, self.index._sibling_first(name, package)):
                    # a guess relative to the importing package (``<pkg>.torch`` for ``import torch``) counts
                    # only when it names a module of the package under the imported name's first part, never
                    # the package itself: that made every ``import torch`` of modelscope/models/nlp/mglm/
                    # an import of its __init__, and so of every model of the package (T9-5)
                    floor = base.count(".") - name.count(".") + 1
                    hit = _longest_module(base, modules, floor)
                    if hit is not None:
                        if hit.name == "__init__.py" and base in modules and name in named_from:
                            break  # ``from pkg import X``: what runs is X's module (below), not all pkg imports
                        via = _reexport_targets(base, hit, modules, packages, names) \
                            if hit.name == "__init__.py" else None
                        targets.update(via if via else (hit,))
                        targets.update(_lazy_targets(base, modules, facts))
                        break
            targets.discard(path)
            graph[path] = targets
        self._add_config_target_edges(graph, modules)
        # the files a literal ``importlib.import_module("pkg.trainer")`` loads (the module; a package's __init__ and
        # the files it imports): which of their functions run, a name looked up by string decides (``_dynamic_loads``)
        dynamic: Dict[Path, set] = {}
        for path, f in facts.items():
            for name in f.get("dynamic_imports", ()):
                hit = modules.get(name)
                if hit is None or hit == path:
                    continue
                dynamic.setdefault(path, set()).update({hit} | (graph.get(hit, set()) if hit.name == "__init__.py" else set()))
        self._dynamic_of = dynamic
        return graph

    def _dynamic_loads(self, reach: set) -> set:
        """The files that a file of ``reach`` loads by a literal module name (``importlib.import_module``), with
        what their packages re-export: RecBole's ``get_trainer`` does ``getattr(importlib.import_module(
        "recbole.trainer"), model_name + "Trainer")``, a class the call graph cannot name (M16-4)."""
        self._import_graph()
        dynamic = self.__dict__.get("_dynamic_of") or {}
        return {t for q in reach for t in dynamic.get(q, ())}

    def _add_config_target_edges(self, graph: Dict[Path, set], modules: Dict[str, Path]) -> None:
        """Add to ``graph`` the modules that a program builds from the ``target:`` strings of its YAML
        configs (latent-diffusion's ``instantiate_from_config``: ``target: ldm.models.autoencoder.AutoencoderKL``):
        a program (a script, an entry point's file) whose static imports lead to a file that loads modules by
        name (``loads_modules``) imports the modules that the ``target:`` strings of the configuration files
        belonging to it (``_config_applies``, or under a Hydra program's ``config_path``) name, resolved as it imports
        (beside it first, then from the root); Hydra's ``_target_:`` keys (``hydra.utils.instantiate``) as well.
        So a model reached only through configs has the precision and role of the programs loading them: an
        inference demo's CLAP (Lumina-T2X's audio sub-app, T11-4), a training's codec (VQ-Diffusion, T13-3)."""
        targets_of = self._config_targets()
        if not targets_of:
            return
        facts = self.facts()
        loaders = {p for p, f in facts.items() if f.get("loads_modules")}
        if not loaders:
            return
        # the files whose static imports lead to a loader (one walk up the import graph from the loaders)
        importers: Dict[Path, set] = {}
        for src, dsts in graph.items():
            for dst in dsts:
                importers.setdefault(dst, set()).add(src)
        leading = _closure_of(loaders, importers)
        programs = [p for p in sorted(leading) if not self.is_test(p) and p in facts and (
            facts[p].get("script") or facts[p].get("entry_points") or facts[p].get("runs_at_top"))]
        for config, names in targets_of.items():
            applies = [p for p in programs if _config_applies(config, p, self.root) or any(
                (p.parent / d).resolve() in (config.parent, *config.parent.parents)
                for d in facts[p].get("hydra_config_paths") or ())]
            # a config beside programs of its own (a sub-app's demo and its config.yaml) is theirs, not also that of a
            # program in a directory above (the repository's trainer at the root): the nearest directory holding one
            above = [p for p in applies if p.parent == config.parent or p.parent in config.parents]
            if above:
                nearest = max((p.parent for p in above), key=lambda d: len(d.parts))
                applies = [p for p in applies if p.parent == nearest or nearest in p.parent.parents]
            for path in applies:
                package = (facts[path].get("module") or "").rpartition(".")[0]
                for name in names:
                    for base in _candidates(name, package, sibling_first=True):
                        hit = modules.get(base.rpartition(".")[0]) or modules.get(base)
                        if hit is not None:
                            if hit != path:
                                graph[path].add(hit)
                            break

    def _config_targets(self) -> Dict[Path, List[str]]:
        """The dotted names of the ``target:`` / Hydra ``_target_:`` keys of each YAML configuration file
        (``target: pkg.mod.Class``)."""
        memo = self.memo("config_targets")
        if "all" not in memo:
            found: Dict[Path, List[str]] = {}
            for f in self.config_files():
                if f.suffix not in (".yaml", ".yml"):
                    continue
                try:
                    text = f.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                names = list(dict.fromkeys(m.group(1) for m in _TARGET_KEY.finditer(text)))
                if names:
                    found[self.resolved(f)] = names
            memo["all"] = found
        return memo["all"]

    @property
    def regime(self) -> Regime:
        if self._regime is None:
            self._regime = self._cached_derived(("regime",), self._computed_regime)
        return self._regime

    def _computed_regime(self) -> Regime:
        """The project's precision as a whole: the training evidence of its entry points (or,
        with none, of every file), for code that is judged by the project rather than by an entry
        point reaching it."""
        if self._regime is None:
            eps = self.entry_points()
            if eps and all(self.vendored_hook(ep) for ep in eps):
                # the only training is a vendored library's hooks: no run of the project, no precision
                self._regime = Regime([], self._override, "project: no training entry point of its own "
                                      "(only a vendored library's hooks)")
                return self._regime
            eps = [ep for ep in eps if not self.vendored_hook(ep)]
            signals: List[Tuple[Signal, Evidence]] = []
            origins: Dict[Tuple[Signal, Evidence], List[str]] = {}
            if eps:
                for ep in eps:
                    for x in ep.signals:
                        if x not in origins:
                            signals.append(x)
                        origins.setdefault(x, []).append(ep.name())
                scope = "project: its training entry points"
            else:
                signals = list(self.evidence_anywhere.signals)
                scope = "project: no training entry point found"
            self._regime = Regime(signals, self._override, scope, tuple(ep.name() for ep in eps),
                                  tuple(tuple(origins[x]) for x in signals) if eps else ())
        return self._regime

    @property
    def evidence_anywhere(self) -> Regime:
        """Every piece of training evidence in the project, reached by an entry point or not: for
        rules that stay silent when something (a GradScaler, a trainer's fp16 flag) exists
        anywhere, since what hands it to the loop may be out of sight."""
        if self._anywhere is None:
            # cached as the regimes are: a one-file run reads no other file's summary for it
            self._anywhere = self._cached_derived(("evidence_anywhere",), self._computed_anywhere)
        return self._anywhere

    def _computed_anywhere(self) -> Regime:
        signals: List[Tuple[Signal, Evidence]] = []
        master = bool(self.master_optimizers())  # once: it looks at every file
        for path, f in self.facts().items():
            if not self.is_test(path):
                signals.extend(signals_of(f, self.display(path), master_weights=master))
                signals.extend(self._call_signals(path, f))
        signals.extend((sig, ev) for _, sig, ev in self._config_signals())
        return Regime(signals, self._override, "project: all training evidence")

    def regime_for(self, path) -> Regime:
        """The precision ``path`` runs in: that of the entry points reaching it (judged under all
        of them: its evidence names the entry point). A file no entry point reaches gets the
        project's precision when the entry points agree on one, and none (library code, judged
        by the library policy) when they do not; a test file gets none."""
        if self._override:
            return self.regime
        key = self.resolved(Path(path))
        if key not in self._regimes:
            self._regimes[key] = self._cached_derived(("regime_for", str(key)), lambda: self._regime_for(key))
        return self._regimes[key]

    def _cached_derived(self, what, compute) -> Regime:
        """A regime derived from all the summaries, kept in the cache by the summaries' fingerprint
        and where paths are shown from (a run that changed no summary does not recompute the entry
        points and what they reach, nor read the summaries)."""
        if self.cache is None or self._overlay:
            return compute()
        key = digest(*what, self.facts_fingerprint(), str(self.display_base or Path.cwd()), self._override)
        found = regime_from(self.cache.derived(key))
        if found is None:
            found = compute()
            self.cache.put_derived(key, regime_data(found))
        return found

    def _regime_for(self, key: Path) -> Regime:
        if self.is_test(key):
            return Regime([], None, "test file: not training evidence, judged without a precision")
        eps = self.entry_points()
        reaching = [ep for ep in eps if key == ep.path or key in ep.reach]
        if any(ep.path == key for ep in reaching):
            # The script of another entry point, imported (a package's __init__ imports every trainer)
            # but none of whose functions or classes this entry point's code uses: its run does not run
            # that script's code (pykoi: the reward trainer's float16 model is not the SFT script's).
            reaching = [ep for ep in reaching if ep.path == key or self._uses_code_of(ep, key)]
        if reaching and all(_EXAMPLE_DIR.search(ep.display) and not ep.signals for ep in reaching) \
                and self._published_package_file(key):
            # linformer-pytorch: its examples/ train in fp32; its users train the package in fp16
            return self._library(EXAMPLES_ONLY)
        if reaching and all(self._library_loop(ep) and (not ep.signals or self._nobody_builds(ep)
                                                        and not any(sig.kind == "launcher" for sig, _ in ep.signals))
                            for ep in reaching) \
                and self._published_package_file(key):
            # kornia: ImageRegistrator.register fits a homography with Adam; its users pick their precision.
            # LAVIS's vendored mmcv: an optimizer hook's after_train_iter (GradScaler and all) whose class no file
            # of the project builds: the vendored library's loop, run by none of LAVIS's programs
            return self._library(LIBRARY_LOOPS_ONLY)
        # a vendored library's hook that nothing in the project builds is no run of the project (ControlNet's
        # copy of mmcv): the files it reaches, and those no entry point reaches, are judged by the others
        reaching = [ep for ep in reaching if not self.vendored_hook(ep)]
        eps = [ep for ep in eps if not self.vendored_hook(ep)]
        if reaching:
            signals: List[Tuple[Signal, Evidence]] = []
            origins = []
            named = []
            for ep in reaching:
                ep_signals, runs = self._signals_of_runs_naming(ep, key)
                ep_signals, selecting = self._signals_of_configs_selecting(ep_signals, key)
                named += runs + selecting
                for sig, ev in ep_signals:
                    if ev.path != ep.display:
                        ev = Evidence(f"{ev.what} (training entry point {ep.display})", ev.path, ev.line)
                    signals.append((sig, ev))
                    origins.append((ep.name(),))
            names = tuple(ep.name() for ep in reaching)
            scope = "entry point " + ", ".join(names)
            if named:
                scope += f" (the run configs naming its code: {', '.join(named)})"
            return Regime(signals, None, scope, names, tuple(origins))
        project = self.regime
        # With no entry point, evidence that says no float16 (only ``autocast(enabled=False)``
        # regions: x-transformers' and vector-quantize-pytorch's, written for callers that run them
        # under autocast) is no precision of the project's: library code.
        if not eps and project.signals \
                and all(s.kind in ("half_params", "launcher") or s.note.startswith("command line")
                        for s, _ in project.signals) \
                and not any(f.get("trains", True) for p, f in self.facts().items() if not self.is_test(p)):
            # nothing in the project trains (no backward, optimizer or trainer): its half casts and
            # flags are its inference's (whisper's --fp16 decoding: a half model after an fp32 log-mel),
            # its users' training is theirs. (An autocast region runs its code in float16 whatever for; a
            # trainer's precision, ``L.Trainer(precision="16-mixed")``, is a training's.) An accelerate
            # ``Accelerator()`` whose precision the launch picks is a launch of that inference
            # (lm-evaluation-harness's HFLM runs its evaluation data-parallel through one, T15-3).
            return self._library(NOTHING_TRAINS)
        if not eps and (not project.signals or project.mode == "fp32"):
            harness = self._harness()
            if harness is not None:
                return harness
            return self._library("the project has no training entry point and no precision evidence")
        if eps and all(not ep.signals and self._library_loop(ep) for ep in eps) and self._published_package_file(key):
            # darts: the only training is the package's own fit loop (TorchForecastingModel._train), which
            # reaches the models its subclasses build only through overrides the call graph does not
            # follow: the package's other files are its users' to run in float16, as the reached ones are
            return self._library(LIBRARY_LOOPS_ONLY)
        program = key.suffix == ".ipynb" or bool(self.facts().get(key, {}).get("script"))
        near = self._nearest_entry_points(key, eps)
        if near is not None:
            # a monorepo of models (DeepLearningExamples/PyTorch): a file of one model's directory that its
            # entry points do not import (a FastPitch copy beside HiFiGAN's train.py) is that model's, not
            # judged by a sibling model's apex O2 (BERT's run_glue.py)
            eps_near, where = near
            signals: List[Tuple[Signal, Evidence]] = []
            owners: Dict[Tuple[Signal, Evidence], List[str]] = {}
            for ep in eps_near:
                for x in ep.signals:
                    if x not in owners:
                        signals.append(x)
                    owners.setdefault(x, []).append(ep.name())
            modes = {Regime(ep.signals).mode for ep in eps_near if ep.signals}
            if len(modes) > 1 and not modes <= {"fp16-mixed", "fp16-master", "fp16"}:
                return self._unreached_library(f"no training entry point reaches it, and the entry points under {where}/ disagree")
            names = tuple(ep.name() for ep in eps_near)
            regime = Regime(signals, None, "", names, tuple(tuple(owners[x]) for x in signals))
            programs = self._only_programs_that_do_not_train_import(key) \
                if regime.mode in ("fp16-mixed", "fp16-master", "fp16") else None
            if programs:
                return self._unreached_library(f"{ONLY_OTHER_PROGRAMS} ({', '.join(programs)})")
            apart = self._directory_apart(key, eps) if regime.mode in ("fp16-mixed", "fp16-master", "fp16") else None
            if apart is not None:
                # EVA: EVA-01/clip/ (the EVA-CLIP models, which no file of the project imports) is not judged by
                # EVA-01/eva/'s DeepSpeed fp16 beside it
                return self._unreached_library(f"no training entry point reaches it, and its directory {apart}/ holds none, nor "
                                     f"any file or evidence of one: the entry points of other directories say nothing of it")
            if regime.mode in ("fp16-mixed", "fp16-master", "fp16") and self._loaded_by_no_run(key):
                return self._unreached_library(NO_RUN_LOADS)
            if regime.mode in ("fp16-mixed", "fp16-master", "fp16") and self._hub_port(key):
                return self._unreached_library(HUB_PORT)
            regime.scope = f"{UNREACHED_PROGRAM if program else UNREACHED} (the entry points under {where}/)"
            return regime
        # Entry points agree when those with evidence say one precision, or float16 in its forms
        # (fairseq: its trainer's --fp16 with master weights, task scripts reaching only the amp
        # path); an entry point with no evidence at all says nothing (an optimizer wrapper's step).
        # (a run config stating fp32, speechbrain's `precision: fp32` recipes, says nothing of code no run reaches:
        # the recipes that state fp16 may run it)
        modes = {Regime(ep.signals).mode for ep in eps
                 if ep.signals and not all(s.note.endswith(RUN_PRECISION) and s.dtype == "float32" for s, _ in ep.signals)}
        if not eps or len(modes) <= 1 or modes <= {"fp16-mixed", "fp16-master", "fp16"}:
            programs = self._only_programs_that_do_not_train_import(key) \
                if eps and project.mode in ("fp16-mixed", "fp16-master", "fp16") else None
            if programs:
                # dinov2's hub/ (hubconf.py builds its inference models): no training run imports it, so
                # the training's float16 says nothing of it; whoever runs it in float16 is a user. (Under
                # an fp32 or bf16 training the project's precision reports no more than this would.)
                return self._unreached_library(f"{ONLY_OTHER_PROGRAMS} ({', '.join(programs)})")
            loops = self._float16_only_in_package_loops(key, eps, project)
            if loops:
                # modelscope: one package trainer's `model.half()` (mglm, under `if args.fp16`) and a few trainers'
                # and hooks' autocast made 766 files of other models pure half
                return self._unreached_library(f"no training entry point reaches it, and the float16 evidence is that of the "
                                     f"package's own loops ({', '.join(loops)}), which its users call with the "
                                     f"precision they pick")
            # (under an fp32 or bf16 training the project's precision stays: the library policy would add float16
            # findings there)
            apart = self._directory_apart(key, eps) if project.mode in ("fp16-mixed", "fp16-master", "fp16") else None
            if apart is not None:
                # InternImage: autonomous_driving/'s mmdet3d plugin (trained by mmdet's runner from configs with no
                # fp16 key) is not judged by classification/'s DeepSpeed fp16
                return self._unreached_library(f"no training entry point reaches it, and its directory {apart}/ holds none, nor "
                                     f"any file or evidence of one: the entry points of other directories say nothing of it")
            if eps and project.mode in ("fp16-mixed", "fp16-master", "fp16") and self._loaded_by_no_run(key):
                # FunASR: the legacy EEND and MossFormer models, never `@tables.register`ed and imported by nothing
                # but their own unregistered model files, are built by none of its runs (T10-7)
                return self._unreached_library(NO_RUN_LOADS)
            if eps and project.mode in ("fp16-mixed", "fp16-master", "fp16") and self._hub_port(key):
                # FlagAI's examples/AltCLIP/hf_altclip/ (T12-4): its fine-tuning uses flagai/model/mm/AltCLIP.py
                return self._unreached_library(HUB_PORT)
            scope = (UNREACHED_PROGRAM if program else UNREACHED) if eps else project.scope
            return Regime(project.signals, None, scope, project.entry_points, project.origins)
        return self._unreached_library("no training entry point reaches it, and the entry points disagree")

    def _signals_of_runs_naming(self, ep: "EntryPoint", key: Path) -> Tuple[List[Tuple[Signal, Evidence]], List[str]]:
        """``ep``'s evidence for the file ``key`` when ``ep`` picks one of a registry of run configs that
        disagree on mixed precision (nerfstudio's ``method_configs``: ``TrainerConfig(method_name="nerfacto",
        mixed_precision=True, pipeline=...(model=NerfactoModelConfig()))`` beside neus'
        ``mixed_precision=False`` with ``NeuSModelConfig``): a file the code of some runs' named classes
        imports (their defining files and their bases', and what those import) runs only in those runs,
        so the other runs' switch is not its evidence, and with every run naming it off, neither is the
        autocast / GradScaler that key switches. Also the runs that decided it (``file:line``)."""
        runs = self._config_runs(ep)
        naming = [r for r in runs if key in r[4]]
        if not naming or len(naming) == len(runs):
            return ep.signals, []
        at = {(r[0], r[1]) for r in runs}
        kept = {(r[0], r[1]) for r in naming if r[2]}
        off = {r[3] for r in naming if not r[2]} - {r[3] for r in naming if r[2]}
        out = [(sig, ev) for sig, ev in ep.signals
               if ((ev.path, ev.line) not in at or (ev.path, ev.line) in kept)
               and not (sig.conditional and off & set(re.findall(r"\w+", sig.condition)))]
        shown = [f"{r[0]}:{r[1]}" for r in naming[:3]]
        return out, shown + ([f"{len(naming) - 3} more"] if len(naming) > 3 else [])

    def _signals_of_configs_selecting(self, signals: List[Tuple[Signal, Evidence]],
                                      key: Path) -> Tuple[List[Tuple[Signal, Evidence]], List[str]]:
        """``signals`` for the file ``key`` when configuration files select the class it registers (threestudio:
        ``system_type: "magic123-system"`` beside ``trainer: {precision: 32}`` in every magic123 config, while the
        dreamfusion configs say ``16-mixed``; ``@threestudio.register("magic123-system")`` in systems/magic123.py):
        a config that selects other registered classes and none of this file's is another run's, so its
        settings are not this file's evidence. Also the configs that decided it. Unchanged when no config
        selects the file's classes."""
        names = set(self.facts().get(key, {}).get("registered", ()))
        if not names or not any(ev.path in self._config_selections() for _, ev in signals):
            return signals, []
        selections = self._config_selections()
        naming = sorted(p for p, chosen in selections.items() if chosen & names)
        if not naming:
            return signals, []
        kept = [(sig, ev) for sig, ev in signals if ev.path not in selections or ev.path in naming]
        if len(kept) == len(signals):
            return signals, []
        return kept, naming[:3] + ([f"{len(naming) - 3} more"] if len(naming) > 3 else [])

    def _config_selections(self) -> Dict[str, set]:
        """Each configuration file (as shown) that names a class the project registers for configs
        (``precision_facts._registered_names``) -> those names."""
        memo = self.memo("config_selections")
        if "all" not in memo:
            from .config_evidence import config_strings
            registered = {n for f in self.facts().values() for n in f.get("registered", ())}
            found: Dict[str, set] = {}
            for f in self.config_files() if registered else ():
                if f.suffix in (".sh", ".md"):
                    continue
                try:
                    text = self.read(f)
                except OSError:
                    continue
                if len(text) > 256 * 1024 or not any(n.encode() in text for n in registered):
                    continue
                chosen = config_strings(text, f.name) & registered
                if chosen:
                    found[self.display(f)] = chosen
            memo["all"] = found
        return memo["all"]

    def _config_runs(self, ep: "EntryPoint") -> List[Tuple[str, int, bool, str, frozenset]]:
        """The run configs among the files ``ep`` reaches (``precision_facts._config_runs``), as (display path,
        line, switch on, key, the files the code of its named classes reaches), when some are on and some off."""
        found = self._runs_of.get(ep.path)
        if found is not None:
            return found
        index, facts, graph = self.index, self.facts(), self._import_graph()
        runs = []
        for p in sorted({ep.path, *ep.reach}):
            f = facts.get(p)
            if not f or self.is_test(p) or not f.get("config_runs"):
                continue
            module = f["module"] or ""
            for run in f["config_runs"]:
                key, value = run["key"], run["value"]
                if value is None:  # the class's default (``mixed_precision: bool = False``)
                    cls = index.resolve(run["callee"], module) or index.symbol(f"{module}.{run['callee']}")
                    todo, seen = [cls] if cls is not None and cls.kind == "class" else [], set()
                    while todo and value is None:
                        c = todo.pop(0)
                        if c.name in seen:
                            continue
                        seen.add(c.name)
                        for k, v in facts.get(c.path, {}).get("config_defaults", {}).get(c.qualname, {}).items():
                            key, value = k, v
                            break
                        todo.extend(index.bases(c.name))
                    if value is None:
                        continue
                files = set()
                for name in run["names"]:
                    sym = index.resolve(name, module) or index.symbol(f"{module}.{name}")
                    todo = [sym] if sym is not None and sym.kind == "class" else []
                    while todo:
                        c = todo.pop()
                        if c.path not in files:
                            files |= _closure(c.path, graph)
                        todo.extend(b for b in index.bases(c.name) if b.path not in files)
                if files:
                    runs.append((self.display(p), run["line"], value, key, frozenset(files)))
        if len({r[2] for r in runs}) < 2:
            runs = []
        self._runs_of[ep.path] = runs
        return runs

    def _nearest_entry_points(self, key: Path, eps: List["EntryPoint"]) -> Optional[Tuple[List["EntryPoint"], str]]:
        """The entry points in the nearest directory above ``key`` (below the root) that holds some, and
        that directory, when they are not all the project's: a file no entry point imports belongs to the
        model whose directory it is in. The package's own loops (``_library_loop``) are no model's
        program. None when no directory below the root holds one, or the nearest holds them all."""
        d = key.parent
        above = self._directories_above
        while d != self.root and self.root in d.parents:
            near = [ep for ep in eps if d in above(ep.path) and not self._library_loop(ep)]
            if near:
                if len(near) == len(eps):
                    return None
                # a directory the other entry points' imports enter is shared code, not one model's (fairseq/
                # holds example trainers, and fairseq_cli/train.py imports its modules)
                if any(d in above(f) for ep in eps if ep not in near for f in ep.reach):
                    return None
                return near, self.relative(d)
            d = d.parent
        return None

    def _directory_apart(self, key: Path, eps: List["EntryPoint"]) -> Optional[str]:
        """``_top_directory_apart`` below the root, else below a directory above ``key`` that holds entry points
        (EVA-01/, whose eva/ trains and whose clip/ no file imports), the highest first."""
        found = self._top_directory_apart(key, eps)
        d = key.parent
        bases = []
        while found is None and d != self.root and self.root in d.parents:
            d = d.parent
            if d != self.root and any(d in ep.path.parents for ep in eps) \
                    and not any((x / "__init__.py").is_file() for x in (d, *d.parents) if self.root in x.parents):
                # (a directory of sub-projects, EVA-01/; not a package, whose modules a registry may import by
                # the directory's listing: fairseq's import_models)
                bases.append(d)
        for base in reversed(bases):
            found = found or self._top_directory_apart(key, eps, base)
        return found

    def _top_directory_apart(self, key: Path, eps: List["EntryPoint"], base: Optional[Path] = None) -> Optional[str]:
        """The top directory of ``key`` below the root (``autonomous_driving`` in a monorepo of sub-projects), when
        every entry point lives in another top directory and none of them reaches a file of it or takes evidence
        from it (its own launchers, configs): a sub-project the scan finds no training of, whose precision the
        others' is not. None otherwise (a file at the root, an entry point at the root: its program may run any
        directory's code through a registry; a directory some entry point imports from: shared code).
        ``base``: a directory of the monorepo whose sub-directories hold the entry points (EVA's ``EVA-01``, with
        ``eva/`` and ``video/`` training and ``clip/`` beside them), asked in place of the root: there a
        package that no file outside it imports (EVA-01/clip/, the released EVA-CLIP models) is apart too."""
        base = base or self.root
        try:
            parts = key.relative_to(base).parts
        except ValueError:
            return None
        if len(parts) < 2 or not eps:
            return None
        top = base / parts[0]
        nested = base != self.root
        package = (top / "__init__.py").is_file()
        if (nested or package) and self._loaded_by_name(top, by_others=package and not nested):
            return None
        if (not self._imported_by_none_outside(top, self._program_that_does_not_train) if package
                else not self._holds_programs(top) and not (nested and self._imported_by_none_outside(top))):
            # a top package is the project's library, its models built by a registry (mmengine's tools/train.py
            # builds pkg/'s losses from its configs); a directory with no program of its own (DeepLearningExamples'
            # common/) is code the models beside it may load: the project's precision stays. A package no file
            # outside it imports, that registers nothing and that no config names, is apart like a sub-project
            # (EasyOCR's easyocr/, the published inference package, beside trainer/craft/'s fp16 training of
            # another model that imports nothing of it: T18-1)
            return None
        shown = self.display(top) + "/"
        for ep in eps:
            try:
                at_root = len(ep.path.relative_to(base).parts) < 2 if base in ep.path.parents \
                    else len(ep.path.relative_to(self.root).parts) < 2
            except ValueError:
                return None
            if at_root or top in ep.path.parents \
                    or any(top in f.parents for f in ep.reach) \
                    or any(ev.path.startswith(shown) for _, ev in ep.signals):
                return None
        return self.relative(top)

    def _imported_by_none_outside(self, top: Path, ignoring=None) -> bool:
        """No file outside the directory ``top`` imports one of its files, and none of its files holds float16
        evidence of its own (``_holds_programs``' second half). ``ignoring``: importers that do not count
        (tests, and the programs ``ignoring`` accepts: a demo that runs the package does not train it)."""
        memo = self.memo("importers")
        if "into" not in memo:
            into: Dict[Path, set] = {}
            for src, targets in self._import_graph().items():
                for t in targets:
                    into.setdefault(t, set()).add(src)
            memo["into"] = into
        into = memo["into"]
        below = [(p, f) for p, f in self.facts().items() if top in p.parents]
        if any(s["role"] == TRAINING and s["dtype"] in ("float16", "bfloat16") for _, f in below for s in f["signals"]):
            return False
        return not any(top not in src.parents and not (ignoring is not None and (self.is_test(src) or ignoring(src)))
                       for p, _ in below for src in into.get(p, ()))

    def _hub_port(self, key: Path) -> bool:
        """Is ``key`` the model code of a Hugging Face hub port: a ``modeling_*.py`` (the file transformers loads from
        a model repository through its config's ``auto_map``, ``trust_remote_code=True``) in a directory that holds no
        program (a script, an entry point, a file doing its work at its top level), that no file outside it imports
        and none of whose modules a configuration file names? FlagAI's ``examples/AltCLIP/hf_altclip/`` (modeling /
        configuration / processing files for the hub), beside the fine-tuning that trains ``flagai/model/mm/AltCLIP.py``
        in fp32: the port runs in the programs of the users who load it from the hub, not in the project's (T12-4)."""
        if not (key.name.startswith("modeling_") and key.suffix == ".py"):
            return False
        d = key.parent
        here = [(p, f) for p, f in self.facts().items() if p.parent == d]
        if any(f.get("script") or f.get("entry_points") or f.get("runs_at_top") for _, f in here):
            return False
        if any(f"{d.name}.{p.stem}" in self._config_dotted_pairs() for p, _ in here if p.stem != "__init__"):
            return False
        return self._imported_by_none_outside(d)

    def _loaded_by_name(self, top: Path, by_others: bool = False) -> bool:
        """Does a file of the directory ``top`` register a class for configs to select (fairseq's ``--user-dir``
        models, a registry's), or does a configuration file name one of its modules (a Hydra ``_target_:
        src.callbacks.ema.EMACallback``)? Such code is loaded by name, which no static import shows.
        ``by_others``: only configuration files outside ``top`` count (EasyOCR's easyocr/DBNet/configs name
        the package's own detector for the package's own inference)."""
        below = [(p, f) for p, f in self.facts().items() if top in p.parents]
        if any(f.get("registered") for _, f in below):
            return True
        # (``outside`` is passed only when set: a recorded read replays its arguments as written)
        return any(self.named_in_configs(f"{p.parent.name}.{p.stem}", top) if by_others
                   else self.named_in_configs(f"{p.parent.name}.{p.stem}") for p, _ in below if p.stem != "__init__")

    def _loaded_by_no_run(self, key: Path) -> bool:
        """Is ``key`` a file that no run loads: one that only modules nothing imports lead to (by static imports),
        each of them a module that registers no class, in a directory of models loaded through a registry (a
        file of its directory or of its parent directory's tree, one level down, registers its classes: FunASR's
        ``funasr/models/paraformer/model.py`` with ``@tables.register("model_classes", "Paraformer")``), and in a
        directory no module of which a run loads? Such a module is none of the models the runs build by name,
        nor what those import: FunASR's legacy ``models/eend/`` (``e2e_diar_eend_ola.py`` and the encoder it
        imports). A module nothing imports is loaded at run time when it registers a class, is a program or a
        package's ``__init__``, or a configuration file names it; with no registry in its directory's tree, any
        such module may be (fairseq's ``--user-dir``, ``importlib`` of a configured name), and a module beside
        ones the runs load is a building block a user's model may import (fairseq's
        ``modules/kmeans_attention.py``): the project's precision stays."""
        memo = self.memo("loaded_by_no_run")
        if "unloaded" not in memo:
            memo["unloaded"] = self._files_loaded_by_no_run()
        return key in memo["unloaded"]

    def _files_loaded_by_no_run(self) -> set:
        facts = self.facts()
        registered = [p for p, f in facts.items() if f.get("registered") and not self.is_test(p)]
        if not registered:
            return self._files_nothing_can_load()
        registry_dirs = {p.parent for p in registered} | {p.parent.parent for p in registered}
        graph = self._import_graph()
        loaded_roots, unloaded_roots = self._unimported_modules(
            lambda p, f: (p.parent in registry_dirs or p.parent.parent in registry_dirs) and not f.get("registered"))
        loaded_roots += registered
        if not unloaded_roots:
            return set()
        loaded = _closure_of(loaded_roots, graph)
        # (a directory some run loads a module of is a library of building blocks, whose other modules a user's
        # model may import: fairseq's modules/kmeans_attention.py, which nothing of fairseq imports)
        live_dirs = {p.parent for p in loaded if p.stem != "__init__"}
        return {p for p in _closure_of(unloaded_roots, graph, loaded)
                if not self.is_test(p) and p.parent not in live_dirs}

    def _unimported_modules(self, candidate) -> Tuple[List[Path], List[Path]]:
        """The project's files that no file imports (tests aside), split in two: those that may run on their own
        (a program, an entry point, a package ``__init__``, a file under ``scripts/`` / ``tools/``..., one a
        configuration file names, or one ``candidate(path, facts)`` rejects) and the modules left, which nothing
        loads unless something loads them by name."""
        facts = self.facts()
        graph = self._import_graph()
        imported = {t for targets in graph.values() for t in targets}
        loaded_roots: List[Path] = []
        unloaded_roots: List[Path] = []
        for p in graph:
            if p in imported or self.is_test(p):
                continue
            f = facts.get(p, {})
            if not f.get("script") and not f.get("entry_points") and p.stem != "__init__" and p.suffix == ".py" \
                    and not _SCRIPT_DIR.search(self.relative(p)) \
                    and f"{p.parent.name}.{p.stem}" not in self._config_dotted_pairs() and candidate(p, f):
                unloaded_roots.append(p)
            else:
                loaded_roots.append(p)
        return loaded_roots, unloaded_roots

    def _files_nothing_can_load(self) -> set:
        """In a project whose code loads nothing by name (no registry, ``importlib``, ``__import__``, Hydra or LDM
        ``target`` string, ``globals()`` lookup: ``loads_modules`` of no file), the modules that nothing imports
        and that are no program (nor a script doing its work at its top level, ``runs_at_top``), package
        ``__init__``, test, nor part of a package of the project (its users' API), and that no configuration file
        names, and whose classes all live on in the modules of its directory that the runs load
        (``_superseded_copy``): a left-over copy no run can execute (LlamaGen's ``tokenizer_image/discriminator.py``,
        which its GAN losses replaced by ``discriminator_patchgan.py``, whose unused ``ActNorm`` was judged under
        the trainings' fp16), with the files only it leads to."""
        facts = self.facts()
        if any(f.get("loads_modules", True) for p, f in facts.items() if not self.is_test(p)):
            return set()
        graph = self._import_graph()
        loaded_roots, unloaded_roots = self._unimported_modules(
            lambda p, f: not f.get("runs_at_top", True) and not self.in_package(p))
        if not unloaded_roots:
            return set()
        loaded = _closure_of(loaded_roots, graph)
        copies = [p for p in unloaded_roots if self._superseded_copy(p, loaded)]
        return {p for p in _closure_of(copies, graph, loaded) if not self.is_test(p)} if copies else set()

    def _superseded_copy(self, path: Path, loaded: set) -> bool:
        """Is every class ``path`` defines at its top level also defined, or imported under its name, by a module
        of its directory that the runs load? A copy the project replaced (LlamaGen's ``discriminator.py``: its
        ``ActNorm``, ``Blur``, ``DiscriminatorBlock`` live on in ``discriminator_patchgan.py`` /
        ``discriminator_stylegan.py``, its ``PatchGANDiscriminator`` is what ``vq_loss.py`` imports another class
        as). A helper module nothing imports that duplicates nothing stays judged by the project's precision."""
        names = [s.qualname for s in self.index.symbols_in(path) if s.kind == "class" and not s.is_method]
        siblings = [q for q in loaded if q.parent == path.parent and q != path and q.suffix == ".py"]
        if not names or not siblings:
            return False
        text = []
        for q in siblings:
            try:
                text.append(self.read(q).decode("utf-8", "replace"))
            except OSError:
                continue
        joined = "\n".join(text)
        return all(re.search(rf"\bclass\s+{re.escape(n)}\b|\bas\s+{re.escape(n)}\b", joined) for n in names)

    def _config_dotted_pairs(self) -> set:
        """Every two consecutive parts of the dotted names the project's configuration files hold (``a.b`` and
        ``b.c`` of a Hydra ``_target_: a.b.c``): what ``named_in_configs`` finds for ``<directory>.<module>``,
        read once for many modules."""
        memo = self.memo("config_dotted_pairs")
        if "pairs" not in memo:
            pairs = set()
            for f in self.config_files():
                if f.suffix == ".md":  # (read for its documented commands' precision only)
                    continue
                try:
                    text = f.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                for m in re.finditer(r"\w+(?:\.\w+)+", text):
                    parts = m.group(0).split(".")
                    pairs.update(f"{a}.{b}" for a, b in zip(parts, parts[1:]))
            memo["pairs"] = pairs
        return memo["pairs"]

    def _holds_programs(self, top: Path) -> bool:
        """Does the directory ``top`` hold a program of its own (a script with a ``__main__`` block, a file under
        ``tools/`` / ``scripts/``...) and no float16 evidence? Its launchers: a sub-project's training, run by a runner
        the scan does not see (InternImage's ``autonomous_driving/.../tools/train.py`` hands its model to mmdet's
        ``train_detector``), in a precision nothing in it states."""
        memo = self.memo("programs_below")
        if top not in memo:
            below = [(p, f) for p, f in self.facts().items() if top in p.parents and not self.is_test(p)]
            # (a directory with float16 evidence of its own, an autocast or a half cast in its code, says its precision)
            memo[top] = any(f.get("script") or _SCRIPT_DIR.search(self.relative(p)) for p, f in below) and not any(
                s["role"] == TRAINING and s["dtype"] in ("float16", "bfloat16") for _, f in below for s in f["signals"])
        return memo[top]

    def _only_programs_that_do_not_train_import(self, key: Path) -> Optional[List[str]]:
        """The programs (a script, a root module such as ``hubconf.py``, a file under ``app/``,
        ``scripts/``, ``demo/``...) that import ``key``, directly or not, when every chain of static
        imports that leads to it starts at one of them and none of them trains; None otherwise. A
        file that some module nobody imports leads to (fairseq's models, loaded by a registry at run
        time), or that a training program leads to (a root ``train.py`` that hands the model to a
        runner the scan does not recognise), keeps the project's precision."""
        if getattr(self, "_program_runs", None) is None:
            graph = self._import_graph()
            imported = {t for targets in graph.values() for t in targets}
            roots = [p for p in graph if p not in imported]
            other = [r for r in roots if self._program_that_does_not_train(r)]
            keep = [r for r in roots if r not in set(other)]

            def closure(starts, outside=frozenset()):
                out: Dict[Path, Path] = {}
                for start in starts:
                    stack = [start]
                    while stack:
                        f = stack.pop()
                        if f in out or f in outside:
                            continue
                        out[f] = start
                        stack.extend(t for t in graph.get(f, ()) if t not in out)
                return out
            kept = closure(keep)
            by_program: Dict[Path, List[Path]] = {}
            for start in other:
                # (what a kept file imports is kept: the walk from a program stops there)
                for f in closure([start], kept):
                    by_program.setdefault(f, []).append(start)
            self._program_runs = by_program
        programs = self._program_runs.get(key)
        if not programs or not any(_INFERENCE_PROGRAM.search(self.relative(p)) for p in programs):
            # a conversion script or a tool that loads the model says nothing of how it runs (transformers'
            # convert_clip_original_pytorch_to_hf.py is the only static importer of modeling_clip, which its
            # users train through the Trainer): only an inference program's use is one
            return None
        names = sorted(self.relative(p) for p in programs)
        return names[:3] + ([f"{len(names) - 3} more"] if len(names) > 3 else [])

    def _program_that_does_not_train(self, path: Path) -> bool:
        """``path`` is a program of its own (not only imported: it has a ``__main__``, it is torch.hub's
        ``hubconf.py`` or a ``setup.py``, it is named or placed as an inference program, or it lies in
        a directory of programs, apps or examples) and nothing in it trains (no backward, optimizer or
        trainer; not named for training)."""
        facts = self.facts().get(path, {})
        rel = self._relative_or_none(path) or ""
        program = facts.get("script") or _PROGRAM_FILE.search(rel) or _SCRIPT_DIR.search(rel) \
            or _EXAMPLE_DIR.search(rel) or _INFERENCE_FILE.search(rel) or _INFERENCE_DIR.search(rel)
        return bool(program) and not facts.get("trains", True) and not re.search(r"(?i)train", Path(rel).name)

    def _uses_code_of(self, ep: "EntryPoint", path: Path) -> bool:
        """Does ``ep``'s code reach (the project's call graph) a function or class defined in ``path``?"""
        symbols = self.index.symbols_in(path)
        if not symbols:
            return True
        reached = self._reached.setdefault(ep.path, _Reached(self, ep.path))
        return any(reached.reaches(s.name) for s in symbols)

    def _nobody_builds(self, ep: "EntryPoint") -> bool:
        """Every training function of ``ep`` is a method of a class that no other file of the project
        builds, calls or derives from (directly or through a subclass) and that the top-level package
        does not export: a framework's hook that its users' configurations name (mmcv's
        ``OptimizerHook.after_train_iter``, vendored by LAVIS for an annotator that only runs
        inference), not a loop any program of the project runs nor the package's own API."""
        symbols = self.index.symbols_in(ep.path)
        for f in ep.functions:
            methods = [s for s in symbols if s.kind == "function" and s.qualname.endswith("." + f["function"])]
            # (a class defined twice, under ``if``/``else`` on the torch version, is indexed once)
            methods = [s for s in methods if s.line == f["line"]] or methods
            if not methods:
                return False
            for method in methods:
                cls = f"{method.module}.{method.qualname.rsplit('.', 1)[0]}"
                if self.index.symbol(cls) is None:
                    return False  # a nested def, not a method of a module-level class
                top = method.module.split(".")[0]
                exported = self.index.resolve(f"{top}.{method.qualname.rsplit('.', 1)[0]}") if top != method.module else None
                if exported is not None and exported.name == cls:
                    return False  # the package's API (pykoi's ``from .reward import Reward``): its users build it
                for name in (cls, *(s.name for s in self.subclasses(cls))):
                    if any(site.path != ep.path for site in self.callers(name)):
                        return False
                if any(s.path != ep.path for s in self.subclasses(cls)):
                    return False
        return bool(ep.functions)

    def fallback_classes(self) -> set:
        """The project classes some file imports only as the fallback of a library's own (mmpose's ``except
        ImportError: from mmpose.core import Fp16OptimizerHook`` after ``try: from mmcv.runner import
        Fp16OptimizerHook``; ``precision_facts._fallback_imports``), when no file imports them otherwise: they run
        only with a library that lacks them, so no run of the project's (the library's class does)."""
        memo = self.memo("fallback_classes")
        if "all" not in memo:
            index, found = self.index, set()
            for path, facts in self.facts().items():
                for _, fallback in facts.get("fallback_imports", {}).values():
                    sym = index.resolve(fallback, facts.get("module") or "")
                    if sym is not None and sym.kind == "class":
                        found.add(sym.name)
            memo["all"] = found
        return memo["all"]

    def vendored_hook(self, ep: "EntryPoint") -> bool:
        """``ep`` trains only in methods of classes that no other file of the project builds, calls or
        derives from, in a copy of a third-party library (``_vendored``): that library's hook (ControlNet's
        annotator/uniformer/mmcv/runner/hooks/optimizer.py, ``Fp16OptimizerHook.after_train_iter``, run
        only by an mmcv runner that nothing in ControlNet builds). It is no run of this project: its
        precision is not the project's, nor that of the files no entry point reaches."""
        if ep.path not in self._vendored_hooks:
            self._vendored_hooks[ep.path] = (self._vendored(ep.path) and self._nobody_builds(ep) or self._fallback_hook(ep)) \
                and not self.facts().get(ep.path, {}).get("script") and not any(sig.kind == "launcher" for sig, _ in ep.signals)
        return self._vendored_hooks[ep.path]

    def _fallback_hook(self, ep: "EntryPoint") -> bool:
        """``ep`` trains only in methods of a class the project imports as a library's fallback (mmpose's
        ``Fp16OptimizerHook.after_train_iter``, for an mmcv without its own), or in module-level functions of that
        class's file that no other file calls (a method patched onto it)."""
        fallbacks = self.fallback_classes()
        if not fallbacks:
            return False
        index = self.index
        symbols = index.symbols_in(ep.path)
        if not any(s.name in fallbacks for s in symbols):
            return False
        for f in ep.functions:
            named = [s for s in symbols if s.qualname.rsplit(".", 1)[-1] == f["function"]]
            if not named or not all(s.qualname.rsplit(".", 1)[0] in {c.qualname for c in symbols if c.name in fallbacks}
                                    or "." not in s.qualname and all(c.path == ep.path for c in index.callers(s.name))
                                    for s in named):
                return False
        return True

    def _vendored(self, path: Path) -> bool:
        """``path`` lies in a copy of a third-party library: under a directory named for vendoring
        (``third_party/``, ``vendor/``) or, below the project's top directory, one named for a training
        library (``annotator/uniformer/mmcv/``; timm's own ``timm/`` is the project itself)."""
        rel = self._relative_or_none(path)
        parts = rel.split("/")[:-1] if rel else []
        if parts and parts[0] == "src":
            parts = parts[1:]
        return any(d.lower() in _VENDOR_DIRS for d in parts) or any(d in _VENDORED_LIBRARIES for d in parts[1:])

    def own_model_dtype(self, path: Path, model: str) -> Optional[str]:
        """The dtype the file ``path``, which no entry point reaches, itself loads or casts ``model`` to, when it does so unconditionally
        and only in dtypes other than float16 (LMFlow's examples/detail_memory.py: ``model =
        AutoModelForCausalLM.from_pretrained(..., torch_dtype=torch.bfloat16)`` then ``Adam(model.parameters())``,
        whatever another script's half model); None otherwise."""
        # (its own summary only: a run that re-checks this file reads no other file's)
        facts = self.summary(path).facts if model else None
        if not facts or not self.regime_for(path).scope.startswith((UNREACHED, UNREACHED_PROGRAM)):
            return None  # (a file an entry point reaches trains what that entry point casts)
        casts = [s for s in facts["signals"] if s["kind"] == "half_params" and s.get("model") == model]
        if not casts or any(s["dtype"] == "float16" or s.get("one_of") for s in casts):
            return None
        return casts[0]["dtype"]

    def _float16_only_in_package_loops(self, key: Path, eps: List["EntryPoint"], project: Regime) -> List[str]:
        """The names of the entry points holding the project's float16 evidence, when ``key`` is a file of the
        project's package that none of them reaches, every entry point with float16 evidence is a loop of the
        package that its users call (a trainer, an optimizer hook: ``_library_loop``), and every piece of the
        project's float16 evidence lies in those loops' files or in what they reach (not in a script, a
        config file, or another file of the package), and some training of the project has no float16 evidence
        (an example script, another trainer of the package): the package's loops disagree, so its users pick.
        Empty otherwise: then the project's precision stands."""
        if project.mode not in ("fp16-mixed", "fp16-master", "fp16") or not self._published_package_file(key):
            return []
        memo = self.memo("package_loops_f16")  # the same for every file: worked out once (766 files of modelscope)
        if "loops" not in memo:
            memo["loops"] = self._package_loops_holding_float16(eps, project)
        return memo["loops"]

    def _package_loops_holding_float16(self, eps: List["EntryPoint"], project: Regime) -> List[str]:
        half = [ep for ep in eps if ep.signals and Regime(ep.signals).mode in ("fp16-mixed", "fp16-master", "fp16")]
        if not half or not all(self._library_loop(ep) for ep in half):
            return []
        if all(ep in half or self.vendored_hook(ep) for ep in eps):
            return []  # every training of the project is float16: the package trains in it (its own autocast step)
        theirs = {ep.display for ep in half} | {self.display(p) for ep in half for p in ep.reach}
        if not all(ev.path in theirs for sig, ev in project.signals if sig.dtype == "float16"):
            return []
        return sorted({ep.name() for ep in half})

    def _directories_above(self, path: Path) -> frozenset:
        """``set(path.parents)``, kept per path: ``d in path.parents`` walks the parents building a
        path object for each, and ``_nearest_entry_points`` asks it of every entry point for every
        directory above every file."""
        memo = self.memo("directories_above")
        found = memo.get(path)
        if found is None:
            found = memo[path] = frozenset(path.parents)
        return found

    def _library_loop(self, ep: "EntryPoint") -> bool:
        """``ep`` is a function of the project's package that its users call (kornia's
        ``ImageRegistrator.register``), not a program: a package file that no script runs. Kept per
        file (the question is asked for each directory above each file; the facts are the project's,
        computed once)."""
        memo = self.memo("library_loops")
        found = memo.get(ep.path)
        if found is None:
            facts = self.facts().get(ep.path, {})
            found = memo[ep.path] = not facts.get("script", True) and self._published_package_file(ep.path) \
                and not _SCRIPT_DIR.search(self.relative(ep.path))
        return found

    def in_package(self, path: Path) -> bool:
        """Does ``path`` lie in a package of the project, its users' API (``_published_package_file``)?"""
        return self._published_package_file(path)

    def ships(self, path: Path) -> bool:
        """Does the project's packaging ship the package ``path`` lies in (``context.packaging``)? True
        where it names nothing it ships; only asked of a file ``in_package``."""
        if not hasattr(self, "_declared_packages"):
            from .context.packaging import declared_packages
            self._declared_packages = declared_packages(self.root)
        rel = self._relative_or_none(path)
        if self._declared_packages is None or not rel:
            return True
        from .context.packaging import ships
        parts = rel.split("/")[:-1]
        if parts and parts[0] == "src":
            parts = parts[1:]
        return not parts or ships(self._declared_packages, ".".join(parts))

    def _published_package_file(self, path: Path) -> bool:
        """``path`` lies in a package of the project: a directory with an ``__init__.py`` at the
        root (or under ``src/``). No setup.py is asked for: a package that only example scripts use
        is library code whether or not this checkout packages it (linformer-pytorch's tree before
        its setup.py; its users trained it in fp16)."""
        rel = self._relative_or_none(path)
        parts = rel.split("/") if rel else []
        if parts and parts[0] == "src":
            parts = parts[1:]
        base = self.root / "src" if rel and rel.startswith("src/") else self.root
        return len(parts) > 1 and not _EXAMPLE_DIR.search(rel) and (base / parts[0] / "__init__.py").is_file()

    def _harness(self) -> Optional[Regime]:
        """A nested project (its own setup.py) with no training of its own, trained by the
        enclosing repository: the precision of the enclosing project's entry points whose files
        import one of its top-level modules (computed once)."""
        if not hasattr(self, "_harness_regime"):
            self._harness_regime = None
            outer_root = project_root(self.root.parent) if self.root.parent != self.root else None
            if outer_root is not None and outer_root != self.root and any((outer_root / m).exists() for m in ROOT_MARKERS):
                tops = {name.split(".")[0] for name in self._module_paths()}
                outer = Project(outer_root, self.discovery)
                facts = outer.facts()
                signals: List[Tuple[Signal, Evidence]] = []
                names = []
                for ep in outer.entry_points():
                    if any(imp.split(".")[0] in tops for p in ep.reach for imp in facts.get(p, {}).get("imports", ())):
                        signals.extend((sig, Evidence(f"{ev.what} (training entry point {ep.display} of the enclosing "
                                                      f"project)", ev.path, ev.line)) for sig, ev in ep.signals)
                        names.append(ep.name())
                if signals:
                    self._harness_regime = Regime(signals, None, "entry point " + ", ".join(names) +
                                                  " of the enclosing project", tuple(names))
        return self._harness_regime

    def own_runs_saying_precision(self) -> List[str]:
        """The project's own training runs that say their precision: entry points that are no loop of
        a package its users call (``_library_loop``: a program, a script, a file outside the packages),
        no copy of a third-party hook, with precision evidence other than a launcher's (Amphion's,
        physicsnemo's, FunASR's trainings). Where there are some, the project says how its code runs,
        and code none of them reaches is run by none of its trainings: it is not judged as under any
        float16 use (the library policy is for code whose users pick the precision, docs/precision.md).
        Empty for a library (no entry point, or only its own loops and programs without evidence:
        speechbrain's ``Brain.fit``, ParlAI's agents); computed once."""
        memo = self.memo("own_runs")
        if "names" not in memo:
            memo["names"] = [ep.name() for ep in self.entry_points()
                             if not self._library_loop(ep) and not self.vendored_hook(ep)
                             and any(sig.kind != "launcher" for sig, _ in ep.signals)]
        return memo["names"]

    def users_pick_precision(self) -> bool:
        """Is code no training run of the project reaches its users' to run in the precision they pick
        (no own training run says a precision: ``own_runs_saying_precision``)? Then the library policy
        looks at it as under any float16 use; otherwise it is not judged in float16."""
        return not self.own_runs_saying_precision() and self.refuses_half() is None

    def refuses_half(self) -> Optional[str]:
        """Where the project refuses every dtype but float32 and float64 (``path:line (name)``), or None: a
        module-level validator outside the tests whose whole body is ``if dtype not in [torch.float32,
        torch.float64]: raise ...`` (or the ``assert``), theseus's ``_CHECK_DTYPE_SUPPORTED`` ("Theseus only
        supports 32- and 64-bit tensors"). Its users cannot run it in float16, so its library code is not
        looked at as under any float16 use (T19-6); an inline check inside one helper (botorch's task-value
        remapping) is no such validator. Computed once."""
        memo = self.memo("refuses_half")
        if "where" not in memo:
            memo["where"] = next((f"{self.relative(path)}:{line} ({name})" for path, facts in sorted(self.facts().items())
                                  if not self.is_test(path) for line, name in facts.get("refuses_half", ())), None)
        return memo["where"]

    def _refusing(self, why: str) -> Regime:
        return Regime([], None, f"{REFUSES_FLOAT16} ({self.refuses_half()}): {why}")

    def _unreached_library(self, why: str) -> Regime:
        """A file no entry point reaches, in a project with entry points, that the rules above leave to
        the library policy (``why``): library code when the project's users pick its precision, or an
        ``assume-precision`` judges it; in a project whose own training runs say their precision, code
        run by none of them, not judged in float16 (``NOT_RUN``)."""
        if self.assume or self.users_pick_precision() or self.refuses_half() is not None:
            return self._library(why)
        runs = self.own_runs_saying_precision()
        shown = ", ".join(runs[:3]) + (f", {len(runs) - 3} more" if len(runs) > 3 else "")
        return Regime([], None, f"{NOT_RUN}: {why}; the project's own training runs say their precision ({shown})")

    def _library(self, why: str) -> Regime:
        if self.assume:
            return Regime([], self.assume, f"{LIBRARY_SCOPE} ({why}): assume-precision = \"{self.assume}\"")
        if self.refuses_half() is not None:
            return self._refusing(why)
        return Regime([], None, f"{LIBRARY_SCOPE}: {why}")

    def precision_summary(self, paths) -> Dict[str, int]:
        """How many of ``paths`` were judged under each precision (``mode``, or ``library`` /
        ``test``)."""
        counts: Dict[str, int] = {}
        for p in paths:
            r = self.regime_for(p)
            label = r.mode if r.signals or r.override else ("test" if r.scope.startswith("test") else
                                                            "library" if r.scope.startswith("library") else
                                                            "not run" if r.not_run else r.mode)
            counts[label] = counts.get(label, 0) + 1
        return counts

    def relative(self, path: Path) -> str:
        rel = self._relative_or_none(path)
        return rel if rel is not None else path.as_posix()

    def _relative_or_none(self, path: Path) -> Optional[str]:
        if self._rels is None:
            # Discovery walks the resolved root through real directories only, so the relative
            # path of a file it found is its text after the root's (no resolve() per file).
            top = self._root_prefix
            self._rels = {f: str(f)[len(top):].replace(os.sep, "/") for f in self.files() if str(f).startswith(top)}
        rel = self._rels.get(path)
        if rel is not None:
            return rel
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def module_name(self, path: Path) -> Optional[str]:
        rel = self._relative_or_none(path)
        return module_from_relative(rel) if rel is not None else None

    def read(self, path: Path) -> bytes:
        """The text of a project file as the project facts see it (``fix`` overlays the fixed, not
        yet written, contents)."""
        if self._overlay:
            fixed = self._overlay.get(path.resolve())
            if fixed is not None:
                return fixed
        return path.read_bytes()

    def _launcher_text(self, path: Path) -> str:
        """The commands of a launcher: a shell script's text, or a Markdown file's fenced shell commands
        (``config_evidence.markdown_commands``, lines kept in place)."""
        text = self.read(path).decode("utf-8", "replace")
        if path.suffix == ".md":
            from .config_evidence import markdown_commands  # noqa: PLC0415 (a leaf module)
            return markdown_commands(text)
        return text

    def _module_paths(self) -> Dict[str, Path]:
        if self._modules is None:
            self._modules = {}
            for f in self.files():
                name = self.module_name(f)
                if name:
                    self._modules[name] = f
        return self._modules

    # ---- call graph and class hierarchy ------------------------------------------------------------
    @property
    def index(self) -> ProjectIndex:
        """The project's call graph and class hierarchy (``amplint.project_index``), built from
        the summaries on first use. Project-level facts (entry points, regimes) may read it
        directly; a file's analysis asks the recorded accessors below (``callers``,
        ``subclasses``), so that its cached result is reused only while their answers hold."""
        if self._index is None:
            files = {}
            programs = set()
            for f in self.files():
                summary = self.summary(f)
                module = self.module_name(f)
                files[self.resolved(f)] = (module, summary.graph, self.content_key(f) or "")
                if module and summary.facts and summary.facts.get("script"):
                    programs.add(module.rpartition(".")[0])
            self._index = ProjectIndex(files, programs)
        return self._index

    def callers(self, name: str) -> List[CallSite]:
        """Every call of the project definition ``name`` (``pkg.losses.nll_loss``,
        ``pkg.model.Net.forward``; a class: its instantiations) in the project's files, each with
        its arguments (``ProjectIndex.callers``). Kept in the cache under the summaries'
        fingerprint (``ProjectCache.answer``): a run whose edits changed no summary gets them
        without building the index (the sites' content keys are the files' current ones)."""
        return self._cached_sites(name, lambda: self.index.callers(name))

    def calls_named(self, last: str) -> List[CallSite]:
        """Every call of the project written with the last name ``last``, whatever its receiver
        (``ProjectIndex.calls_named``); cached like ``callers``."""
        return self._cached_sites(f"calls named {last}", lambda: self.index.calls_named(last))

    def _cached_sites(self, key: str, compute) -> List[CallSite]:
        """Call sites kept in the cache under the summaries' fingerprint and ``key``: ``compute()``
        (which builds the index) only when the cache does not hold them."""
        if self.cache is None or self._overlay:
            return compute()
        fingerprint = self.facts_fingerprint()
        if self._index is None:
            sites = self._sites_from(self.cache.answer(fingerprint, key))
            if sites is not None:
                return sites
        sites = compute()
        self.cache.put_answer(fingerprint, key, [[str(c.path), c.caller, c.callee, c.line, c.col,
                                                  [[a.how, a.text, a.kind] for a in c.args], c.on_self]
                                                 for c in sites])
        return sites

    def _sites_from(self, data) -> Optional[List[CallSite]]:
        """The call sites cached as ``data`` (None when they are not that, or name a file that is
        no longer the project's)."""
        if not isinstance(data, list):
            return None
        by_resolved = self.__dict__.get("_by_resolved")
        if by_resolved is None:
            by_resolved = self._by_resolved = {str(self.resolved(f)): f for f in self.files()}
        out = []
        try:
            for path, caller, callee, line, col, args, on_self in data:
                f = by_resolved.get(path)
                if f is None or not (isinstance(caller, str) and isinstance(callee, str) and isinstance(line, int)
                                     and isinstance(col, int) and isinstance(on_self, bool)):
                    return None
                arguments = tuple(Argument(how, text, kind) for how, text, kind in args
                                  if isinstance(how, str) and isinstance(text, str) and isinstance(kind, str))
                if len(arguments) != len(args):
                    return None
                out.append(CallSite(self.resolved(f), caller, callee, line, col, arguments, on_self,
                                    self.content_key(f) or ""))
        except (TypeError, ValueError):
            return None
        return out

    def imported(self, name: str) -> bool:
        """Does a project file import the definition ``name`` (``ProjectIndex.imported``)?"""
        return self.index.imported(name)

    def imported_by_name_only(self, module: str) -> bool:
        """Do project files import names from ``module``, and none the module whole
        (``ProjectIndex.imported_by_name_only``)?"""
        return self.index.imported_by_name_only(module)

    def imported_by_name_or_star(self, module: str) -> bool:
        """Do project files import names from ``module``, none it whole, and some ``*``
        (``ProjectIndex.imported_by_name_or_star``)?"""
        return self.index.imported_by_name_or_star(module)

    def whole_imports(self, module: str) -> List[List[str]]:
        """[file, local name] of each project file's import binding ``module`` whole
        (``ProjectIndex.whole_imports``)."""
        return [[str(path), local] for path, local in self.index.whole_imports(module)]

    def named_in_configs(self, word: str, outside: Optional[Path] = None) -> bool:
        """Does a configuration file of the project name ``word`` (a Hydra ``_target_`` naming a
        class, a ``type: Net`` entry)? ``outside``: one not below that directory."""
        answers = self.memo("named_in_configs")
        key = word if outside is None else (word, outside)
        if key in answers:
            return answers[key]
        texts = self.memo("config_texts")
        if not texts:
            from .config_evidence import MAX_CONFIG_BYTES
            for f in self.config_files():
                try:
                    # (a file past MAX_CONFIG_BYTES is data: VideoX's 4 MB annotation JSONs, searched once per
                    # module name, made a 25-file tree take minutes)
                    # (a Markdown file is read for its documented commands' precision only, not for what its prose names)
                    texts[f] = "" if f.suffix == ".md" or f.stat().st_size > MAX_CONFIG_BYTES \
                        else f.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    texts[f] = ""
        rx = re.compile(rf"\b{re.escape(word)}\b")
        answers[key] = any(rx.search(text) for f, text in texts.items() if outside is None or outside not in f.parents)
        return answers[key]

    def config_leaves_off(self, dotted: str, param: str) -> Optional[bool]:
        """Where YAML configs build the class ``dotted`` by a ``target:`` / Hydra ``_target_:`` key (``target:
        pkg.losses.VQLPIPSWithDiscriminator`` with its ``params:``; Hydra's keys beside ``_target_``): True when
        every such build leaves the constructor option ``param`` off (unset, or ``false`` / ``null`` / ``0``),
        False when one sets it, None when no config names it so (or one naming it does not parse)."""
        answers = self.memo("config_targets").setdefault("leaves_off", {})
        key = (dotted, param)
        if key not in answers:
            answers[key] = self._config_leaves_off(dotted, param)
        return answers[key]

    def _config_leaves_off(self, dotted: str, param: str) -> Optional[bool]:
        from .config_evidence import MAX_CONFIG_BYTES
        builds = []
        for config, names in self._config_targets().items():
            if dotted not in names:
                continue
            try:
                if config.stat().st_size > MAX_CONFIG_BYTES:
                    return None
                import yaml
                data = yaml.safe_load(config.read_text(encoding="utf-8", errors="replace"))
            except Exception:  # a YAML that does not parse says nothing of how it builds the class
                return None
            found = []
            stack = [data]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    if node.get("target") == dotted:
                        params = node.get("params")
                        found.append(params if isinstance(params, dict) else {})
                    elif node.get("_target_") == dotted:
                        found.append(node)
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
            if not found:
                return None  # named where the walk does not see it (a multi-document file, a flow string)
            builds += found
        if not builds:
            return None
        return all(b.get(param) in (None, False, 0) for b in builds)

    def subclasses(self, name: str) -> List[Symbol]:
        """The project classes deriving from ``name``, directly or not (``ProjectIndex.subclasses``)."""
        return self.index.subclasses(name)

    def constant(self, qualname: str) -> Optional[float]:
        """Value of a numeric module-level constant of a project module, e.g. ``pkg.consts.NEAR_INF``."""
        module, _, name = qualname.rpartition(".")
        path = self._module_paths().get(module)
        return self.summary(path).constants.get(name) if path is not None else None


class _Reached:
    """The project functions an entry point's file reaches through calls (the project index's call
    graph: a built class reaches its methods), computed on first use."""
    def __init__(self, project: "Project", path: Path) -> None:
        self.project, self.path = project, path
        self._names: Optional[set] = None

    def reaches(self, name: str) -> bool:
        """Is the project symbol ``name`` (``pkg.mod.Class.method``) reached?"""
        self.holds(self.path, "")
        return name in self._names

    def holds(self, path: Path, function: str) -> bool:
        if self._names is None:
            # everything the entry point's file defines: its training function is set up by the
            # others (fairseq_cli/train.py's main builds the Trainer, then calls train())
            index = self.project.index
            # (and its module-level code: a script that builds the model and calls the loop at top level)
            self._names = index.reachable([s.name for s in index.symbols_in(self.path)] + [index.module_level(self.path)],
                                          exclude=self.project.fallback_classes())
        named = [s for s in self.project.index.symbols_in(path) if s.qualname.rsplit(".", 1)[-1] == function]
        return not named or any(s.name in self._names for s in named)

    def calls_method(self, path: Path, function: str, reach: set) -> bool:
        """Is a method named ``function`` of a class of ``path`` called, by that name, on an object (not ``self``) in a
        file of ``reach``, the files the entry point imports (xtuner's ``TrainEngine.build_model``: ``model =
        model.fully_shard(self.fsdp_cfg)`` on a model its config builds, which the call graph does not follow, and
        ``BaseModel.fully_shard`` builds the FSDP2 policy)?"""
        project = self.project
        if not any(s.is_method and s.qualname.rsplit(".", 1)[-1] == function for s in project.index.symbols_in(path)):
            return False
        memo = self.__dict__.setdefault("_method_calls", {})
        if function not in memo:
            memo[function] = self._calls_method(function, reach)
        return memo[function]

    def _calls_method(self, function: str, reach: set) -> bool:
        project = self.project
        call = re.compile(rb"(?<!\bself)\.\s*" + re.escape(function.encode()) + rb"\(")
        for q in reach:
            if project.is_test(q):
                continue
            try:
                if call.search(project.read(q)):
                    return True
            except OSError:
                continue
        return False


def _longest_module(name: str, modules: Dict[str, Path], floor: int = 1) -> Optional[Path]:
    """The project module ``name`` or its longest prefix names (``pkg.mod.Class`` -> ``pkg.mod``), of at
    least ``floor`` parts."""
    parts = name.split(".")
    while len(parts) >= max(floor, 1):
        hit = modules.get(".".join(parts))
        if hit is not None:
            return hit
        parts.pop()
    return None


def _reexport_targets(name: str, init: Path, modules: Dict[str, Path], packages: Dict[Path, str],
                      names: Dict[Path, dict]) -> Optional[List[Path]]:
    """The module that defines ``name`` (``pkg.nn.FullyConnected``) when the package ``__init__`` it is imported
    from (``init``) only re-exports it (``from .module import FullyConnected``), through nested packages doing
    the same: the code an importer of that name runs. Importing it runs every module the ``__init__`` imports,
    but their functions and classes run only when called: physicsnemo's domino training imports a few layers
    from ``physicsnemo.nn``, whose ``__init__`` imports every layer and functional of the package. None when
    the name is not a re-export (defined in the ``__init__``, or from a star import): the ``__init__`` then."""
    for _ in range(8):
        module = packages.get(init)
        if module is None or not name.startswith(module + "."):
            return None
        first, _, rest = name[len(module) + 1:].partition(".")
        bound = names.get(init, {}).get(first)
        if not bound or bound.startswith("*"):
            return None
        name = ".".join(x for x in (bound, rest) if x)
        hit = _longest_module(name, modules)
        if hit is None or hit == init:
            return None
        if hit.name != "__init__.py" or name in modules:
            return [hit]
        init = hit
    return None


def _lazy_targets(name: str, modules: Dict[str, Path], facts: Dict[Path, dict]) -> List[Path]:
    """The modules that importing ``name`` (``pkg.separation.MossFormer``) loads through lazy
    packages: when the module it names (``pkg.separation``) provides ``MossFormer`` on first use
    (``precision_facts._lazy_names``: an ``if TYPE_CHECKING:`` import, an ``_import_structure``
    entry), the submodule that defines it, and so on through lazy packages re-exporting it."""
    out: List[Path] = []
    for _ in range(8):
        parts = name.split(".")
        for n in range(len(parts) - 1, 0, -1):
            path = modules.get(".".join(parts[:n]))
            if path is not None:
                break
        else:
            return out
        lazy = facts.get(path, {}).get("lazy")
        target = lazy.get(parts[n]) if lazy else None
        if not target:
            return out
        name = ".".join([target, *parts[n + 1:]])
        hit = _longest_module(name, modules)
        if hit is None or hit == path or hit in out:
            return out
        out.append(hit)
    return out


def _closure_of(starts, graph: Dict[Path, set], outside: set = frozenset()) -> set:
    """The files ``starts`` lead to through ``graph`` (themselves included), not entering ``outside``."""
    seen = {s for s in starts if s not in outside}
    todo = list(seen)
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen and nxt not in outside:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _closure(start: Path, graph: Dict[Path, set]) -> set:
    seen = {start}
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


# An option's string value naming a half dtype (``--torch_dtype float16``), as ``getattr(torch, value)`` reads it
_HALF_OPTION_VALUES = {"float16": "float16", "half": "float16", "fp16": "float16", "bfloat16": "bfloat16",
                       "bf16": "bfloat16"}
_DEEPSPEED_WORD = re.compile(r"(?i)deepspeed|ds_?config")
_DEEPSPEED_PROGRAM = re.compile(rb"\bimport deepspeed\b|\bdeepspeed\.initialize\b")
_SHELL_PROGRAM = re.compile(r"([\w.${}/-]*?[\w-]+\.py)\b")


# A lookup of a module's own names by string: ``globals()[name]``, ``getattr(sys.modules[__name__], name)``.
_NAME_LOOKUP = re.compile(r"\bglobals\(\)\s*\[|sys\.modules\[__name__\]")


def _as_the_program_reads(sig: Signal, program_signals: List[dict]) -> Signal:
    """A launcher's generic ``--amp`` means what the program's own ``--amp`` switches: bf16 where its
    autocast is (``precision_facts.GENERIC_AMP_FLAGS``)."""
    if sig.kind != "flag" or sig.dtype != "float16" or sig.note not in GENERIC_AMP_FLAGS:
        return sig
    own = [s for s in program_signals if s["kind"] == "flag" and s["note"].startswith(f"command line {sig.note}")]
    if own and all(s["dtype"] == "bfloat16" for s in own):
        return dataclasses.replace(sig, dtype="bfloat16", note=f"{sig.note} (the program's autocast is bfloat16)")
    return sig


def _named_programs(text: str) -> List[str]:
    """The Python programs a shell script runs, each as the tail of its path that names no variable
    (``${MEGATRON}/examples/t5/pretrain_t5.py`` -> ``examples/t5/pretrain_t5.py``; ``./train.py`` ->
    ``train.py``)."""
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0]
        for m in _SHELL_PROGRAM.finditer(line):
            parts = m.group(1).split("/")
            tail: List[str] = []
            for part in reversed(parts):
                if not part or "$" in part or "{" in part or "}" in part or part in (".", ".."):
                    break
                tail.insert(0, part)
            if tail and "/".join(tail) not in out:
                out.append("/".join(tail))
    return out


# ``python -m pkg.mod``, ``torchrun --nproc_per_node 8 -m pkg.mod``, ``deepspeed --module pkg.mod``: a module run
# by name (its options follow it)
_SHELL_MODULE = re.compile(r"(?:^|[\s\"'])(?:-m|--module)[ \t=]+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?=[\s\"';\\]|$)")


def _named_modules(text: str) -> List[str]:
    """The dotted modules a shell script runs by name (``-m pkg.finetune.base``), in order, once each."""
    out: List[str] = []
    for raw in text.splitlines():
        for m in _SHELL_MODULE.finditer(raw.split("#", 1)[0]):
            if m.group(1) not in out:
                out.append(m.group(1))
    return out


def _config_applies(config: Path, entry: Path, root: Optional[Path] = None) -> bool:
    """A configuration file belongs to the entry points in its directory, above it (``configs/``
    beside ``train.py``) or below it."""
    c, e = config.parent, entry.parent
    if c == e or e in c.parents or c in e.parents:
        return True
    if _beside_training_program(c) or (_beside_training_program(c.parent) and c.parent != e and c.parent not in e.parents):
        # a program's own configs (speechbrain's recipes/<dataset>/<task>/hparams/ beside its train.py): its run's
        return False
    # a configuration directory (``configs/``, ``conf/``, ``cfg/``) belongs to the tree beside it: dinov2's
    # dinov2/configs/ssl_default_config.yaml and its dinov2/train/train.py
    for d in (c, *c.parents):
        if root is None or d == root or root not in d.parents:
            break
        if _CONFIG_DIR.fullmatch(d.name):
            if d in e.parents:
                # the entry point lives in it: a directory of programs, each with its own configs (speechbrain's
                # recipes/<dataset>/<task>/train.py and hparams/), not one configuration directory for all
                return False
            return d.parent in e.parents or d.parent == e
    return False


# an external trainer's command line, training a package named by --user-dir (fairseq, Uni-Core)
_EXTERNAL_TRAINER = re.compile(r"(?<![\w-])(?:fairseq|unicore)-(?:hydra-)?train\b")
_USER_DIR = re.compile(r"--user-dir[= ]+(\S+)")
# a detectron2 / yacs config's AMP switch (``config_evidence``: ``SOLVER.AMP.ENABLED: True``) and the libraries reading it
_YACS_AMP_SWITCH = re.compile(r"(?:[A-Z_]+\.)*AMP\.ENABLED?: ")
_YACS_READERS = frozenset({"detectron2", "yacs", "fvcore", "detrex"})
# the methods of a plug-in's task that fairseq-train / unicore-train call to train (``FairseqTask.train_step``)
_EXTERNAL_TRAINER_HOOKS = frozenset({"train_step"})
# a path below a directory a shell variable holds (``$EXP_HOME/FastCorrect``, ``${ROOT}/plugins/x``)
_VARIABLE_ROOTED = re.compile(r"\$\{?\w+\}?/+(.+)")
_EXTERNAL_FLAG = re.compile(r"(?<![\w-])--(memory-efficient-fp16|fp16|bf16|amp)(?![\w-])")
# Lightning's precision values (``precision_facts._LIGHTNING``)
_LIGHTNING_VALUES = {"16": ("float16", False), "16-mixed": ("float16", False), "16-true": ("float16", True),
                     "bf16": ("bfloat16", False), "bf16-mixed": ("bfloat16", False), "bf16-true": ("bfloat16", True)}
# the note of an autocast whose dtype the code does not say (``context.evidence``)
_OPEN_AUTOCAST_DTYPE = "dtype not a literal, assumed float16"
# the note of a command-line option's default precision (``precision_facts._cli_signal``)
_CLI_DEFAULT = re.compile(r"command line --([\w-]+) default ")
# an object holding a program's options: ``args``, ``model_args``, ``training_args``, ``cfg``, ``opts``, ``hparams``
_OPTIONS_OBJECT = re.compile(r"(?i)\w*args|\w*(?:cfg|conf|config)\w*|opts?|h?params|hp")
# the fields of an arguments object spread into a call: ``**asdict(model_args)``, ``**vars(args)``
def _switch_options(test: str) -> Optional[List[str]]:
    """The switches a branch test reads (``not (args.bf16)`` -> bf16; ``training_args.fp16 and not args.bf16`` -> fp16,
    bf16): attributes of an options object, combined by ``not`` / ``and`` / ``or``; None for any other test."""
    try:
        node = ast.parse(test, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    out: List[str] = []

    def walk(n: ast.AST) -> bool:
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return walk(n.operand)
        if isinstance(n, ast.BoolOp):
            return all(walk(v) for v in n.values)
        if isinstance(n, ast.Attribute) and isinstance(n.value, (ast.Name, ast.Attribute)) \
                and _OPTIONS_OBJECT.fullmatch((ast_dotted(n.value) or "").rsplit(".", 1)[-1]):
            if n.attr not in out:
                out.append(n.attr)
            return True
        return False

    return out if walk(node) and out else None


def _switch_truth(test: str, values: Dict[str, bool]) -> Optional[bool]:
    """``test`` (``_switch_options``') under the switches' ``values``; None when one is missing."""
    return _truth(test, lambda n: values.get(n.attr) if isinstance(n, ast.Attribute) else None)


# a launcher stating a precision (``--bf16 True``, ``--precision bf16``, ``--torch_dtype bfloat16``): the switches it
# does not pass are at their defaults in its run
_STATES_PRECISION = re.compile(r"(?<![\w-])--(?:fp16|bf16|half|amp|use[_-]amp|precision|mixed[_-]precision|[\w-]*dtype)"
                               r"(?![\w-])")
_SWITCH_VALUE = {"true": True, "1": True, "false": False, "0": False}
_SHELL_ASSIGN = re.compile(r"""(?ms)^[ \t]*(?:export[ \t]+)?(\w+)=(?:(["'])(.*?)\2|([^\s"'#]*))""")


def _script_commands(text: str) -> List[str]:
    """A shell script's commands (lines joined at a trailing backslash, comments dropped), each with the variables it
    expands (``$options`` / ``${options}``) replaced by the value the script assigns them, when it assigns one once."""
    return [command for _, _, command in _command_spans(text)]


def _command_spans(text: str) -> List[Tuple[int, int, str]]:
    """``_script_commands`` with the first and last line of each command (1-based)."""
    assigned: Dict[str, set] = {}
    for m in _SHELL_ASSIGN.finditer(text):
        assigned.setdefault(m.group(1), set()).add(m.group(3) if m.group(2) else m.group(4))
    values = {k: next(iter(v)) for k, v in assigned.items() if len(v) == 1}
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, parts = i, [lines[i]]
        while re.search(r"\\[ \t]*$", parts[-1]) and i + 1 < len(lines):
            parts[-1] = re.sub(r"\\[ \t]*$", " ", parts[-1])
            i += 1
            parts.append(lines[i])
        i += 1
        code = "".join(parts).split("#", 1)[0].strip()
        if code:
            out.append((start + 1, i, re.sub(r"\$\{?(\w+)\}?", lambda m: " " + values[m.group(1)] + " "
                                             if m.group(1) in values else m.group(0), code)))
    return out


# a script's own arguments forwarded (``"$@"``, ``$*``)
_FORWARDED = re.compile(r"""["']?\$(?:@|\*|\{@\}|\{\*\})["']?""")
# a command running a shell script: ``bash x.sh``, ``sh scripts/x.sh``, ``source x.sh``, ``./x.sh``
_SCRIPT_RUN = re.compile(r"""(?:(?:^|[\s;&|(])(?:bash|sh|zsh|source)[ \t]+|(?:^|[\s;&|(])(?=\.{0,2}/))(["']?[\w.${}/-]+\.sh["']?)(?=\s|$)""")


def _assigned_values(text: str) -> Dict[str, set]:
    """The values a shell script assigns each variable (``X=...``, ``export X="..."``)."""
    assigned: Dict[str, set] = {}
    for m in _SHELL_ASSIGN.finditer(text):
        assigned.setdefault(m.group(1), set()).add(m.group(3) if m.group(2) else m.group(4))
    return assigned


def _standalone_variables(command: str) -> List[str]:
    """The variables a command expands as words of their own (``$TASK_EXTRA``), not as an option's value
    (``--learning_rate $LR``) nor inside a word (``result/$TAG``)."""
    tokens = command.split()
    out = []
    for i, tok in enumerate(tokens):
        m = re.fullmatch(r"""["']?\$\{?(\w+)\}?["']?""", tok)
        if m and not (i > 0 and tokens[i - 1].startswith("-") and "=" not in tokens[i - 1]):
            out.append(m.group(1))
    return out


def _closed_command(command: str, assigned: Dict[str, set]) -> bool:
    """Are all of a command's arguments known: no forwarded ``"$@"`` and no word-of-its-own variable that the script
    does not set (which may hold any option)? Its switches not passed are then at their defaults."""
    return not _FORWARDED.search(command) and all(name in assigned for name in _standalone_variables(command))


def _passed_switch(text: str, option: str) -> set:
    """The values a launcher script's text gives the switch ``--option`` (also spelled with ``-``): True when
    passed bare, else its ``True`` / ``False`` / ``1`` / ``0`` value."""
    names = "|".join(re.escape(n) for n in {option, option.replace("_", "-")})
    pattern = re.compile(rf"(?<![\w-])--(?:{names})(?:(?:=| +)[\"']?(True|False|true|false|1|0)\b)?(?![\w-])")
    found = set()
    for raw in text.splitlines():
        for m in pattern.finditer(raw.split("#", 1)[0]):
            found.add(_SWITCH_VALUE[m.group(1).lower()] if m.group(1) else True)
    return found


_FIELDS_SPREAD = re.compile(r"(?:dataclasses\.)?(?:asdict|vars)\(\w+\)|\w+\.__dict__")


def _nearer_program(config: Path, entry: Path) -> bool:
    """Does a directory between the configuration file ``config`` and the directory of the program ``entry`` below it
    hold a training program of its own (``other/train.py`` beside ``other/configs/``): that program's config?"""
    e = entry.parent
    if e not in config.parents:
        return False
    d = config.parent
    while d != e:
        if _beside_training_program(d):
            return True
        d = d.parent
    return False


@functools.lru_cache(maxsize=4096)
def _beside_training_program(d: Path) -> bool:
    """``d`` holds a training program (``train*.py``)."""
    try:
        return any(p.suffix == ".py" and p.name.startswith("train") for p in d.iterdir())
    except OSError:
        return False


# a ``target:`` key of a YAML config naming a dotted Python object (latent-diffusion's ``instantiate_from_config``),
# or Hydra's ``_target_:`` (``hydra.utils.instantiate``)
_TARGET_KEY = re.compile(r"""^[ \t-]*(?:target|_target_):[ \t]*["']?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)["']?[ \t]*(?:#.*)?$""",
                         re.M)
_CONFIG_DIR = re.compile(r"(?i)configs?|conf|cfgs?|recipes?")
_PY_CONFIG_DIR = re.compile(r"configs?|conf|cfgs?")  # (precision_facts._PY_CONFIG_FILE's)  # recipes/: alignment-handbook's run configs


def _record_reads(cls):
    """Wrap the accessors named in ``cls.RECORDED`` so that what they answer is noted."""
    import functools

    for name in cls.RECORDED:
        attr = cls.__dict__[name]
        if isinstance(attr, property):
            def getter(self, _get=attr.fget, _name=name):
                value = _get(self)
                self.note_fact(_name, (), value)
                return value
            setattr(cls, name, property(getter, doc=attr.__doc__))
        else:
            @functools.wraps(attr)
            def method(self, *args, _call=attr, _name=name):
                value = _call(self, *args)
                self.note_fact(_name, args, value)
                return value
            setattr(cls, name, method)
    return cls


_record_reads(Project)
