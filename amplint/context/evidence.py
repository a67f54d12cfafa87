"""What a call says about precision, decided on a parser-neutral description of the call.

The project-wide regime scan reads files with the stdlib ``ast`` (fast, many files) and the per-file
context reads them with libcst (the file being linted); both turn a call into a ``CallFacts`` and ask
``classify`` here, so the knowledge of autocast / GradScaler / trainer flags lives in one place.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from .._lazy import cst

from ..torch_api.trainers import COLOSSALAI_DEFAULT_PRECISION, COLOSSALAI_MASTER_WEIGHT_PLUGINS, LIGHTNING_APEX_DEFAULT_LEVEL
from ..torch_api.trainers import COMPOSER_PRECISIONS, LIGHTNING_APEX_LEVEL, LIGHTNING_APEX_SWITCH, LIGHTNING_TRAINERS
from .imports import ImportTable, dotted_name


@dataclass(frozen=True)
class Dotted:
    """A (resolved) dotted name used as an argument value, e.g. ``torch.float16``."""
    name: str


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()  # an argument whose value is not a literal or a name


class _CallerState:
    def __repr__(self) -> str:
        return "CALLER_STATE"


# An argument read from the autocast state in force where the call runs (``torch.is_autocast_enabled("cuda")``,
# ``torch.get_autocast_dtype("cuda")``): an autocast given it replays its caller's state (TransformerEngine's
# activation recompute, T11-11) and says no precision of its own.
CALLER_STATE: Any = _CallerState()

AUTOCAST_STATE_NAMES = frozenset({
    "torch.is_autocast_enabled", "torch.cuda.is_autocast_enabled", "torch.is_autocast_cpu_enabled",
    "torch.get_autocast_dtype", "torch.get_autocast_gpu_dtype", "torch.get_autocast_cpu_dtype",
    "torch.cuda.get_autocast_gpu_dtype",
})

FLOAT16_NAMES = {"torch.float16", "torch.half"}
BFLOAT16_NAMES = {"torch.bfloat16"}
FLOAT32_NAMES = {"torch.float32", "torch.float", "torch.float64", "torch.double"}

AUTOCAST_NAMES = {
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast",
    "torch.cuda.amp.autocast",
    "torch.cuda.amp.autocast_mode.autocast",
    "torch.cpu.amp.autocast",
}
GRAD_SCALER_NAMES = {
    "torch.cuda.amp.GradScaler",
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.cpu.amp.GradScaler",
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
    "fairscale.optim.grad_scaler.ShardedGradScaler",
}


@dataclass
class CallFacts:
    qualname: Optional[str]  # resolved dotted name of the callee, if it is a Name/Attribute chain
    method: Optional[str]  # last attribute of the callee (``half`` in ``model.half()``)
    receiver: Optional[str]  # dotted text of the receiver of a method call (``model``)
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)
    target: Optional[str] = None  # ``model`` in ``model = Net().half()``


# the note that starts a DeepSpeed config's fp16 section signal (``config_evidence``: a JSON / YAML config, a dict
# literal handed to ``deepspeed.initialize``): a float16 model with float32 master weights and loss scaling
DEEPSPEED_FP16 = 'DeepSpeed "fp16"'


@dataclass(frozen=True)
class Signal:
    """One piece of precision evidence: ``kind`` is autocast | grad_scaler | half_params | flag."""
    kind: str
    dtype: str  # "float16" | "bfloat16" | "float32"
    enabled: bool = True
    pure: bool = False  # parameters themselves are in this dtype (not mixed precision)
    note: str = ""
    # a half model whose optimizer keeps float32 master weights (DeepSpeed fp16, apex O2, FSDP
    # param_dtype, a Float16Module-style wrapper): activations float16, optimizer state float32
    master: bool = False
    model: str = ""  # the object cast (``vae`` in ``vae.to(dtype=weight_dtype)``), when known
    # taken only in some runs: an ``if`` on a dtype flag, a dtype variable that is one of several
    conditional: bool = False
    condition: str = ""  # the text of that condition (``if cfg.common.fp16``), when there is one


def dtype_of_value(value: Any) -> Optional[str]:
    if isinstance(value, Dotted):
        if value.name in FLOAT16_NAMES:
            return "float16"
        if value.name in BFLOAT16_NAMES:
            return "bfloat16"
        if value.name in FLOAT32_NAMES:
            return "float32"
    if isinstance(value, str):
        v = value.lower()
        if v in ("float16", "fp16", "half", "torch.float16"):
            return "float16"
        if v in ("bfloat16", "bf16", "torch.bfloat16"):
            return "bfloat16"
    return None


_MODEL_WORDS = ("model", "net", "module", "encoder", "decoder", "backbone", "transformer", "policy",
                "critic", "actor", "classifier", "head", "unet", "vae", "generator", "discriminator",
                "layer", "block")


# Receivers whose half copy does not train: inference pipelines, EMA / teacher copies, frozen parts.
_NOT_TRAINED = ("pipe", "ema", "teacher", "frozen", "eval", "infer")


# Names of a model's activations, though they hold a model word (``encoder_hidden_states``,
# ``decoder_outputs``, ``unet_latents``): casting one casts a tensor, not parameters (sd-scripts'
# ``get_hidden_states(..., weight_dtype)``: ``encoder_hidden_states.to(weight_dtype)``).
_ACTIVATION_SUFFIXES = ("states", "_state", "hidden", "outputs", "output", "_out", "latents", "logits", "features",
                        "embeds", "_ids", "mask")


def _looks_like_model(receiver: Optional[str]) -> bool:
    if not receiver:
        return False
    if any(w in part.lower() for part in receiver.split(".") for w in _NOT_TRAINED):
        return False
    last = receiver.rsplit(".", 1)[-1].lower()
    return any(w in last for w in _MODEL_WORDS) and not last.endswith(_ACTIVATION_SUFFIXES)


def autocast_signal(facts: CallFacts) -> Optional[Signal]:
    """The dtype and enabled state of an autocast call (``torch.autocast("cuda")`` etc.)."""
    q = facts.qualname
    if q not in AUTOCAST_NAMES:
        return None
    kwargs = facts.kwargs
    args = list(facts.args)
    if q.startswith("torch.cuda."):
        device: Any = "cuda"
        # torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)
        enabled = kwargs.get("enabled", args[0] if args else True)
        dtype_arg = kwargs.get("dtype", args[1] if len(args) > 1 else None)
    elif q.startswith("torch.cpu."):
        device = "cpu"
        enabled = kwargs.get("enabled", args[0] if args else True)
        dtype_arg = kwargs.get("dtype", args[1] if len(args) > 1 else None)
    else:
        # torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)
        device = kwargs.get("device_type", args[0] if args else UNKNOWN)
        dtype_arg = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        enabled = kwargs.get("enabled", args[2] if len(args) > 2 else True)
    if enabled is CALLER_STATE or dtype_arg is CALLER_STATE:
        # ``autocast("cuda", enabled=torch.is_autocast_enabled("cuda"), dtype=torch.get_autocast_dtype("cuda"))``:
        # the caller's own autocast, re-entered (a recompute in backward): no region, no precision of its own
        return None
    if dtype_arg is None:
        # The default dtype follows the device: cuda -> float16, cpu -> bfloat16. A device that is
        # not a literal (``x.device.type``) is assumed to be cuda, where training happens.
        dtype = "bfloat16" if device == "cpu" else "float16"
        note = "" if isinstance(device, str) else "device not a literal, assumed cuda"
    else:
        dtype = dtype_of_value(dtype_arg) or "float16"
        note = "" if dtype_of_value(dtype_arg) else "dtype not a literal, assumed float16"
    return Signal("autocast", dtype, enabled=enabled is not False, note=note)


def autocast_device(facts: CallFacts) -> Optional[str]:
    """The device type of an autocast call: "cuda", "cpu", another literal, or None when it is
    not a literal (``x.device.type``; callers assume cuda). None for calls that are not autocast."""
    q = facts.qualname
    if q not in AUTOCAST_NAMES:
        return None
    if q.startswith("torch.cuda."):
        return "cuda"
    if q.startswith("torch.cpu."):
        return "cpu"
    device = facts.kwargs.get("device_type", facts.args[0] if facts.args else UNKNOWN)
    return device if isinstance(device, str) else None


def unwrap_partial(facts: CallFacts) -> CallFacts:
    """``functools.partial(torch.autocast, device_type=..., dtype=...)`` (timm's train.py) is the
    call it prepares."""
    if facts.qualname in ("functools.partial", "partial") and facts.args and isinstance(facts.args[0], Dotted):
        return CallFacts(facts.args[0].name, facts.args[0].name.rsplit(".", 1)[-1], None,
                         tuple(facts.args[1:]), dict(facts.kwargs), facts.target)
    return facts


def classify(facts: CallFacts) -> Optional[Signal]:
    """Precision evidence carried by one call, or None."""
    facts = unwrap_partial(facts)
    q = facts.qualname or ""
    sig = autocast_signal(facts)
    if sig is not None:
        return sig
    if q in GRAD_SCALER_NAMES or q.endswith(".GradScaler") and q.startswith("torch.") \
            or q.rsplit(".", 1)[-1] in ("GradScaler", "ShardedGradScaler") and "." in q:
        # (also a project module re-exporting torch's: dinov2's ``from dinov2.fsdp import ShardedGradScaler``)
        enabled = facts.kwargs.get("enabled", True)
        return Signal("grad_scaler", "float16", enabled=enabled is not False)
    method = facts.method
    kw = facts.kwargs
    # Half parameters: model.half(), model.to(torch.float16), from_pretrained(torch_dtype=...).
    model_like = _looks_like_model(facts.receiver) or _looks_like_model(facts.target)
    if method in ("half", "bfloat16") and not facts.args and model_like:
        return Signal("half_params", "float16" if method == "half" else "bfloat16", pure=True)
    if method == "to" and model_like:
        for v in (*facts.args, kw.get("dtype")):
            d = dtype_of_value(v) if isinstance(v, Dotted) else None
            if d in ("float16", "bfloat16"):
                return Signal("half_params", d, pure=True)
    if "torch_dtype" in kw or ("dtype" in kw and q.endswith("from_pretrained")):
        d = dtype_of_value(kw.get("torch_dtype", kw.get("dtype")))
        if d in ("float16", "bfloat16") and isinstance(kw.get("torch_dtype", kw.get("dtype")), Dotted):
            return Signal("half_params", d, pure=True)
    if q in ("torch.set_default_dtype",) and facts.args:
        d = dtype_of_value(facts.args[0])
        if d in ("float16", "bfloat16"):
            return Signal("half_params", d, pure=True)
    # apex: amp.initialize(model, optimizer, opt_level="O1")
    if q in ("apex.amp.initialize",):
        level = kw.get("opt_level", "O1")
        if level == "O0":
            return None
        # O2 casts the model to half and keeps float32 master weights in the optimizer; O3 is pure half
        return Signal("flag", "float16", pure=level in ("O2", "O3"), note=f"apex opt_level={level}", master=level == "O2")
    last = q.rsplit(".", 1)[-1] if q else (method or "")
    # Lightning 0.x: Trainer(use_amp=not args.fp32, amp_level="O2") trains with apex at that level (longformer)
    if q in LIGHTNING_TRAINERS and LIGHTNING_APEX_SWITCH in kw and kw[LIGHTNING_APEX_SWITCH] is not False \
            and kw[LIGHTNING_APEX_SWITCH] is not None:
        level = kw.get(LIGHTNING_APEX_LEVEL, LIGHTNING_APEX_DEFAULT_LEVEL)
        level = level.upper() if isinstance(level, str) and level.upper() in ("O0", "O1", "O2", "O3") else "O1"
        if level == "O0":
            return None
        switched = kw[LIGHTNING_APEX_SWITCH] is not True
        return Signal("flag", "float16", pure=level in ("O2", "O3"), master=level == "O2",
                      note=f"apex opt_level={level} (Lightning {LIGHTNING_APEX_SWITCH})" + (" (one of)" if switched else ""),
                      conditional=switched, condition=f"if {LIGHTNING_APEX_SWITCH}" if switched else "")
    # Hugging Face TrainingArguments(fp16=True) / (bf16=True), and similar argument classes.
    if "Argument" in last or "Config" in last or "Trainer" in last:
        if kw.get("fp16") is True:
            return Signal("flag", "float16", note="fp16=True")
        if kw.get("bf16") is True:
            return Signal("flag", "bfloat16", note="bf16=True")
        # coqui's ``VitsConfig(mixed_precision=True)`` handed to ``trainer.Trainer``: autocast + GradScaler
        for key in ("mixed_precision", "use_amp"):
            if kw.get(key) is True:
                return Signal("flag", "float16", note=f"{key}=True")
        # ``fp16=args.fp16``: the command line picks; fp16 is one of the precisions it runs in
        for key, dtype in (("fp16", "float16"), ("bf16", "bfloat16")):
            if isinstance(kw.get(key), Dotted) or kw.get(key) is UNKNOWN:
                return Signal("flag", dtype, note=f"{key}=<from the command line or a config> (one of)")
    if q.startswith("colossalai.") and last in COLOSSALAI_MASTER_WEIGHT_PLUGINS:
        return _colossalai_plugin(last, kw.get("precision", COLOSSALAI_DEFAULT_PRECISION))
    # accelerate: Accelerator(mixed_precision="fp16")
    mp = kw.get("mixed_precision")
    if isinstance(mp, str) and mp in ("fp16", "bf16"):
        return Signal("flag", "float16" if mp == "fp16" else "bfloat16", note=f'mixed_precision="{mp}"')
    # Lightning: Trainer(precision=16 | "16-mixed" | "16-true" | "bf16-mixed" | ...)
    if last in ("Trainer", "Fabric") and "precision" in kw:
        p = kw["precision"]
        p = str(p) if isinstance(p, (int, str)) and not isinstance(p, bool) else None
        if p in ("16", "16-mixed"):
            return Signal("flag", "float16", note=f"precision={p}")
        if p == "16-true":
            return Signal("flag", "float16", pure=True, note=f"precision={p}")
        if p in ("bf16", "bf16-mixed"):
            return Signal("flag", "bfloat16", note=f"precision={p}")
        if p == "bf16-true":
            return Signal("flag", "bfloat16", pure=True, note=f"precision={p}")
        if p in COMPOSER_PRECISIONS:  # composer: Trainer(precision="amp_fp16"), autocast (P22-3)
            return Signal("flag", COMPOSER_PRECISIONS[p], note=f"precision={p}")
    return None


def _colossalai_plugin(plugin: str, precision: Any) -> Optional[Signal]:
    """``LowLevelZeroPlugin(precision=...)`` and kin: a half model with float32 master weights; a
    precision read from a config (Open-Sora's ``cfg.get("dtype", "bf16")``) is one of fp16 / bf16."""
    if isinstance(precision, str):
        dtype = dtype_of_value(precision)
        if dtype is None:
            return None  # "fp32"
        return Signal("flag", dtype, pure=True, master=True, note=f'ColossalAI {plugin}(precision="{precision}")')
    return Signal("flag", "float16", pure=True, master=True, conditional=True,
                  note=f"ColossalAI {plugin}(precision=<from the command line or a config>) (one of fp16 / bf16)")


# ---- turning calls into CallFacts -------------------------------------------------------------

def cst_value(node: cst.BaseExpression, imports: ImportTable) -> Any:
    if isinstance(node, cst.Call):
        name = dotted_name(node.func)
        return CALLER_STATE if name is not None and imports.resolve(name) in AUTOCAST_STATE_NAMES else UNKNOWN
    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value if isinstance(node.evaluated_value, str) else UNKNOWN
        except Exception:  # pragma: no cover - odd literals
            return UNKNOWN
    if isinstance(node, cst.Name):
        if node.value in ("True", "False"):
            return node.value == "True"
        if node.value == "None":
            return None
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return UNKNOWN
    name = dotted_name(node)
    if name is not None:
        return Dotted(imports.resolve(name))
    return UNKNOWN


# Calls that move a module or switch its mode and return it: seen through to find a cast's receiver.
_MOVES = frozenset({"cuda", "cpu", "to", "eval", "train", "requires_grad_", "to_empty"})


def cst_call_facts(call: cst.Call, imports: ImportTable, target: Optional[str] = None) -> CallFacts:
    func = call.func
    name = dotted_name(func)
    method = receiver = None
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        value = func.value
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _MOVES:
            value = value.func.value  # ``model.cuda().half()``: the receiver is the model
        receiver = dotted_name(value)
    elif isinstance(func, cst.Name):
        method = func.value
    args = []
    kwargs: Dict[str, Any] = {}
    for a in call.args:
        if a.star:
            continue
        if a.keyword is not None:
            kwargs[a.keyword.value] = cst_value(a.value, imports)
        else:
            args.append(cst_value(a.value, imports))
    return CallFacts(imports.resolve(name) if name else None, method, receiver, tuple(args), kwargs)


def ast_dotted(node: ast.AST) -> Optional[str]:
    if node.__class__ is ast.Name:
        return node.id  # (most of what is asked: a plain name)
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def ast_value(node: ast.AST, imports: ImportTable) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Call):
        name = ast_dotted(node.func)
        return CALLER_STATE if name is not None and imports.resolve(name) in AUTOCAST_STATE_NAMES else UNKNOWN
    name = ast_dotted(node)
    if name is not None:
        return Dotted(imports.resolve(name))
    return UNKNOWN


def ast_call_facts(call: ast.Call, imports: ImportTable, target: Optional[str] = None) -> CallFacts:
    func = call.func
    name = ast_dotted(func)
    method = receiver = None
    if isinstance(func, ast.Attribute):
        method = func.attr
        value = func.value
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES:
            value = value.func.value  # ``model.cuda().half()``: the receiver is the model
        receiver = ast_dotted(value)
    elif isinstance(func, ast.Name):
        method = func.id
    args = tuple(ast_value(a, imports) for a in call.args if not isinstance(a, ast.Starred))
    kwargs = {k.arg: ast_value(k.value, imports) for k in call.keywords if k.arg}
    return CallFacts(imports.resolve(name) if name else None, method, receiver, args, kwargs, target)


class Evidence:
    """Why some code is taken to run in a precision: what, and where (path:line).

    ``line`` may be given as a function: an autocast region's line is only needed when a finding
    cites it, and computing it means resolving positions for the whole file (~2.6x the parse)."""

    __slots__ = ("what", "path", "_line")

    def __init__(self, what: str, path: str, line) -> None:
        self.what = what
        self.path = path
        self._line = line

    @property
    def line(self) -> int:
        if callable(self._line):
            self._line = self._line()
        return self._line

    def __eq__(self, other) -> bool:
        return isinstance(other, Evidence) and (self.what, self.path, self.line) == (other.what, other.path, other.line)

    def __hash__(self) -> int:
        return hash((self.what, self.path))

    def __repr__(self) -> str:
        return f"Evidence({self.what!r}, {self.path!r}, {self.line})"

    def __reduce__(self):
        return (Evidence, (self.what, self.path, self.line))

    def __str__(self) -> str:
        return f"{self.what} at {self.path}:{self.line}"
