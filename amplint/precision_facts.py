"""One file's precision facts: its evidence (each piece with the role it plays), its training entry
points and the project modules it imports.

``file_facts(source, path, module)`` is a pure function of the file's bytes and names, returning
plain JSON-serialisable data, so a per-file cache can hold it; ``amplint.project`` assembles the
files' facts into entry points, what each reaches and the precision each runs in.

Roles (only ``training`` evidence sets an entry point's precision):

- ``training``: what the training code does (``model.half()`` before the loop, the step's autocast);
- ``inference``: under ``no_grad`` / ``inference_mode``, in an evaluation / prediction / generation
  function or script, after the last backward / optimizer step of its function (the final-inference
  block of a training script), a half cast in a file that never trains;
- ``benchmark``: in a benchmark / profiling script or function (``elif dtype == "float16":``);
- ``export``: a half copy that is saved, exported or converted, not trained;
- ``test``: in a test function (test files are not scanned at all).

An ``if`` on a dtype flag (``if args.fp16:``) or a conditional expression
(``torch.bfloat16 if cfg.bf16 else torch.float16``) makes the precision one of its branches: the
evidence keeps its role and records the condition in ``one_of``.
"""
from __future__ import annotations

import ast
import re
from typing import Any, Dict, List, Optional, Tuple

from .context.evidence import (AUTOCAST_NAMES, AUTOCAST_STATE_NAMES, UNKNOWN, Dotted, Signal, ast_call_facts, ast_dotted as _dotted, ast_value,
                               classify)
from .context.imports import ImportTable
from .file_graph import _Tree, walk_with_parents
from .parsing import DEFAULT_LIMITS, Limits, TooComplex, python_ast
from .prefilter import searcher
from .torch_api.frameworks import other_framework
from .torch_api.trainers import COLOSSALAI_MASTER_WEIGHT_PLUGINS, MMCV_FP16_HOOKS

TRAINING, INFERENCE, BENCHMARK, EXPORT, TEST = "training", "inference", "benchmark", "export", "test"
MODULE = "module"  # a module casting its own parameters: what its instances hold, not what a program trains in

PRECISION_WORDS = re.compile(
    rb"autocast|GradScaler|\.half\b|float16|bfloat16|\bfp16\b|\bbf16\b|mixed_precision|precision\s*=|precision[\"']\s*(?:\]\s*=|:)|opt_level|"
    rb"set_default_dtype|convert_to_fp16|MixedPrecision|--amp|--use[_-]amp|--precision|--mixed-precision|\buse_amp\s*=|"
    rb"AmpOptimWrapper|amp_dtype|Fp16OptimizerHook|Accelerator\(|pytorch_accelerated|(?:LowLevelZero|Gemini|HybridParallel)Plugin\(|(?:Trainer|Fabric)\([^()]*\*\*"
)
# A file that trains: calls backward, builds a torch optimizer or steps one. (Not "optimizer" in
# any word: yolov5's export.py imports torch.utils.mobile_optimizer.)
TRAINING_WORDS = re.compile(rb"\.backward\(|\boptim\.[A-Z]|torch\.optim\b|\boptimi[sz]er\.step\(|\.zero_grad\(")
# Both searched in every file's text: by prefilter.searcher (the same answers, ~6x faster than ``re``)
_precision_words = searcher(PRECISION_WORDS.pattern.decode("ascii"))
_training_words = searcher(TRAINING_WORDS.pattern.decode("ascii"))

_INFERENCE_HELP = re.compile(r"(?i)\b(inference|infer|decod\w*|generat\w*|transcri\w*|sampl\w*|predict\w*|evaluat\w*)\b")
_INFERENCE_FUNCTION = re.compile(
    r"(?i)(^|_)(eval|evaluate|evaluation|evaluator|valid|validate|validation|val|test|testing|predict|prediction|"
    r"predictor|infer|inference|generate|generation|sample|sampling|sampler|demo|serve|visuali[sz]e|"
    r"translate|interactive|chat|pipeline)(_|$|\d)")
_BENCHMARK = re.compile(r"(?i)bench|profil|throughput|latency|speed_?test|memory_(usage|test|footprint)")
_EXPORT_FUNCTION = re.compile(r"(?i)(^|_)(export|onnx|trace|torchscript|convert|save|checkpoint|quantiz\w*|trt|tensorrt)(_|$)")
_INFERENCE_FILE = re.compile(
    r"(?i)(^|/)(infer\w*|inference\w*|demo\w*|predict\w*|sample\w*|sampling\w*|generate\w*|generation\w*|eval\w*|"
    r"evaluate\w*|serve\w*|server|app|gradio\w*|streamlit\w*|web_?ui\w*|chat\w*|interactive\w*|visuali[sz]\w*|"
    r"run_inference\w*|text_generation\w*|pipeline\w*)\.py$")
# A directory of inference scripts (litgpt's generate/, a project's inference/ or serving/)
_INFERENCE_DIR = re.compile(r"(?i)(^|/)(generate|generation|inference|infer|serve|serving|deploy|demos?|chat)/")
# a benchmark by its words, not inside a name: ``benchmarks/``, ``bench_gemm.py``, ``run_benchmark.py``,
# ``memory_usage.py``; not ``airbench94.py`` (a CIFAR-10 training speedrun that trains in pure fp16)
_BENCHMARK_FILE = re.compile(r"(?i)(^|/)(\w+_)?(bench|benchmarks?|benchmarking|profil\w*|throughput|latency|"
                             r"memory_(?:usage|test|footprint|bench\w*|profil\w*)|\w*memory|speed\w*)(_\w*)?(/|\.py$)")
# the project's own package named for a benchmark it ships (``maskrcnn_benchmark/``, T16-1): the top directory of the
# project, a name before the word; its files are the project's code, not a benchmark's
_BENCHMARK_PACKAGE = re.compile(r"(?i)^\w+_benchmark/")


def _benchmark_file(path: str) -> bool:
    """Is ``path`` (relative to the project root) a benchmark's script or in a benchmark's directory?"""
    if _BENCHMARK_PACKAGE.match(path):
        path = path.split("/", 1)[1]
    return bool(_BENCHMARK_FILE.search(path))


_EXPORT_FILE = re.compile(r"(?i)(^|/)(export\w*|convert\w*|\w*onnx\w*|quantiz\w*|\w*to_fp16\w*|\w*_trt\w*)\.py$")
_DTYPE_FLAG = re.compile(r"(?i)fp16|float16|half|bf16|bfloat16|precision|dtype|\bamp\b|use_amp|mixed"
                         # a branch for old torch versions (mmcv's wrap_fp16_model: ``model.half()`` only
                         # below torch 1.6, GradScaler + autocast above): taken in some runs only
                         r"|TORCH_VERSION|torch\.__version__|torch_version")
_NO_GRAD = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
            "torch.autograd.grad_mode.inference_mode"}
_STEP_RECEIVER = re.compile(r"(?i)optim|opt\b|^opt|scaler|engine|accelerator|fabric")
# An optimizer class that keeps float32 master weights of a half model: fairseq's FP16Optimizer
# (``fp32_params``), Megatron's Float16OptimizerWithFloat16Params (``fp32_from_float16_groups``),
# apex's FP16_Optimizer (``fp32_from_fp16_groups``), a MixedPrecisionOptimizer (``master_params``).
_MASTER_OPTIMIZER = re.compile(r"(?i)(fp16|float16|half|mixed_?precision)\w*optimi[sz]er|optimi[sz]er\w*(fp16|float16)")
# Libraries whose fp16 optimizer wraps another and keeps float32 master weights: apex's and fairseq's, Megatron's
# ``fp16.FP16_Optimizer`` (and its ``megatron_util`` packaging, which modelscope's GLM trainer wraps its
# AdamW in under ``--fp16``), DeepSpeed's ``runtime.fp16`` optimizers
_MASTER_WEIGHT_LIBRARIES = ("apex", "fairseq", "megatron", "megatron_util", "deepspeed")
_MASTER_COPY = re.compile(rb"fp32_params|master_param|fp32_from_f(?:p|loat)16|master_weight|fp32_groups")


def _imports(nodes: List[ast.AST], module: Optional[str]) -> ImportTable:
    table = ImportTable(module)
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                table.add_import(a.name, a.asname)
        elif isinstance(node, ast.ImportFrom):
            table.add_from_import(node.module or "", [(a.name, a.asname) for a in node.names], node.level)
    return table


def _from_base(node: ast.ImportFrom, package: str) -> str:
    """The absolute module of ``from <base> import ...`` (``from . import x`` resolved against ``package``)."""
    base = node.module or ""
    if node.level:
        parts = package.split(".") if package else []
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)] if len(parts) >= node.level - 1 else []
        base = ".".join([*parts, *([node.module] if node.module else [])])
    return base


def _is_type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _type_checking_only(node: ast.AST, parents: "_Tree") -> bool:
    """Is ``node`` in the body of an ``if TYPE_CHECKING:`` (code that never runs)?"""
    child = node
    p = parents.parent.get(id(node))
    while p is not None:
        if isinstance(p, ast.If) and _is_type_checking(p.test) and any(c is child for c in p.body):
            return True
        child, p = p, parents.parent.get(id(p))
    return False


def _imported_modules(nodes: List[ast.AST], module: Optional[str], is_package: bool,
                      parents: Optional["_Tree"] = None) -> List[str]:
    """Dotted names this file imports (absolute; ``from . import x`` resolved against ``module``):
    the project resolves them to its own modules. An import in the body of ``if TYPE_CHECKING:``
    never runs and is left out (with ``parents``): a lazy package ``__init__`` (modelscope's
    ``LazyImportModule``, transformers' ``_LazyModule``) imports its submodules there for type
    checkers only, and loads one when a name of it is used (``_lazy_names``)."""
    out: List[str] = []
    package = (module or "") if is_package else (module or "").rpartition(".")[0]
    for node in nodes:
        if parents is not None and _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            if not base:
                continue
            out.append(base)
            out.extend(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return sorted(set(out))


def _literal_module_loads(calls: List[ast.AST]) -> List[str]:
    """The absolute module names loaded by a literal string: ``importlib.import_module("pkg.trainer")``,
    ``import_module("pkg.trainer")``, ``__import__("pkg.trainer")`` (a relative name, ``".trainer"``, is
    left out)."""
    out = set()
    for node in calls:
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        name = _dotted(node.func) or ""
        if name.rsplit(".", 1)[-1] not in ("import_module", "__import__"):
            continue
        value = node.args[0].value
        if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", value):
            out.add(value)
    return sorted(out)


def _lazy_names(nodes: List[ast.AST], module: Optional[str], is_package: bool, parents: "_Parents") -> Dict[str, str]:
    """The names a lazy module provides on first use, each with the dotted name that defines it
    (``{"MossFormer": "pkg.separation.mossformer.MossFormer"}``): what its ``if TYPE_CHECKING:``
    imports bind, and the entries of an ``_import_structure = {"mossformer": ["MossFormer"]}`` dict
    literal (submodule -> names, relative to the package). ``from pkg.separation import MossFormer``
    loads that submodule, and only that one."""
    package = (module or "") if is_package else (module or "").rpartition(".")[0]
    out: Dict[str, str] = {}
    for node in nodes:
        if not _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            if base:
                out.update((a.asname or a.name, f"{base}.{a.name}") for a in node.names if a.name != "*")
    if package:
        for node in parents.of(ast.Assign):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                    and any(isinstance(t, ast.Name) and t.id == "_import_structure" for t in node.targets)):
                continue
            for key, value in zip(node.value.keys, node.value.values):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)
                        and isinstance(value, (ast.List, ast.Tuple))):
                    continue
                for element in value.elts:
                    if isinstance(element, ast.Constant) and isinstance(element.value, str):
                        out.setdefault(element.value, f"{package}.{key.value}.{element.value}")
    return out


class _Parents(_Tree):
    """Every node of a tree (in ``ast.walk``'s order) and each one's parent, from one pass: the
    other questions about the file iterate ``nodes`` instead of walking the tree again, or only
    the nodes of the types they look at (``of``)."""

    def chain(self, node: ast.AST):
        p = self.parent.get(id(node))
        while p is not None:
            yield p
            p = self.parent.get(id(p))


_TRAINER_CLASS = re.compile(r"Trainer$")
# a function named for the trainer it returns (``get_trainer``, ``build_pl_trainer``)
_TRAINER_GETTER = re.compile(r"(?i)^(get|build|make|create|init|setup|load)_(\w+_)?trainer$")


def _trainer_self_train(call: ast.Call, parents: "_Parents") -> Optional[str]:
    """``self.train()`` in a subclass of a trainer (``class RewardTrainer(Trainer)`` whose
    ``train_and_save`` calls ``self.train()``: pykoi's reward model)."""
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "train" and isinstance(f.value, ast.Name) and f.value.id == "self"):
        return None
    cls = next((p for p in parents.chain(call) if isinstance(p, ast.ClassDef)), None)
    if cls is not None and any(_TRAINER_CLASS.search((_dotted(b) or "").rsplit(".", 1)[-1]) for b in cls.bases):
        return "Trainer.train"
    return None


def _trainer_names(nodes: List[ast.AST]) -> set:
    """Names assigned a trainer object (``t = SFTTrainer(model, args)``): their ``.train()`` trains."""
    out = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call):
            target, callee = _dotted(node.targets[0]), _dotted(node.value.func) or ""
            if target and _TRAINER_CLASS.search(callee.rsplit(".", 1)[-1]):
                out.add(target)
    return out


def _is_training_call(call: ast.Call, trainers: frozenset = frozenset()) -> Optional[str]:
    """What makes ``call`` a training step: a backward, an optimizer step, a trainer taking the
    model (a receiver named so, one of ``trainers``, or ``Trainer(...).train()`` itself). None for
    anything else."""
    f = call.func
    if isinstance(f, ast.Attribute):
        receiver = _dotted(f.value) or ""
        if isinstance(f.value, ast.Call):  # ``Trainer(model=model, args=args).train()``
            built = (_dotted(f.value.func) or "").rsplit(".", 1)[-1]
            # (or what a function named for returning one gives: ``get_pl_trainer(cfg).fit(model)``)
            receiver = built if _TRAINER_CLASS.search(built) or built == "Fabric" or _TRAINER_GETTER.search(built) \
                else receiver
        elif receiver in trainers:
            receiver = "trainer"
        if f.attr == "backward":
            return "backward"
        if f.attr == "step" and _STEP_RECEIVER.search(receiver.rsplit(".", 1)[-1]) \
                and "sched" not in receiver.rsplit(".", 1)[-1].lower():
            # (a learning-rate scheduler's step trains nothing: Megatron's ``opt_param_scheduler.step(increment=0)``
            # in ``load_checkpoint``, which inference programs call)
            return "optimizer step"
        if f.attr == "fit" and re.search(r"(?i)trainer|fabric", receiver):
            return f"{receiver}.fit"
        if f.attr in ("train", "train_step") and re.search(r"(?i)trainer$", receiver):
            return f"{receiver}.train"
        if f.attr == "train" and not call.args and re.search(r"(?i)runner$", receiver):
            return f"{receiver}.train"  # mmengine: ``runner = Runner.from_cfg(cfg); runner.train()``
        if f.attr == "run" and re.search(r"(?i)runner$", receiver) and (
                len(call.args) >= 2 and (_dotted(call.args[1]) or "").endswith("workflow")
                or any(k.arg == "workflow" for k in call.keywords)):
            return f"{receiver}.run"  # mmcv 1.x: ``runner.run(data_loaders, cfg.workflow)`` (T11-10)
        if f.attr == "initialize" and receiver.endswith("deepspeed"):
            return "deepspeed.initialize"
        if f.attr in ("prepare", "setup") and re.search(r"(?i)accelerator|fabric", receiver):
            return f"{receiver}.{f.attr}"
    elif isinstance(f, ast.Name) and f.id == "backward":
        return "backward"
    called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if re.search(r"(?i)(^|_)scaler$", called) and len(call.args) >= 2:
        # timm's NativeScaler called as ``loss_scaler(loss, optimizer, clip_grad=..., parameters=...)``:
        # scale(loss).backward(), unscale_, clip, step and update in one call (DeiT / CaiT / PoolFormer engines)
        return LOSS_SCALER_CALL
    return None


LOSS_SCALER_CALL = "loss scaler call (backward and optimizer step)"
NEVER_TRAINS = "in a script that never trains"


_GIVEN_GRADIENTS = "backward (gradients given)"
# receivers whose ``backward(loss, ...)`` is a training framework's: the loss is what they are given
_WRAPPER_BACKWARD = re.compile(r"(?i)accelerator|engine|fabric|booster|strategy|trainer|runner|wrapper|optim|scaler|"
                               r"(^|\.)self$|model|deepspeed|amp")


def _autograd_function(fn) -> bool:
    """``fn`` is the forward / backward of a ``torch.autograd.Function`` (``ctx`` first): autograd
    calls it; a ``.backward(...)`` inside it runs a kernel's backward pass, no training step (peft's
    boft ``FastBlockDiag.backward`` calling its CUDA extension)."""
    args = getattr(getattr(fn, "args", None), "args", None) or []
    return bool(args) and args[0].arg == "ctx"


def _value_dtype_vars(nodes: List[ast.AST], imports: ImportTable, lookups: bool = False) -> Dict[str, List[str]]:
    """Names and ``self.`` attributes assigned a dtype (``dtype = torch.float16``,
    ``self.torch_dtype = torch.bfloat16 if cfg.bf16 else torch.float16``): name -> the dotted
    dtypes it may hold. ``lookups``: also a name assigned a lookup in a dict of dtypes (llm.c /
    nanoGPT: ``{"float32": torch.float32, "float16": torch.float16, ...}[args.dtype]``; a named
    table such as torchtitan's ``TORCH_DTYPE_MAP``), any of the dict's values. Such a lookup is an
    open option (llm-foundry's ``master_weights_dtype``, cast only when a config sets it, which none
    does), so it is read for autocast only: an autocast's dtype is the run's choice among them."""
    out: Dict[str, List[str]] = {}
    tables = {target: values for target, values in (
        (_dotted(node.targets[0]), _dict_dtypes(node.value, imports))
        for node in nodes if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, (ast.Dict, ast.Call)))
        if target is not None and values} if lookups else {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = _dotted(node.targets[0])
            if target is None:
                continue
            values = _dtype_alternatives(node.value, imports, tables)
            if values:
                out.setdefault(target, [])
                out[target] = sorted(set(out[target]) | set(values))
    return out


def _fallback_imports(nodes: List[ast.AST], module: Optional[str], is_package: bool) -> Dict[str, List[str]]:
    """Names a ``try:`` imports from another library and its ``except ImportError:`` from the project itself
    (mmpose's ``try: from mmcv.runner import Fp16OptimizerHook`` / ``except ImportError: from mmpose.core import
    Fp16OptimizerHook``): name -> [the library's, the project's fallback], both as dotted names. The library's
    runs; the fallback only where the library lacks it."""
    own = (module or "").split(".", 1)[0]
    out: Dict[str, List[str]] = {}
    for node in nodes:
        if not isinstance(node, ast.Try) or not node.handlers:
            continue
        tried = {a.asname or a.name: f"{n.module}.{a.name}" for n in node.body if isinstance(n, ast.ImportFrom)
                 and not n.level and n.module and n.module.split(".", 1)[0] != own for a in n.names}
        for handler in node.handlers:
            if not (handler.type is None or (_dotted(handler.type) or "").endswith(("ImportError", "ModuleNotFoundError"))):
                continue
            for n in ast.walk(handler):
                if not isinstance(n, ast.ImportFrom) or not (n.level or (n.module or "").split(".", 1)[0] == own):
                    continue
                base = _imported_modules([n], module, is_package)
                for a in n.names:
                    name = a.asname or a.name
                    if name in tried and base:
                        out[name] = [tried[name], f"{base[0]}.{a.name}"]
    return out


def _registered_names(nodes: List[ast.AST]) -> List[str]:
    """The names under which the file's classes register themselves for configs to select them (threestudio's
    ``@threestudio.register("magic123-system")``, mmcv's ``@MODELS.register_module()`` (the class's name),
    ``register_module(name="...")``)."""
    out = []
    for node in nodes:
        if not isinstance(node, ast.ClassDef):
            continue
        for d in node.decorator_list:
            if not isinstance(d, ast.Call):
                continue
            last = (_dotted(d.func) or "").rsplit(".", 1)[-1]
            if "register" not in last.lower():
                continue
            given = [a.value for a in d.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)] + \
                [k.value.value for k in d.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)
                 and isinstance(k.value.value, str)]
            out.extend(given or ([node.name] if not d.args else []))
    return sorted(set(out))


_WIDE_FLOATS = {"torch.float32": "float32", "torch.float": "float32", "torch.float64": "float64",
                 "torch.double": "float64"}


def _refuses_half(tree: ast.Module, imports: ImportTable) -> List[List[Any]]:
    """``[line, name]`` of each module-level function whose whole body refuses every dtype but float32 and
    float64: ``if dtype not in [torch.float32, torch.float64]: raise ...`` or ``assert dtype in (torch.float,
    torch.double)`` (a docstring aside). Such a validator says the project takes no float16 tensors
    (theseus's ``_CHECK_DTYPE_SUPPORTED``: "Theseus only supports 32- and 64-bit tensors")."""
    out: List[List[Any]] = []
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and \
            isinstance(fn.body[0].value, ast.Constant) and isinstance(fn.body[0].value.value, str) else fn.body
        if len(body) != 1:
            continue
        stmt = body[0]
        if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Raise):
            test, wanted = stmt.test, ast.NotIn
        elif isinstance(stmt, ast.Assert):
            test, wanted = stmt.test, ast.In
        else:
            continue
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], wanted)
                and isinstance(test.comparators[0], (ast.List, ast.Tuple, ast.Set))):
            continue
        kinds = [_WIDE_FLOATS.get(imports.resolve(_dotted(e) or "")) for e in test.comparators[0].elts]
        if kinds and None not in kinds and set(kinds) == {"float32", "float64"}:
            out.append([fn.lineno, fn.name])
    return out


def _dtype_defaults(nodes: List[ast.AST], imports: ImportTable) -> Dict[str, Dict[str, str]]:
    """The half dtypes a class gives its attributes by default (a dataclass field ``amp_dtype: torch.dtype =
    torch.float16``, fairseq2's example configs): class -> attribute -> dtype."""
    out: Dict[str, Dict[str, str]] = {}
    for node in nodes:
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            target = stmt.target if isinstance(stmt, ast.AnnAssign) else \
                stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
            q = imports.resolve(_dotted(stmt.value) or "") if isinstance(target, ast.Name) and stmt.value is not None else None
            if q in ("torch.float16", "torch.half", "torch.bfloat16"):
                out.setdefault(node.name, {})[target.id] = "torch.float16" if q == "torch.half" else q
    return out


def _option_of(expr: ast.AST, imports: ImportTable) -> Optional[str]:
    """The command-line option a dtype is looked up by: ``getattr(torch, args.torch_dtype)`` (the Hugging Face
    scripts' ``args.torch_dtype if args.torch_dtype in ["auto", None] else getattr(torch, args.torch_dtype)``)
    -> ``torch_dtype``; None for anything else."""
    if isinstance(expr, ast.IfExp):
        return _option_of(expr.body, imports) or _option_of(expr.orelse, imports)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr" \
            and len(expr.args) >= 2 and imports.resolve(_dotted(expr.args[0]) or "") == "torch":
        option = expr.args[1]
        if isinstance(option, ast.Attribute):
            return option.attr
        if isinstance(option, ast.Name):
            return option.id
    return None


def _option_locals(nodes: List[ast.AST], imports: ImportTable, owner) -> Dict[str, List[Tuple[int, int, str]]]:
    """Names assigned a dtype looked up by an option (``_option_of``): name -> [(line, id of the enclosing
    function or 0, option)]."""
    out: Dict[str, List[Tuple[int, int, str]]] = {}
    for a in nodes:
        if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name):
            option = _option_of(a.value, imports)
            if option is not None:
                fn = owner(a)
                out.setdefault(a.targets[0].id, []).append((a.lineno, id(fn) if fn is not None else 0, option))
    return out


def _dtype_option(node: ast.Call, fn, option_locals: Dict[str, List[Tuple[int, int, str]]],
                  imports: ImportTable) -> Optional[Tuple[str, str]]:
    """(keyword, option) when a loader's or a cast's ``torch_dtype=`` / ``dtype=`` is a dtype looked up by a
    command-line option's string (``_option_of``), written in the call or held in a local assigned it before the
    call in the same function (``option_locals``)."""
    for k in node.keywords:
        if k.arg not in ("torch_dtype", "dtype"):
            continue
        if isinstance(k.value, ast.Name):
            scope = id(fn) if fn is not None else 0
            before = [(line, option) for line, where, option in option_locals.get(k.value.id, ())
                      if where == scope and line < node.lineno]
            if before:
                return k.arg, max(before)[1]
            continue
        option = _option_of(k.value, imports)
        if option is not None:
            return k.arg, option
    return None


# code that loads a module or builds a class by a name it is given: importlib, a registry's lookup, a Hydra / LDM
# ``target`` string, a file's own names looked up by string
_DYNAMIC_LOAD = re.compile(rb"importlib|__import__|import_module|load_source|\brunpy\b|\bexec\(|pkgutil|entry_points|"
                           rb"instantiate_from_config|get_obj_from_str|_target_|instantiate\(|get_class\(|\blocate\(|"
                           rb"spec_from_file_location|SourceFileLoader|globals\(\)|sys\.modules|@\s*[\w.]*register\w*|"
                           rb"\bREGISTRY\b|Registry\(")
def _runs_at_top(tree: ast.Module, source: bytes) -> bool:
    """Does the module do work at its top level, as a program run by path does: a call statement, a loop or a
    ``with`` outside any function, or command-line arguments read (``sys.argv``, ``parse_args``)?"""
    if b"sys.argv" in source or b"parse_args" in source:
        return True
    return any(isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith))
               or isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) for n in tree.body)


DTYPE_LOOKUP = "dtype looked up by "  # an autocast's note when its dtype is ``getattr(torch, <setting>)``


def _hydra_configs(functions: List[ast.AST]) -> List[Tuple[str, Optional[str]]]:
    """The ``(config_path, config_name)`` its Hydra entry functions load their configs from, the path relative to
    the file (``@hydra.main(config_path="conf/adapters", config_name="config")``, NeMo's
    ``@hydra_runner(config_path=...)``); the name None when not a string literal."""
    out: List[Tuple[str, Optional[str]]] = []
    for fn in functions:
        for d in fn.decorator_list:
            if isinstance(d, ast.Call) and "hydra" in (_dotted(d.func) or "").lower():
                strings = {k.arg: k.value.value for k in d.keywords
                           if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}
                path = strings.get("config_path")
                if path is not None and "://" not in path:  # (not ``pkg://...``: a package's)
                    entry = (path, strings.get("config_name"))
                    if entry not in out:
                        out.append(entry)
    return out


def _option_switch(node: ast.AST, parents: "_Parents") -> Optional[Tuple[str, str, List[str]]]:
    """``node`` is a value of a dict literal with string keys looked up by an option (``{"bf16": autocast(dtype=
    torch.bfloat16), "fp16": ..., "fp32": nullcontext()}[args.precision]``): (the option's name, ``node``'s key, every
    key), else None."""
    table = parents.parent.get(id(node))
    if not isinstance(table, ast.Dict) or not any(v is node for v in table.values):
        return None
    lookup = parents.parent.get(id(table))
    if not (isinstance(lookup, ast.Subscript) and lookup.value is table and isinstance(lookup.slice, ast.Attribute)):
        return None
    keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in table.keys]
    if None in keys:
        return None
    return lookup.slice.attr, keys[next(i for i, v in enumerate(table.values) if v is node)], keys


def _option_defaults(nodes: List[ast.AST]) -> Dict[str, Optional[str]]:
    """The string defaults of the file's dtype / precision options (a dataclass field ``torch_dtype: Optional[str]
    = field(default=None, ...)``, ``add_argument("--torch_dtype", default="float16")``): option -> its default
    (None: no default). Two different defaults for one name are none."""
    found: Dict[str, set] = {}

    def default_of(value: Optional[ast.AST]):
        if isinstance(value, ast.Call) and (_dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
            value = next((k.value for k in value.keywords if k.arg == "default"), None)
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            return None
        return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else ""

    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                        and re.search(r"(?i)dtype|precision", stmt.target.id):
                    found.setdefault(stmt.target.id, set()).add(default_of(stmt.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                     and a.value.startswith("--")]
            dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)),
                        flags[0].lstrip("-").replace("-", "_") if flags else None)
            if isinstance(dest, str) and re.search(r"(?i)dtype|precision", dest):
                found.setdefault(dest, set()).add(default_of(next((k.value for k in node.keywords if k.arg == "default"),
                                                                  None)))
    return {name: next(iter(values)) for name, values in found.items() if len(values) == 1 and "" not in values}


_SWITCH_NAME = re.compile(r"(?i)fp16|bf16|float16|half|\bamp\b|_amp\b|\bamp_|mixed")


def _switch_defaults(nodes: List[ast.AST]) -> Dict[str, List[bool]]:
    """The boolean precision switches of the file's command line and argument dataclasses (``add_argument('--bf16',
    action='store_true', default=True)``, a field ``fp16: bool = False``): option -> [its default, whether no command
    line can change it] (a ``store_true`` defaulting to True is always True). Two different readings of one name are
    none."""
    found: Dict[str, set] = {}
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and _SWITCH_NAME.search(stmt.target.id) and _dotted(stmt.annotation) == "bool"):
                    continue
                value = stmt.value
                if isinstance(value, ast.Call) and (_dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                    found.setdefault(stmt.target.id, set()).add((value.value, False))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                     and a.value.startswith("--")]
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            dest = kw["dest"].value if isinstance(kw.get("dest"), ast.Constant) else \
                (flags[0].lstrip("-").replace("-", "_") if flags else None)
            action = kw["action"].value if isinstance(kw.get("action"), ast.Constant) else None
            if not (isinstance(dest, str) and _SWITCH_NAME.search(dest) and action in ("store_true", "store_false")):
                continue
            default = kw.get("default")
            value = default.value if isinstance(default, ast.Constant) and isinstance(default.value, bool) else \
                (action == "store_false" if default is None else None)
            if value is None:
                found.setdefault(dest, set()).add(None)
                continue
            # (``store_true`` can only set True: with ``default=True`` no command line turns it off)
            found.setdefault(dest, set()).add((value, value == (action == "store_true")))
    return {name: list(next(iter(v))) for name, v in found.items() if len(v) == 1 and None not in v}


# a Python configuration module (insightface's configs/base.py: ``config = edict()``, ``config.fp16 = 0``)
_PY_CONFIG_FILE = re.compile(r"(?:^|/)(?:configs?|conf|cfgs?)/[^/]+\.py$")


def _py_config_leaves(tree: ast.Module) -> Dict[str, Any]:
    """The settings a Python configuration module assigns at its top level, ``config.fp16 = 0`` /
    ``cfg.train.amp = False``: dotted key after the object's name -> literal value (bool, number, string). A key
    assigned twice with different values is left out."""
    found: Dict[str, set] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, (bool, int, float, str))):
            continue
        name = _dotted(stmt.targets[0])
        if name and "." in name:
            found.setdefault(name.split(".", 1)[1], set()).add(stmt.value.value)
    return {k: next(iter(v)) for k, v in found.items() if len(v) == 1}


class _Fields:
    """The dtype an attribute of a config object holds: ``config.amp_dtype`` where the function's ``config``
    is a parameter annotated with a class (``config: TrainingConfig``) or a local assigned an instance
    (``config = TrainConfig()``) whose class gives ``amp_dtype`` a half default. A class of this file is
    read here; one of another file is taken as float16 and marked ``pending`` (its class and attribute), for
    the project to read that class's default (``Project.facts``). A name bound to two classes is neither."""

    def __init__(self, nodes: List[ast.AST], imports: ImportTable, defaults: Dict[str, Dict[str, str]]):
        self.imports, self.defaults, self.pending = imports, defaults, None
        classes: Dict[str, set] = {}
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                    if a.annotation is not None and _dotted(a.annotation):
                        classes.setdefault(a.arg, set()).add(_dotted(a.annotation))
                # a parameter defaulting to an instance (``fsdp_config=FSDPConfig()``)
                args = node.args
                for a, d in [*zip((*args.posonlyargs, *args.args)[::-1], args.defaults[::-1]),
                             *zip(args.kwonlyargs, args.kw_defaults)]:
                    if a.annotation is None and isinstance(d, ast.Call) and _dotted(d.func):
                        classes.setdefault(a.arg, set()).add(_dotted(d.func))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Call) and _dotted(node.value.func):
                classes.setdefault(node.targets[0].id, set()).add(_dotted(node.value.func))
        self.classes = {name: next(iter(c)) for name, c in classes.items() if len(c) == 1}

    def value_of(self, name: str, default: Any) -> Any:
        obj, _, attr = name.rpartition(".")
        cls = self.classes.get(obj) if obj and "." not in obj else None
        if cls is None or not attr:
            return default
        if cls in self.defaults:
            found = self.defaults[cls].get(attr)
            return Dotted(found) if found else default
        if "dtype" not in attr.lower():
            return default
        resolved = self.imports.resolve(cls)
        if resolved == cls and "." not in cls or resolved.split(".", 1)[0] in ("torch", "typing", "argparse"):
            return default  # a class nobody imports (a builtin, a name bound elsewhere): nothing to read
        self.pending = (resolved, attr)
        return Dotted("torch.float16")

    def value(self, node: ast.AST) -> Any:
        v = ast_value(node, self.imports)
        if isinstance(v, Dotted) and isinstance(node, ast.Attribute):
            return self.value_of(_dotted(node) or v.name, v)
        return v


def _half_conditions(nodes: List[ast.AST], parents: "_Parents", lines: List[str], imports: ImportTable) -> Dict[str, str]:
    """Names assigned float16 under one test (``elif precision == 'fp16': torch_dtype = torch.float16``,
    ``dtype = torch.float16 if args.fp16 else torch.float32``): name -> that test's text, when it is the only one."""
    found: Dict[str, set] = {}
    for node in nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = _dotted(node.targets[0])
        value, test = node.value, None
        if isinstance(value, ast.IfExp):
            value, test = value.body, value.test
        elif isinstance(parents.parent.get(id(node)), ast.If) and node in parents.parent[id(node)].body:
            test = parents.parent[id(node)].test
        if target and test is not None and imports.resolve(_dotted(value) or "") in ("torch.float16", "torch.half"):
            found.setdefault(target, set()).add(_text(lines, test))
        elif target and isinstance(node.value, ast.IfExp) and not isinstance(node.value.orelse, ast.IfExp) \
                and imports.resolve(_dotted(node.value.orelse) or "") in ("torch.float16", "torch.half") \
                and imports.resolve(_dotted(node.value.body) or "") not in ("torch.float16", "torch.half"):
            # ``dtype = torch.bfloat16 if args.bf16 else torch.float16``: float16 when the test is false (T17-1)
            found.setdefault(target, set()).add(f"not ({_text(lines, node.value.test)})")
    return {name: next(iter(tests)) for name, tests in found.items() if len(tests) == 1}


# a test for a quantized checkpoint (``quantization_config``, ``load_in_4bit``, GPTQ / AWQ / bitsandbytes)
_QUANTIZED_TEST = re.compile(r"(?i)quantiz|load_in_(?:4|8)bit|gptq|\bawq\b|\bbnb\b")


def _quantized_halves(nodes: List[ast.AST], parents: "_Parents", half_when: Dict[str, str], imports: ImportTable) -> List[str]:
    """Names assigned float16 only on the branch of a test for a quantized checkpoint (``_half_conditions``' one test
    matching ``_QUANTIZED_TEST``; no float16 assignment of the name outside it): bert4torch's
    ``set_default_torch_dtype(torch_dtype, ...)``, which takes the caller's dtype and, for a pre-quantized model,
    float16. Quantized weights (int4 / int8) are not what an optimizer trains: the float16 there is the quantized
    model's compute dtype, no precision of a training run (T20-3)."""
    out = []
    for name, test in half_when.items():
        if not _QUANTIZED_TEST.search(test):
            continue
        plain = False
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and _dotted(node.targets[0]) == name \
                    and imports.resolve(_dotted(node.value) or "") in ("torch.float16", "torch.half"):
                up = parents.parent.get(id(node))
                if not (isinstance(up, ast.If) and node in up.body and _QUANTIZED_TEST.search(ast.unparse(up.test))):
                    plain = True
        if not plain:
            out.append(name)
    return out


# an object holding a program's options: ``args``, ``model_args``, ``model_args_dict``, ``cfg``, ``opts``, ``hparams``
_OPTIONS_OBJECT = re.compile(r"(?i)\w*args(_dict)?|\w*(?:cfg|conf|config)\w*|opts?|h?params|hp")


def _parameter_branch(test: str, fn: ast.AST, parents: "_Parents") -> Optional[Dict[str, Any]]:
    """``test`` (the text of a dtype branch's condition) compares a parameter of ``fn`` with strings (``dtype ==
    "fp16"``, ``precision in ("fp16", "half")``): {"function": ``fn``'s qualified name in its module, "param",
    "default": its string default (None when it has none), "test"}, else None."""
    try:
        node = ast.parse(test, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name)):
        return None
    right = node.comparators[0]
    strings = right.elts if isinstance(right, (ast.List, ast.Tuple, ast.Set)) else [right]
    if not all(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in strings) \
            or not isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
        return None
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = dict(zip([x.arg for x in positional[len(positional) - len(a.defaults):]], a.defaults))
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    param = node.left.id
    names = [fn.name] + [c.name for c in parents.chain(fn) if isinstance(c, (ast.ClassDef, ast.FunctionDef,
                                                                              ast.AsyncFunctionDef))]
    if param not in {x.arg for x in positional + a.kwonlyargs}:
        # ``dtype = model_args_dict["dtype"]`` (``asdict(model_args)``) / ``dtype = model_args.dtype`` then ``if dtype ==
        # "bf16": ...`` (FlagEmbedding's activation_beacon, T14-2): the option of that key, read by the project
        reads = [x.value for x in ast.walk(fn) if isinstance(x, ast.Assign) and len(x.targets) == 1
                 and isinstance(x.targets[0], ast.Name) and x.targets[0].id == param
                 and (isinstance(x.value, ast.Subscript)
                      or isinstance(x.value, ast.Attribute) and isinstance(x.value.value, (ast.Name, ast.Attribute))
                      and _OPTIONS_OBJECT.fullmatch((_dotted(x.value.value) or "").rsplit(".", 1)[-1]))]
        option = None
        if len(reads) == 1 and isinstance(reads[0], ast.Subscript):
            key = reads[0].slice.value if isinstance(reads[0].slice, ast.Index) else reads[0].slice  # (3.8's ast.Index)
            option = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
        elif len(reads) == 1 and isinstance(reads[0].value, (ast.Name, ast.Attribute)):
            option = reads[0].attr
        if option is None or not re.fullmatch(r"\w+", option):
            return None
        return {"function": ".".join(reversed(names)), "param": param, "test": test, "default": None, "option": option}
    d = defaults.get(param)
    return {"function": ".".join(reversed(names)), "param": param, "test": test,
            "default": d.value if isinstance(d, ast.Constant) and isinstance(d.value, str) else None}


def _dtype_alternatives(node: ast.AST, imports: ImportTable, tables: Optional[Dict[str, List[str]]] = None) -> List[str]:
    """The dtypes ``node`` may be: a dtype, either branch of a conditional expression, any value of
    a dict of dtypes it looks up (a dict literal, or one of ``tables``, dicts of dtypes by name)."""
    if isinstance(node, ast.IfExp):
        return _dtype_alternatives(node.body, imports, tables) + _dtype_alternatives(node.orelse, imports, tables)
    if isinstance(node, ast.Subscript):
        table = node.value
        if isinstance(table, (ast.Dict, ast.Call)):
            return _dict_dtypes(table, imports)
        return list((tables or {}).get(_dotted(table) or "", ()))
    name = _dotted(node)
    if name is not None:
        q = imports.resolve(name)
        if q in ("torch.float16", "torch.half", "torch.bfloat16", "torch.float32", "torch.float"):
            return [q]
    return []


def _option_lookup_vars(nodes: List[ast.AST], imports: ImportTable) -> Dict[str, Tuple[str, List[Tuple[str, str]]]]:
    """Names assigned, once in the file, a dict literal of dtypes with string keys looked up by an option
    (LLaMA2-Accessory: ``mixed_precision_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32":
    torch.float32}[args.precision]``, T11-9; or a ``dict(fp16=..., ...)`` call, M14-2): name -> (the option, [(key, dtype)])."""
    out: Dict[str, Tuple[str, List[Tuple[str, str]]]] = {}
    seen: Dict[str, int] = {}
    for node in nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = _dotted(node.targets[0])
        if target is None:
            continue
        seen[target] = seen.get(target, 0) + 1
        v = node.value
        if not isinstance(v, ast.Subscript):
            continue
        table = v.value
        if isinstance(table, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in table.keys]
            values = table.values
        elif isinstance(table, ast.Call) and isinstance(table.func, ast.Name) and table.func.id == "dict" \
                and not table.args and table.keywords:
            # ``dict(fp32=torch.float32, fp16=torch.float16, bf16=torch.bfloat16)[args.model_dtype]`` (lingua, M14-2)
            keys = [k.arg for k in table.keywords]
            values = [k.value for k in table.keywords]
        else:
            continue
        key = v.slice.value if isinstance(v.slice, ast.Index) else v.slice  # (3.8's ast.Index)
        if not isinstance(key, ast.Attribute):
            continue
        dtypes = [_dtype_alternatives(x, imports) for x in values]
        if None in keys or not all(len(d) == 1 for d in dtypes):
            continue
        out[target] = (key.attr, [(k, d[0]) for k, d in zip(keys, dtypes)])
    return {name: v for name, v in out.items() if seen.get(name) == 1}


def _dict_dtypes(node: ast.AST, imports: ImportTable) -> List[str]:
    """The values of a dict literal (or a ``dict(fp16=torch.float16, ...)`` call of keywords) whose values are all
    dtypes; [] for anything else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args \
            and node.keywords and all(k.arg for k in node.keywords):
        node = ast.Dict(keys=[ast.Constant(k.arg) for k in node.keywords], values=[k.value for k in node.keywords])
    if not isinstance(node, ast.Dict) or not node.values:
        return []
    values = [_dtype_alternatives(v, imports) for v in node.values]
    return [d for v in values for d in v] if all(values) else []


def _saved_directly(call: ast.Call) -> set:
    """Names passed to a call as themselves, or as values of a dict or list argument: the object
    is saved (``torch.save({"model": model}, f)``), not something computed from it
    (``torch.save(model.state_dict(), f)`` saves the trained model's weights)."""
    names = set()
    for a in (*call.args, *(k.value for k in call.keywords)):
        values = a.values if isinstance(a, ast.Dict) else a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a]
        names.update(v.id for v in values if isinstance(v, ast.Name))
    return names


def _saved_names(nodes, parent: Optional[Dict[int, ast.AST]] = None) -> Dict[int, set]:
    """For each assignment inside a function: the names that the function later passes to a
    ``*save*`` call (``torch.save``, ``torch_save``, ``save_checkpoint``), directly or in a dict.
    (A function's saves include those of the functions nested in it; an assignment is judged by
    the innermost function around it that saves anything.) ``parent``: the tree's parent map
    (``file_graph.walk_with_parents``), else the tree is walked for it."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    if parent is None:
        parent = walk_with_parents(nodes[0])[1] if nodes else {}

    def enclosing(node):
        p = parent.get(id(node))
        while p is not None:
            if isinstance(p, functions):
                yield p
            p = parent.get(id(p))

    saves: Dict[int, list] = {}  # id(function) -> [(line, names)] of the save calls in it
    for call in nodes:
        if isinstance(call, ast.Call):
            f = call.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if "save" in name.lower():
                found = (call.lineno, _saved_directly(call))
                for fn in enclosing(call):
                    saves.setdefault(id(fn), []).append(found)
    out: Dict[int, set] = {}
    if not saves:
        return out
    for stmt in nodes:
        if isinstance(stmt, ast.Assign):
            fn = next((fn for fn in enclosing(stmt) if id(fn) in saves), None)
            if fn is not None:
                out[id(stmt)] = set().union(*(names for line, names in saves[id(fn)] if line > stmt.lineno))
    return out


def file_facts(source: bytes, path: str, module: Optional[str] = None, tree: Optional[ast.Module] = None,
               limits: Limits = DEFAULT_LIMITS, parents: Optional["_Parents"] = None) -> Dict[str, Any]:
    """The precision facts of one file (see the module docstring). ``path`` is the file's path
    relative to its project root (it decides script-name roles); ``module`` its dotted name;
    ``tree`` its ``ast`` when the caller has parsed it already (``parents``: that tree's
    ``_Parents``, when the caller has walked it already)."""
    facts: Dict[str, Any] = {"module": module, "imports": [], "entry_points": [], "signals": [],
                             "master_optimizers": [], "precision_functions": {}, "precision_calls": []}
    if tree is None:
        try:
            tree = python_ast(source, limits)  # a file over the limits gives no facts (amplint.parsing)
        except (SyntaxError, ValueError, TooComplex):
            return facts
    is_package = path.endswith("__init__.py")
    parents = parents if parents is not None else _Parents(tree)
    import_nodes = parents.of(ast.Import, ast.ImportFrom)
    facts["imports"] = _imported_modules(import_nodes, module, is_package, parents)
    if b"import_module" in source or b"__import__" in source:
        dynamic = _literal_module_loads(parents.of(ast.Call))
        if dynamic:
            # ``getattr(importlib.import_module("recbole.trainer"), name + "Trainer")``: a module loaded by a literal
            # name is imported like any other; which of its names is looked up, the call graph cannot tell
            facts["dynamic_imports"] = dynamic
            facts["imports"] = sorted(set(facts["imports"]) | set(dynamic))
    framework = other_framework(facts["imports"])
    if framework is not None:
        # a Paddle / OneFlow port beside the PyTorch code (insightface): its GradScaler and
        # auto_cast are not torch's, it trains no PyTorch model and is evidence of no precision
        facts["framework"] = framework
        return facts
    if b"TYPE_CHECKING" in source or b"_import_structure" in source:
        lazy = _lazy_names(import_nodes, module, is_package, parents)
        if lazy:
            facts["lazy"] = lazy
    functions = parents.of(ast.FunctionDef, ast.AsyncFunctionDef)

    def owner(node: ast.AST) -> Optional[ast.AST]:
        for p in parents.chain(node):
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return p
        return None

    # Training calls per function (None: module level), for entry points and "after the last step".
    training_lines: Dict[int, List[int]] = {}
    entry: Dict[int, Dict[str, Any]] = {}
    trainers = frozenset(_trainer_names(parents.of(ast.Assign)))
    for node in parents.of(ast.Call):
        if isinstance(node, ast.Call):
            why = _is_training_call(node, trainers) or _trainer_self_train(node, parents)
            if why is None:
                continue
            fn = owner(node)
            key = id(fn) if fn is not None else 0
            if why in ("backward", "optimizer step", LOSS_SCALER_CALL):
                training_lines.setdefault(key, []).append(node.lineno)
            name = getattr(fn, "name", "")
            if _BENCHMARK.search(name) or name.startswith("test") or _benchmark_file(path):
                continue  # a profiler or a test runs backward without training anything
            if name in ("forward", "backward") and _autograd_function(fn):
                continue  # a torch.autograd.Function's backward calling a kernel's ``.backward(...)``
            if why.endswith((".prepare", ".setup")) and (_INFERENCE_FILE.search(path) or _INFERENCE_DIR.search(path)):
                continue  # ``fabric.setup(model)`` in a generation script: it runs the model, it does not train it
            receiver = _dotted(getattr(node.func, "value", None)) or ""
            # (``torch.autograd.backward(tensors, grad_tensors)``: its first argument is the loss)
            given = len(node.args) > (1 if receiver.endswith("autograd") else 0)
            if why == "backward" and (given or any(k.arg in ("gradient", "grad_tensors") for k in node.keywords)) \
                    and not _WRAPPER_BACKWARD.search(receiver):
                # (``accelerator.backward(loss)`` / ``engine.backward(loss)`` take the loss, not gradients)
                why = _GIVEN_GRADIENTS
            e = entry.setdefault(key, {"function": getattr(fn, "name", "<module>"),
                                       "line": getattr(fn, "lineno", node.lineno), "why": []})
            if why not in e["why"]:
                e["why"].append(why)
    # A backward given the gradients (``y.backward(dy)``) with nothing else that trains in its function is a
    # vector-Jacobian product inside someone's backward (a reversible block recomputing its activations,
    # mmpretrain's RevBlock.backward_pass), not a training step.
    entry = {k: e for k, e in entry.items() if e["why"] != [_GIVEN_GRADIENTS]}
    # a function of the file steps an optimizer (``optimizer.step()``, ``scaler.step(optimizer)``, a loss scaler's
    # call): the file trains, whatever its name says (``_role``: ibot's fine-tuning ``eval_cls.py``, M13-1)
    stepping = any(w in ("optimizer step", LOSS_SCALER_CALL) for e in entry.values() for w in e["why"])
    facts["entry_points"] = sorted(entry.values(), key=lambda e: e["line"])
    facts["script"] = b"__main__" in source  # run as a program, not only imported
    facts["registered"] = _registered_names(parents.of(ast.ClassDef)) if b"register" in source else []
    facts["fallback_imports"] = _fallback_imports(parents.of(ast.Try), module, is_package) if b"ImportError" in source else {}
    # backward / an optimizer / a trainer somewhere in the file (a project none of whose files trains
    # holds no training evidence: whisper's --fp16 is its decoder's)
    facts["trains"] = _training_words(source) or bool(entry)
    # the file loads modules by name at run time (so a module nothing imports may still run)
    facts["loads_modules"] = bool(_DYNAMIC_LOAD.search(source))
    # the file does its work when run (a script without a ``__main__`` block: LMFlow's examples/detail_memory.py)
    facts["runs_at_top"] = _runs_at_top(tree, source)
    training_helpers = _training_helpers(functions, training_lines)
    facts["precision_functions"] = _precision_functions(functions, parents.of(ast.Return))
    facts["master_optimizers"] = sorted(
        n.name for n in parents.of(ast.ClassDef) if isinstance(n, ast.ClassDef) and _MASTER_OPTIMIZER.search(n.name)
    ) if _MASTER_COPY.search(source) else []
    # the configs a Hydra program reads (also when its own code names no precision: torchrl's train_reward.py
    # takes its autocast from a helper of another file, switched by its config's `sys.dtype`)
    hydra = _hydra_configs(parents.of(ast.FunctionDef)) if b"config_path" in source else []
    facts["hydra_config_paths"] = list(dict.fromkeys(p for p, _ in hydra))
    facts["hydra_config_names"] = [[p, n] for p, n in hydra if n]

    # DeepSpeed named in the code (an import, a name, a string: ``--deepspeed``, ``DeepSpeedStrategy``), not in a comment:
    # a DeepSpeed configuration file is no run's whose code never names it (T11-7)
    if b"deepspeed" in source.lower() and _names_deepspeed(parents):
        facts["deepspeed"] = True
    # a framework's trainer that takes a DeepSpeed config from its command line or its own config (transformers'
    # Trainer / TrainingArguments, accelerate's Accelerator, Lightning's Trainer / Fabric, trl, mmengine's Runner)
    if any(_DEEPSPEED_FRAMEWORK_IMPORT.match(m) for m in facts["imports"]) or _DEEPSPEED_FRAMEWORK_USE.search(source):
        facts["deepspeed_framework"] = True
    # the classes whose ``__init__`` hands a model it is given to PEFT (xtuner's SupervisedFinetune, T11-6)
    facts["peft_classes"] = _peft_classes(parents.of(ast.ClassDef)) \
        if b"get_peft_model" in source or b"prepare_model_for_" in source else {}

    # an mmcv 1.x Python config's ``fp16 = dict(loss_scale=512.)`` (T11-10), read by the runner of a program given it
    facts["mm_config_fp16"] = _mm_config_fp16(tree, source) if b"fp16" in source.lower() else []
    # the YAML files a program loads by a path written in its code (an option's default, ``open("configs/x.yaml")``):
    # their settings are read like a settings dict (nanuGPT's ``dtype: 'bfloat16'``)
    facts["yaml_paths"] = _yaml_paths(parents.of(ast.Call)) if b".yaml" in source or b".yml" in source else []
    # the JSON files the code names by a string (FlagAI's ``Trainer(..., deepspeed_config="./deepspeed.json")``): a
    # DeepSpeed config that some programs name is read by their runs, not by every program beside it
    facts["json_names"] = _json_names(parents.of(ast.Constant)) if b".json" in source else []
    # precision settings written in dict literals (T12-5), read by a program that reaches or runs this file
    facts["setting_dicts"] = _setting_dicts(parents.of(ast.Dict, ast.Call), parents) \
        if _SETTING_KEY_TEXT.search(source) else []
    # sacred experiments' config functions (``@ex.config def config(): precision = 16``) and named configs (P21-2)
    if b"sacred" in source:
        facts["sacred_configs"] = _sacred_configs(parents.of(ast.FunctionDef))
    # the file turns dicts into attribute dicts (``edict(config)``, ``EasyDict``, ``Munch``, a dict subclass of its own
    # whose ``__getattr__`` reads ``self[name]``): its settings dicts are read as ``config.use_amp`` too (T21-3)
    if facts["setting_dicts"] and _ATTR_DICT_TEXT.search(source):
        facts["attr_dicts"] = _builds_attr_dicts(parents.of(ast.ClassDef, ast.ImportFrom, ast.Call))
    # the dtype / precision settings the code reads by a string key (nanuGPT's ``config['general']['dtype']``): a
    # program whose autocast dtype the code does not say takes what its configs state there
    facts["keyed_settings"] = _keyed_settings(parents.of(ast.Subscript, ast.Call)) \
        if _KEYED_SETTING_TEXT.search(source) else []
    # structured-config dataclasses' precision fields (Hydra's ConfigStore configs, M16-2)
    facts["setting_fields"] = _setting_fields(parents.of(ast.ClassDef)) \
        if b"precision" in source and b"dataclass" in source else []
    # a validator refusing every dtype but float32 / float64 (theseus's _CHECK_DTYPE_SUPPORTED, T19-6)
    if (b"raise" in source or b"assert" in source) and (b"float64" in source or b"double" in source):
        refusing = _refuses_half(tree, _imports(import_nodes, module))
        if refusing:
            facts["refuses_half"] = refusing

    if not _precision_words(source):
        return facts
    trains = _training_words(source) or bool(entry)
    script = b"__main__" in source
    imports = _imports(parents.of(ast.Import, ast.ImportFrom), module)
    # a library's master-weights optimizer wrapped around the project's (SpanBERT: apex's
    # ``FP16_Optimizer(FusedAdam(model.parameters()))`` beside ``model.half()``): fp32 master weights
    facts["master_optimizers"] = sorted(set(facts["master_optimizers"]) | {
        q.rsplit(".", 1)[-1] for q in (imports.resolve(_dotted(n.func) or "") or "" for n in parents.of(ast.Call) if isinstance(n, ast.Call))
        if q.split(".", 1)[0] in _MASTER_WEIGHT_LIBRARIES and _MASTER_OPTIMIZER.search(q.rsplit(".", 1)[-1])})
    dtype_vars = _value_dtype_vars(parents.of(ast.Assign), imports)
    facts["option_casts"] = []
    option_locals = _option_locals(parents.of(ast.Assign), imports, owner) if b"getattr(torch" in source else None
    facts["dtype_defaults"] = _dtype_defaults(parents.of(ast.ClassDef), imports)
    fields = _Fields(parents.of(ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign), imports, facts["dtype_defaults"])
    autocast_dtype_vars = _value_dtype_vars(parents.of(ast.Assign), imports, lookups=True)
    option_lookups = _option_lookup_vars(parents.of(ast.Assign), imports)
    dtype_tables = _DtypeTables(parents.of(ast.Assign, ast.AnnAssign), imports)
    self_options = _self_options(parents.of(ast.ClassDef)) if b"self." in source else {}
    facts["conditional_builds"] = _conditional_builds(parents.of(ast.Call), parents, self_options) if self_options else []
    frozen = _frozen_objects(parents.of(ast.Call, ast.For, ast.AsyncFor), parents)
    adapted = _adapter_wrapped(parents.of(ast.Call))
    trained = _parameter_owners(parents.of(ast.Call))
    lines = source.decode("utf-8", "replace").splitlines()
    half_when = _half_conditions(parents.of(ast.Assign), parents, lines, imports)
    for name in _quantized_halves(parents.of(ast.Assign), parents, half_when, imports):
        # bert4torch's ``if hasattr(model_config, "quantization_config"): torch_dtype = torch.float16`` before
        # ``torch.set_default_dtype(torch_dtype)``: a pre-quantized checkpoint's compute dtype, no trained weights
        dtype_vars[name] = [d for d in dtype_vars.get(name, []) if d not in ("torch.float16", "torch.half")]
        if not dtype_vars[name]:
            del dtype_vars[name]
    saved = _saved_names(parents.of(ast.Call, ast.Assign), parents.parent)
    targets: Dict[int, Optional[str]] = {}
    standalone = set()
    skipped = set()
    for node in parents.of(ast.Assign, ast.Expr):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in saved.get(id(node), ()) and _casts(node.value):
            value = node.value
            while isinstance(value, ast.Call):
                skipped.add(id(value))
                value = value.func.value if isinstance(value.func, ast.Attribute) else None
            continue
        if isinstance(node, (ast.Assign, ast.Expr)):
            t = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            value = node.value
            while isinstance(value, ast.Call):
                standalone.add(id(value))
                if t is not None:
                    targets[id(value)] = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
                value = value.func.value if isinstance(value.func, ast.Attribute) else None

    # ``Adam(model.half().parameters())``: the parameters of the model made half in the same
    # expression are what trains, as with ``model = model.half()`` on a line of its own.
    for node in parents.of(ast.Call):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("parameters", "named_parameters"):
            value = node.func.value
            while isinstance(value, ast.Call):
                standalone.add(id(value))
                value = value.func.value if isinstance(value.func, ast.Attribute) else None

    skipped |= _recast_to_float32(parents.of(ast.Call), parents)
    part_float32 = _parts_recast_to_float32(parents.of(ast.Expr, ast.Call, ast.For), parents)
    # ``model = get_peft_model(model, config)`` then ``model = model.half()``: the cast reaches the adapters it added,
    # which train (ChatGLM-Efficient-Tuning's load_pretrained), whatever froze the base before
    peft_wrapped = [(n.targets[0].id, n.lineno, owner(n)) for n in parents.of(ast.Assign)
                    if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and isinstance(n.value, ast.Call) and (_dotted(n.value.func) or "").rsplit(".", 1)[-1] == "get_peft_model"]
    # (a frozen module's trainable adapters cast back, the diffusers LoRA scripts: the frozen module's half cast stays
    # a feature extractor's, below)
    part_float32 = {m: [x for x in parts if not (m in frozen and x[0].endswith(_TRAINABLE_PART))]
                    for m, parts in part_float32.items()}
    deepspeed_options = _deepspeed_only_options(parents.of(ast.Attribute), parents)
    autocast_aliases = _autocast_aliases(parents.of(ast.Assign), imports, owner)
    module_strings = _module_strings(tree, parents) if _MODULE_PRECISION_NAME.search(source) else {}
    for node in parents.of(ast.Dict, ast.Assign, ast.Call):
        if isinstance(node, ast.Dict):
            # a DeepSpeed block under ``if precision == "bfloat16":`` is one of the options (gpt-neox)
            cond = _dtype_condition(node, parents, lines)
            for sig, note in _dict_signals(node, owner(node)):
                # the function building the dict: a helper's config (unilm beit2's utils.create_ds_config)
                # is the precision of the entry points that call it only
                facts["signals"].append({**_record(sig, note, node, lines, TRAINING, cond),
                                         "function": getattr(owner(node), "name", None),
                                         "main": _under_main(node, parents)})
            continue
        sig = _amp_optim_wrapper(node)
        if sig is not None:
            # mmengine's ``cfg.optim_wrapper.type = "AmpOptimWrapper"`` under ``if args.amp:`` (mmocr / mmdet
            # tools/train.py), ``optim_wrapper = dict(type="AmpOptimWrapper", ...)``: fp16 autocast + loss scaling
            role, why = _role(node, sig, parents, owner, path, trains, training_lines, imports, script, training_helpers,
                              stepping=stepping)
            record = _record(sig, why, node, lines, role, _dtype_condition(node, parents, lines))
            record.update(function=getattr(owner(node), "name", None), main=_under_main(node, parents))
            facts["signals"].append(record)
            continue
        if not isinstance(node, ast.Call) or id(node) in skipped:
            continue
        if any(node is v for v in autocast_aliases.values()):
            continue  # ``gpu_autocast_ctx = functools.partial(torch.amp.autocast, device_type="cuda")``: read at its calls
        seen_node = node
        if isinstance(node.func, ast.Name) and node.func.id in autocast_aliases and owner(node) is not None:
            partial = autocast_aliases[node.func.id]
            seen_node = ast.copy_location(ast.Call(func=partial.args[0], args=[*partial.args[1:], *node.args],
                                                   keywords=[*partial.keywords, *node.keywords]), node)
        seen_node = _or_default(_with_local_values(_with_caller_state(seen_node, owner(node)), owner(node),
                                                   module_strings), owner(node))
        loop_owner = _module_loop_owner(node, parents)
        call_facts = ast_call_facts(seen_node, imports, targets.get(id(node)) or ("module" if loop_owner else None))
        _plugin_config_default(seen_node, call_facts)
        one_of = _splat_kwargs(node, call_facts, owner, parents, imports, lines)
        variables = autocast_dtype_vars if call_facts.qualname in AUTOCAST_NAMES else dtype_vars
        fields.pending = None
        option = _dtype_option(node, owner(node), option_locals, imports) \
            if option_locals is not None and call_facts.qualname not in AUTOCAST_NAMES else None
        if option is not None:
            # ``from_pretrained(..., torch_dtype=getattr(torch, args.torch_dtype))``: read as float16 here; the
            # project keeps it only where the option's value (the run script's flag, else its default) is half
            call_facts.kwargs[option[0]] = Dotted("torch.float16")
        if call_facts.qualname not in AUTOCAST_NAMES:
            for k, v in list(call_facts.kwargs.items()):
                if isinstance(v, Dotted) and k in ("dtype", "torch_dtype", "param_dtype") and v.name not in variables:
                    call_facts.kwargs[k] = fields.value_of(v.name, v)
        looked_up = None
        half_test = None
        for k, v in list(call_facts.kwargs.items()) + list(enumerate(call_facts.args)):
            if isinstance(k, str) and isinstance(v, Dotted) and v.name in option_lookups and looked_up is None \
                    and call_facts.qualname not in AUTOCAST_NAMES:
                looked_up = (k, *option_lookups[v.name])
            if isinstance(v, Dotted) and v.name in variables:
                alts = variables[v.name]
                half = [a for a in alts if a in ("torch.float16", "torch.half")] or \
                       [a for a in alts if a == "torch.bfloat16"] or alts
                if isinstance(k, str):
                    call_facts.kwargs[k] = Dotted(half[0])
                else:
                    args = list(call_facts.args)
                    args[k] = Dotted(half[0])
                    call_facts.args = tuple(args)
                if len(alts) > 1:
                    one_of = f"`{v.name}` is one of {', '.join(alts)}"
                    if v.name in half_when:  # Time-MoE: ``elif precision == 'fp16': torch_dtype = torch.float16``
                        one_of += f" (float16 if {half_when[v.name]})"
                        half_test = half_when[v.name]
        wrapper = _half_wrapper(node, parents)
        primary = facts["fallback_imports"].get(_dotted(node.func) or "", [None])[0]
        if primary in MMCV_FP16_HOOKS:
            # ``try: from mmcv.runner import Fp16OptimizerHook`` / ``except ImportError: from mmpose.core import
            # Fp16OptimizerHook``: mmcv's hook runs (the fallback is for an mmcv without it)
            sig = Signal("flag", "float16", note="mmcv's Fp16OptimizerHook: fp16 autocast and a GradScaler (torch >= 1.6)")
        else:
            sig = None
        data_cast = _data_cast(node, parents, imports)
        # ``amp.initialize(model, optimizer, opt_level='O1' if use_mixed_precision else 'O0')`` (maskrcnn-benchmark,
        # through a local): one of its branches, read by ``_conditional_signal``, not apex's default level
        conditional_level = any(k.arg == "opt_level" and isinstance(k.value, ast.IfExp) for k in seen_node.keywords)
        sig = sig or wrapper or (data_cast[0] if data_cast else None) \
            or (None if conditional_level else classify(call_facts)) \
            or _extra_signal(node, call_facts, source) or _cli_signal(node, deepspeed_options) \
            or _trained_half_cast(node, call_facts, trained)
        if sig is not None and sig.kind == "half_params" and sig.master and sig.note.startswith("FSDP MixedPrecision") \
                and _in_accelerate_fsdp_plugin(node, parents) and not _ACCELERATE_NO_MIXED.search(source):
            # prismer (T22-1): ``FullyShardedDataParallelPlugin(mixed_precision_policy=MixedPrecision(param_dtype=
            # torch.float16))`` handed to ``Accelerator(mixed_precision=...)``: accelerate runs the prepared model's
            # forward under its autocast (and a ShardedGradScaler), so autocast's float32 ops stay float32
            sig = Signal("flag", sig.dtype, note=f"{sig.note} in accelerate's FSDP plugin: accelerate's "
                         f"{'fp16' if sig.dtype == 'float16' else 'bf16'} autocast, sharded float32 parameters")
        ifexp_test = None
        if sig is None and not wrapper:
            sig, branch = _conditional_signal(seen_node, call_facts, imports, fields)
            if sig is not None and not one_of:
                ifexp_test = next((_ifexp_half_test(k.value, imports) for k in seen_node.keywords
                                   if isinstance(k.value, ast.IfExp) and _ifexp_half_test(k.value, imports)), None)
            one_of = one_of or branch
        if sig is None:
            sig = _launcher_signal(node, call_facts) or _callers_precision(node, call_facts, owner(node))
        if sig is None:
            call = _precision_call(node, owner, parents)
            if call is not None:  # ``Fabric(precision=precision)`` with ``precision = p or default_precision()``
                role, why = _role(node, Signal("flag", "float16"), parents, owner, path, trains, training_lines, imports,
                                  script, training_helpers, stepping=stepping)
                if any(call["kwargs"].get(k) is False for k in ("training", "train", "is_training")):
                    # litgpt's ``LLM.load``: ``L.Fabric(precision=get_default_supported_precision(training=False))`` casts
                    # a loaded model for generation: an inference precision, whatever trains the model afterwards
                    role, why = "inference", "a precision asked for inference (`training=False`)"
                fn = owner(node)
                facts["precision_calls"].append({**call, "role": role, "why": why, "text": _text(lines, node),
                                                 "line": node.lineno, "function": getattr(fn, "name", None)})
            continue
        is_cast = isinstance(node.func, ast.Attribute) and node.func.attr in ("half", "to", "bfloat16")
        if sig.kind == "half_params" and is_cast and id(node) not in standalone and wrapper is None:
            # ``{"model": deepcopy(model).half()}`` / ``torch.save(model.half(), f)``: a half copy
            # for a checkpoint or an export, not the parameters that train.
            continue
        role, why = _role(node, sig, parents, owner, path, trains, training_lines, imports, script, training_helpers,
                              stepping=stepping)
        if role == TRAINING and sig.kind == "half_params":
            switch = _inference_switch(node, parents)
            if switch is not None:
                # FlagAI's AutoLoader: ``if inference_mode: model = AquilaForCausalLM.from_pretrained(...,
                # torch_dtype=torch_dtype); model.eval()``: the branch a loader takes to serve a model (T12-3)
                role, why = "inference", f"under `if {switch}:`"
        cond = one_of or _dtype_condition(node, parents, lines) or _enabled_switch(node, sig, lines)
        record = _record(sig, why, node, lines, role, cond, dtype_tables)
        fn = owner(node)
        record["function"] = getattr(fn, "name", None)
        if sig.kind == "half_params" and targets.get(id(node)) and not isinstance(
                getattr(node.func, "value", None), (ast.Name, ast.Attribute)):
            record["model"] = targets[id(node)]  # ``model = Net().cuda().half()``: the model is what is assigned
        if data_cast is not None and sig is data_cast[0]:
            record["model"] = data_cast[1]  # ``model.bank.data = model.bank.data.half()``: a parameter of ``model``
        if sig.kind == "half_params" and loop_owner is not None:
            # airbench's ``for mod in self.modules(): ... mod.half()``: the modules of ``self`` (an instance the
            # callers name) or of ``model``
            record["model"] = "" if loop_owner == "self" else loop_owner.rsplit(".", 1)[-1]
        elif sig.kind == "half_params" and record["model"] and fn is not None and _returns_name(fn, record["model"]):
            # ``def make_net(): net = net.half().cuda(); return net``: the object is what the file's callers bind
            # (``model = make_net()``), when they bind one name
            bound = {t for t in _bound_to_calls_of(getattr(fn, "name", ""), parents) if t}
            if len(bound) == 1:
                record["model"] = bound.pop()
        if sig.kind == "half_params" and isinstance(node.func, ast.Attribute) and node.func.attr == "from_pretrained" \
                and targets.get(id(node)):
            record["model"] = targets[id(node)]  # ``text_encoder = T5EncoderModel.from_pretrained(..., torch_dtype=...)``
        if sig.kind == "half_params" and sig.dtype == "float16" and record["model"] in adapted \
                and _TASK_HEAD_MODEL.search(_dotted(node.func) or ""):
            # PEFT trains a task model's new head (``score`` / ``classifier``, its task type's
            # ``modules_to_save``) as a copy of the base's module: float16 here, whatever the peft version
            # (pykoi's reward model: ``AutoModelForSequenceClassification.from_pretrained(torch_dtype=...)``
            # then ``get_peft_model``, trained by an HF Trainer with the default adam_epsilon=1e-8).
            record["note"] = (f"`{record['model']}` is wrapped by PEFT, whose trainable copy of the task head "
                              f"(modules_to_save) keeps its float16 dtype")
        elif sig.kind == "half_params" and sig.dtype == "float16" and not record.get("master") and any(
                line > node.lineno and where is fn for _, line, where in part_float32.get(record["model"], ())):
            # ChatGLM's P-tuning: ``model = model.half()`` then ``model.transformer.prefix_encoder.float()``:
            # a named part cast back to float32 is what trains (the rest is the frozen half base), so
            # activations are float16 but the optimizer's parameters are not
            part = next(p for p, line, where in part_float32[record["model"]] if line > node.lineno and where is fn)
            record.update(master=True, note=f"`{part}` is cast back to float32 after the half cast: the part that trains")
        elif sig.kind == "half_params" and sig.dtype == "float16" and record["model"] and (
                record["model"] in frozen or _NOT_TRAINED.search(record["model"])) \
                and not any(name == record["model"] and line < node.lineno and where is fn
                            for name, line, where in peft_wrapped):
            # diffusers' training scripts: ``vae.requires_grad_(False)`` ... ``vae.to(dtype=weight_dtype)``
            # with ``weight_dtype = torch.float16`` when accelerate's mixed precision is fp16. The frozen
            # module is a float16 feature extractor; the model that trains (the UNet the optimizer gets)
            # stays float32 under the accelerator's autocast: fp16 mixed precision, not a half model.
            if _literal_half_cast(node):
                # ``vae.to(dtype=torch.float16)  # VAE is always fp16`` (sd-scripts): the frozen part's own
                # dtype, whatever the trained network runs in (accelerate's --mixed_precision no / fp16 / bf16)
                record.update(role="inference", why=f"`{record['model']}` is frozen and always cast to float16: "
                                                    f"its own dtype, not the trained model's")
            else:
                record.update(kind="flag", pure=False, master=False,
                              note=f"`{record['model']}` is frozen and cast to float16: the trained model runs in "
                                   f"fp16 mixed precision")
        record["main"] = _under_main(node, parents)
        if record["dtype"] == "float16":
            # the test of command-line / config switches under which this float16 evidence is taken (``torch_dtype=
            # torch.bfloat16 if args.bf16 else torch.half``: ``not (args.bf16)``; ``TrainingArguments(fp16=not
            # args.bf16)``; ``if training_args.fp16: model.to(torch.float16)``), read against the runs' values of those
            # switches (Project._option_branches, T17-1)
            test = half_test or ifexp_test
            if test is None and sig.note.startswith("fp16=<from the command line"):
                test = next((f"({ast.unparse(k.value)})" for k in seen_node.keywords if k.arg == "fp16"), None) \
                    if hasattr(ast, "unparse") else None
            if test is None and not one_of:
                test = _branch_test(node, parents)
            if test is not None:
                record["option_branch"] = test
        if self_options and fn is not None:
            # ``if self.fp16: model.half()`` with ``self.fp16 = fp16`` from ``__init__(..., fp16=False)``: taken in the
            # runs whose construction of the class passes a true value (the project reads the constructions, T12-3)
            cond_of = _self_condition(node, parents, self_options)
            if cond_of is None and sig.kind == "autocast" and isinstance(node, ast.Call):
                # ``with autocast(self.fp16 > 0):`` (insightface's IResNet, T16-5): the same, read on the switch
                cond_of = _self_enabled(node, fn, parents, self_options, imports)
            if cond_of is not None:
                record["self_option"] = cond_of
        if half_test is not None and sig.kind == "half_params" and fn is not None:
            # ``def get_model(name, dtype="bf16"): ... elif dtype == "fp16": torch_dtype = torch.float16``: float16 in the
            # runs whose calls pass a value making the test true (the project reads the callers, T14-2)
            branch = _parameter_branch(half_test, fn, parents)
            if branch is not None:
                record["param_branch"] = branch
        if wrapper is not None:
            cls = next((c for c in parents.chain(node) if isinstance(c, ast.ClassDef)), None)
            if cls is not None:
                record["wrapper_class"] = cls.name  # its constructions say when the cast runs
        if record["kind"] == "half_params" and record["dtype"] == "float16" and record["model"] and fn is not None \
                and not record.get("master") and not _TASK_HEAD_MODEL.search(_dotted(node.func) or "") \
                and _calls_with(fn, record["model"], node.lineno):
            # ``llm = from_pretrained(..., torch_dtype=torch.float16)`` then ``SupervisedFinetune(llm, lora=cfg)``: a
            # class of the project may hand it to PEFT (``peft_classes``); the project decides (Project._peft_wrapped)
            record["passed_on"] = "literal" if _literal_half_cast(node) else "variable"
        if fields.pending is not None and sig.kind == "half_params":
            # ``dtype=config.amp_dtype`` of a config class in another file: its default, which the project reads
            record["default_of"] = list(fields.pending)
        param = _plugin_parameter(node, fn)
        if param is not None:
            # ``create_colossalai_plugin(plugin, dtype, ...)``: ``precision=dtype`` is what the callers pass
            record["param"] = param
            record["alternatives"] = {v: _plugin_record(node, v) for v in ("fp16", "bf16", "fp32")}
        if looked_up is not None and sig.kind in ("half_params", "flag"):
            # ``MixedPrecision(param_dtype=mixed_precision_dtype)`` with ``mixed_precision_dtype = {"fp16": torch.float16,
            # "bf16": torch.bfloat16, ...}[args.precision]``: each entry is the evidence of the runs that pick it,
            # which the project reads from the launcher scripts or the option's default (T11-9, as T11-3)
            keyword, option_name, table = looked_up
            keys = [k for k, _ in table]
            for key, dtype in table:
                picked = ast_call_facts(seen_node, imports, targets.get(id(node)))
                picked.kwargs[keyword] = Dotted(dtype)
                entry = classify(picked) or _extra_signal(node, picked, source)
                if entry is None or entry.dtype not in ("float16", "bfloat16"):
                    continue  # (``"tf32": torch.float32``: no evidence in the runs that pick it)
                facts["option_casts"].append({**_record(entry, why, node, lines, role, None),
                                              "function": record["function"], "main": record["main"],
                                              "one_of": f"`{option_name}` picks one of {', '.join(keys)}",
                                              "option": option_name, "option_key": key})
            continue
        switch = _option_switch(node, parents) if sig.kind in ("autocast", "grad_scaler") else None
        if switch is not None:
            # ``with {"bf16": autocast(dtype=torch.bfloat16), "fp16": autocast(dtype=torch.float16), "fp32":
            # nullcontext()}[args.precision]:`` (Lumina-T2X, T11-3): the entry the option's value picks, which the
            # project reads from the launcher scripts or the option's default (Project._option_casts)
            option_name, key, keys = switch
            record["one_of"] = f"`{option_name}` picks one of {', '.join(keys)}"
            facts["option_casts"].append({**record, "option": option_name, "option_key": key})
            continue
        if option is not None:
            if _CONFIG_OBJECT.search(_dotted(getattr(node.func, "value", None)) or "") \
                    or _CONFIG_OBJECT.search(record["model"] or ""):
                continue  # ``config_class.from_pretrained(..., torch_dtype=...)``: a model config, no parameters
            # its dtype is the option's value: evidence only as the project resolves it (Project._option_casts)
            facts["option_casts"].append({**record, "option": option[1]})
            continue
        facts["signals"].append(record)
    _generic_flags_follow_autocast(facts["signals"])
    facts["literal_args"] = _literal_args(parents.of(ast.Call), owner)
    facts["option_defaults"] = _option_defaults(parents.of(ast.ClassDef, ast.Call)) \
        if b"dtype" in source or b"precision" in source else {}
    if b"fp16" in source or b"bf16" in source or b"amp" in source or b"half" in source or b"mixed" in source:
        switches = _switch_defaults(parents.of(ast.ClassDef, ast.Call))
        if switches:
            facts["switch_defaults"] = switches
    if _PY_CONFIG_FILE.search(path):
        leaves = _py_config_leaves(tree)
        if leaves:
            facts["py_config"] = leaves
    facts["config_runs"], facts["config_defaults"] = _config_runs(parents.of(ast.ClassDef, ast.Call), imports)
    if any(w.endswith("runner.train") for e in facts["entry_points"] for w in e["why"]):
        # mmengine's tools/train.py: `--amp` switches the config's optim_wrapper to AmpOptimWrapper, and the
        # configs pick theirs: the run's precision is the launch's (fp32 or fp16 autocast), as accelerate's is
        for r in facts["signals"]:
            if r["kind"] == "flag" and r["role"] == TRAINING and (
                    r["note"].startswith("command line --amp") or "AmpOptimWrapper" in r["note"] and r["one_of"]):
                r.update(kind="launcher", dtype="", pure=False, master=False,
                         note="mmengine: --amp / the config picks AmpOptimWrapper or not: the launch decides "
                              "(fp32 or fp16 autocast)")
    return facts


# Objects whose half copy does not train: inference pipelines, EMA / teacher copies, frozen parts.
_NOT_TRAINED = re.compile(r"(?i)pipe|(^|_)ema(_|$)|teacher|frozen")


# Task models whose head PEFT trains as a copy in the base's dtype (its SEQ_CLS / TOKEN_CLS / QUESTION_ANS
# task types put ``classifier`` / ``score`` / ``qa_outputs`` in ``modules_to_save``).
_TASK_HEAD_MODEL = re.compile(r"For(Sequence|Token)Classification\.from_pretrained$|ForQuestionAnswering\.from_pretrained$")
_ADAPTER_WRAPPERS = {"get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training"}


_PARAMS_TAKER = re.compile(r"(?i)param|optim|adam|sgd|lamb|lion|rmsprop|adagrad|adafactor")


def _casts(value: ast.AST) -> bool:
    """Does a call chain cast something (``deepcopy(model).half()``, ``.to(torch.float16)``)? Only a
    cast is a half copy made to be saved; ``fabric = L.Fabric(precision="16-mixed")`` passed to a
    ``save_model_checkpoint(fabric, model, path)`` after training is the run's precision (lit-llama)."""
    while isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in ("half", "to", "bfloat16", "type"):
            return True
        value = value.func.value if isinstance(value.func, ast.Attribute) else None
    return False


_FLOAT32 = {"torch.float32", "torch.float", "torch.float64", "torch.double"}


def _recast_to_float32(nodes: List[ast.AST], parents: "_Parents") -> set:
    """Half / bf16 casts that a later call of the same chain casts back to float32: the last cast
    decides. YOLOv7's ``model.half().float()  # pre-reduce anchor precision`` rounds the weights
    once and trains in float32 (under autocast), not a half model."""
    out = set()
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("half", "bfloat16", "to", "type")):
            continue
        cur: ast.AST = node
        while True:
            attr = parents.parent.get(id(cur))
            call = parents.parent.get(id(attr)) if isinstance(attr, ast.Attribute) and attr.value is cur else None
            if not (isinstance(call, ast.Call) and call.func is attr):
                break
            method = attr.attr
            if (method in ("float", "double") and not call.args and not call.keywords) or (
                    method in ("to", "type") and any(_dotted(a) in _FLOAT32 for a in
                                                     (*call.args, *(k.value for k in call.keywords if k.arg == "dtype")))):
                out.add(id(node))
                break
            cur = call
    return out


def _parts_recast_to_float32(nodes: List[ast.AST], parents: "_Parents") -> Dict[str, list]:
    """Models one named part of which a statement casts to float32 (``model.transformer.prefix_encoder
    .float()``, not in a loop): model name -> [(the part, line, enclosing function)]. A loop over the modules casting some back
    (apex's BatchNorm in float32) leaves most parameters half: not taken."""
    out: Dict[str, str] = {}
    for node in nodes:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        f = call.func
        if not isinstance(f, ast.Attribute) or not isinstance(f.value, ast.Attribute):
            continue
        if not ((f.attr == "float" and not call.args and not call.keywords) or (
                f.attr == "to" and any(_dotted(a) in _FLOAT32 for a in
                                       (*call.args, *(k.value for k in call.keywords if k.arg == "dtype"))))):
            continue
        part = _dotted(f.value)
        chain = list(parents.chain(node))
        if not part or any(isinstance(p, (ast.For, ast.AsyncFor, ast.While)) for p in chain):
            continue
        fn = next((p for p in chain if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        out.setdefault(part.split(".", 1)[0], []).append((part, node.lineno, fn))
    for node in nodes:
        model = _trainable_recast(node)
        if model is not None:
            fn = next((p for p in parents.chain(node) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
            out.setdefault(model, []).append((f"{model}{_TRAINABLE_PART}", node.lineno, fn))
    return out


_TRAINABLE_PART = " (its trainable parameters)"


def _to_float32(value: ast.AST) -> bool:
    """``x.float()`` / ``x.to(torch.float32)`` / ``x.to(dtype=torch.float32)``."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    f = value.func
    return (f.attr == "float" and not value.args and not value.keywords) or (f.attr == "to" and any(
        _dotted(a) in _FLOAT32 for a in (*value.args, *(k.value for k in value.keywords if k.arg == "dtype"))))


_MODULE_WALKS = ("modules", "named_modules", "children", "named_children", "parameters", "named_parameters")


def _data_cast(node: ast.Call, parents: "_Parents", imports: ImportTable) -> Optional[Tuple[Signal, str]]:
    """A parameter cast to half in place through its ``.data`` (modded-nanogpt: ``model.bank.data =
    model.bank.data.bfloat16()``, ``m.weight.data = m.weight.data.half()`` in a loop over ``model.modules()``):
    half-parameter evidence for the model it belongs to, and that model's name (the root of the target, or the
    module the loop walks)."""
    f = node.func
    if not isinstance(f, ast.Attribute) or f.attr not in ("half", "bfloat16", "to"):
        return None
    parent = parents.parent.get(id(node))
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is node
            and isinstance(parent.targets[0], ast.Attribute) and parent.targets[0].attr == "data"):
        return None
    dtype = None
    if f.attr in ("half", "bfloat16") and not node.args and not node.keywords:
        dtype = "float16" if f.attr == "half" else "bfloat16"
    elif f.attr == "to":
        for v in (*node.args, *(k.value for k in node.keywords if k.arg == "dtype")):
            q = imports.resolve(_dotted(v) or "")
            dtype = dtype or {"torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16"}.get(q)
    if dtype is None:
        return None
    target = _dotted(parent.targets[0])
    if not target or not target.endswith(".data") or _dotted(f.value) != target or target.count(".") < 2 \
            or target.startswith("self."):  # (a module casting its own weights: its method, not the run's)
        return None
    root = target.split(".", 1)[0]
    for p in parents.chain(node):
        if isinstance(p, (ast.For, ast.AsyncFor)) and root in {n.id for n in ast.walk(p.target) if isinstance(n, ast.Name)} \
                and isinstance(p.iter, ast.Call) and isinstance(p.iter.func, ast.Attribute) \
                and p.iter.func.attr in _MODULE_WALKS and _dotted(p.iter.func.value):
            root = _dotted(p.iter.func.value).rsplit(".", 1)[-1]
            break
    return Signal("half_params", dtype, pure=True, note=f"`{target}` cast to {dtype} in place"), root


def _trainable_recast(node: ast.AST) -> Optional[str]:
    """The model whose trainable parameters ``node`` casts to float32, or None: a loop over its parameters that
    requires_grad (``for param in filter(lambda p: p.requires_grad, model.parameters()): param.data =
    param.data.to(torch.float32)``, or an ``if param.requires_grad:`` inside the loop, or a loop that sets them
    trainable itself: ``para.requires_grad = True; para.data = para.to(torch.float32)``), diffusers'
    ``cast_training_params(model)`` (float32 unless told otherwise)."""
    if isinstance(node, ast.Call) and (_dotted(node.func) or "").rsplit(".", 1)[-1] == "cast_training_params" \
            and node.args and isinstance(node.args[0], ast.Name):
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), node.args[1] if len(node.args) > 1 else None)
        return node.args[0].id if dtype is None or _dotted(dtype) in _FLOAT32 else None
    if not isinstance(node, ast.For):
        return None
    it, tested = node.iter, False
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "filter" and len(it.args) == 2:
        tested = "requires_grad" in ast.dump(it.args[0])
        it = it.args[1]
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in ("parameters", "named_parameters")
            and isinstance(it.func.value, ast.Name)):
        return None
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.If) and "requires_grad" in ast.dump(stmt.test):
            tested = True
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is True \
                and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in stmt.targets):
            tested = True  # (ControlNeXt: ``para.requires_grad = True`` and ``para.data = para.to(torch.float32)``)
        if tested and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _to_float32(stmt.value) \
                and isinstance(stmt.targets[0], ast.Attribute) and stmt.targets[0].attr == "data":
            return it.func.value.id
    return None


def _parameter_owners(nodes: List[ast.AST]) -> set:
    """Names whose parameters the file hands to an optimizer: ``x.parameters()`` /
    ``x.named_parameters()``, or ``x`` passed to a call named for parameters or an optimizer
    (DALLE-pytorch's ``Adam(get_trainable_params(dalle))``): such an object is a model, whatever
    its name."""
    out = set()
    for n in nodes:
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in ("parameters", "named_parameters") and isinstance(f.value, ast.Name):
            out.add(f.value.id)
        elif _PARAMS_TAKER.search((_dotted(f) or "").rsplit(".", 1)[-1]):
            out.update(a.id for a in n.args if isinstance(a, ast.Name))
    return out


def _trained_half_cast(node: ast.Call, call_facts, trained: set) -> Optional[Signal]:
    """``dalle = dalle.half()`` / ``.to(torch.float16)`` on an object whose parameters the file
    trains (``_parameter_owners``), though its name is none of the usual model words."""
    f = node.func
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in trained):
        return None
    if f.attr == "half" and not node.args and not node.keywords:
        return Signal("half_params", "float16", pure=True)
    if f.attr == "to":
        from .context.evidence import dtype_of_value
        for v in (*call_facts.args, call_facts.kwargs.get("dtype")):
            if isinstance(v, Dotted) and dtype_of_value(v) == "float16":
                return Signal("half_params", "float16", pure=True)
    return None


def _adapter_wrapped(nodes: List[ast.AST], parents: Optional["_Parents"] = None) -> set:
    """Names of models handed to a PEFT wrapper (``get_peft_model(model, config)``); with ``parents``,
    only those wrapped in every run (not under an ``if`` of their function: llama-recipes' ``if
    train_config.use_peft: model = get_peft_model(model, peft_config)`` fine-tunes the whole model
    otherwise)."""
    return {_dotted(n.args[0]).rsplit(".", 1)[-1] for n in nodes
            if isinstance(n, ast.Call) and (_dotted(n.func) or "").rsplit(".", 1)[-1] in _ADAPTER_WRAPPERS
            and n.args and _dotted(n.args[0]) and (parents is None or not _under_if(n, parents))}


def _peft_classes(classes: List[ast.AST]) -> Dict[str, Dict[str, List[str]]]:
    """The module-level classes whose ``__init__`` hands a model it is given to a PEFT wrapper, there or in a method
    it calls on ``self`` (xtuner's ``SupervisedFinetune.__init__``: ``self.llm = self.build_llm_from_cfg(llm, ...)``,
    ``self.use_lora = lora is not None``, ``if self.use_lora: self._prepare_for_lora()``, which runs
    ``prepare_model_for_kbit_training(self.llm)`` and ``get_peft_model(self.llm, self.lora)``): class -> {"params":
    the ``__init__`` parameters the wrapped attribute is built from, "when": the parameters the ``if`` around the
    wrap tests (it is taken when each is passed a value other than None)}. A wrap under a test of anything else,
    or under an ``if`` inside the method, is not recorded."""
    out: Dict[str, Dict[str, List[str]]] = {}
    for cls in classes:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        init = methods.get("__init__")
        if init is None:
            continue
        params = {a.arg for a in init.args.args[1:] + init.args.kwonlyargs}
        built: Dict[str, set] = {}  # self.<attr> -> the parameters its assignments in __init__ read
        for node in ast.walk(init):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        built.setdefault(t.attr, set()).update(
                            n.id for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id in params)

        def tested(test: ast.AST) -> Optional[set]:
            names = set()
            for n in ast.walk(test):
                if isinstance(n, ast.Name) and n.id in params:
                    names.add(n.id)
                elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                    names |= built.get(n.attr, set())
            return names or None

        def wraps(body: List[ast.stmt], top: bool) -> List[Tuple[str, Optional[set]]]:
            """(the attribute a PEFT wrapper gets, the parameters the ifs around it test) in ``body``."""
            found = []

            def visit(stmts, when):
                for st in stmts:
                    if isinstance(st, ast.If):
                        if not top:
                            continue
                        cond = tested(st.test)
                        if cond is None:
                            continue
                        visit(st.body, (when or set()) | cond)
                        continue
                    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        continue
                    for n in ast.walk(st):
                        if not isinstance(n, ast.Call):
                            continue
                        name = _dotted(n.func) or ""
                        if name.rsplit(".", 1)[-1] in _ADAPTER_WRAPPERS and n.args \
                                and (_dotted(n.args[0]) or "").startswith("self."):
                            found.append((_dotted(n.args[0])[5:].split(".", 1)[0], when))
                        elif top and name.startswith("self.") and name[5:] in methods and name[5:] != "__init__":
                            found.extend((attr, when) for attr, w in wraps(methods[name[5:]].body, False) if w is None)
            visit(body, None)
            return found

        for attr, when in wraps(init.body, True):
            if built.get(attr):
                out[cls.name] = {"params": sorted(built[attr]), "when": sorted(when or ())}
                break
    return out


_DEEPSPEED_FRAMEWORK_IMPORT = re.compile(
    r"transformers(\.\w+)*\.(\w*Trainer|\w*TrainingArguments|HfArgumentParser)$|accelerate(\.\w+)*\.Accelerator$|"
    r"(lightning|pytorch_lightning)(\.\w+)*\.(Trainer|Fabric)$|trl(\.|$)|mmengine\.runner\.(Flexible)?Runner$")
_DEEPSPEED_FRAMEWORK_USE = re.compile(
    rb"\btransformers\.(\w*Trainer|\w*TrainingArguments|HfArgumentParser)\b|\baccelerate\.Accelerator\b|"
    rb"\b(pl|L|lightning|pytorch_lightning)\.(Trainer|Fabric)\(")


def _names_deepspeed(parents: "_Parents") -> bool:
    """Does the code (not a comment or a docstring) name DeepSpeed: an import, a name or attribute, a string
    (``"--deepspeed"``, ``type="DeepSpeedStrategy"``), a keyword argument?"""
    for n in parents.of(ast.Import, ast.ImportFrom, ast.Name, ast.Attribute, ast.Constant, ast.keyword):
        if isinstance(n, ast.Import):
            words = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            words = [n.module or "", *(a.name for a in n.names)]
        elif isinstance(n, ast.Name):
            words = [n.id]
        elif isinstance(n, ast.Attribute):
            words = [n.attr]
        elif isinstance(n, ast.keyword):
            words = [n.arg or ""]
        elif isinstance(n.value, str) and len(n.value) < 200 and not isinstance(parents.parent.get(id(n)), ast.Expr):
            words = [n.value]  # (a docstring is no use)
        else:
            words = []
        if any("deepspeed" in w.lower() for w in words):
            return True
    return False


def _calls_with(fn: ast.AST, name: str, after: int) -> bool:
    """Does a call in ``fn`` after line ``after`` take the local ``name`` as an argument (``Wrapper(llm, lora=cfg)``)?"""
    return any(isinstance(n, ast.Call) and n.lineno > after and any(
        isinstance(a, ast.Name) and a.id == name for a in [*n.args, *(k.value for k in n.keywords)]) for n in ast.walk(fn))


def _under_if(node: ast.AST, parents: "_Parents") -> bool:
    """Is ``node`` in a branch of an ``if`` / conditional expression of its function (or module)?"""
    child = node
    for p in parents.chain(node):
        if isinstance(p, (ast.If, ast.IfExp)) and child is not p.test:
            return True
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        child = p
    return False


def _evaluated_only(nodes: List[ast.AST]) -> set:
    """Names put in eval mode (``vae.eval()``) that the file never puts back in training mode nor hands
    to an optimizer (``vae.parameters()``): a frozen part (sd-scripts' ``load_target_model``: ``vae.to(
    dtype=torch.float16); vae.eval(); return vae``). A model evaluated between epochs calls ``.train()``
    again (or its parameters are optimized)."""
    evaluated, trained = set(), set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = _dotted(node.func.value)
            if not name:
                continue
            last = name.rsplit(".", 1)[-1]
            if node.func.attr == "eval" and not node.args:
                evaluated.add(last)
            elif node.func.attr in ("train", "parameters", "named_parameters"):
                trained.add(last)
    return evaluated - trained


def _frozen_objects(nodes: List[ast.AST], parents: Optional["_Parents"] = None) -> set:
    """Names of modules whose parameters do not train: ``vae.requires_grad_(False)``,
    ``for p in encoder.parameters(): p.requires_grad = False``, ``get_peft_model(model, config)`` (the
    last part of a dotted name; a PEFT wrap only when every run takes it)."""
    # PEFT freezes the base model and trains adapters (float32 since peft 0.12's autocast_adapter_dtype)
    out = _adapter_wrapped(nodes, parents)
    out |= _evaluated_only(nodes)
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False:
            name = _dotted(node.func.value)
            if name:
                out.add(name.rsplit(".", 1)[-1])
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call) \
                and isinstance(node.iter.func, ast.Attribute) and node.iter.func.attr == "parameters" \
                and isinstance(node.target, ast.Name):
            var = node.target.id
            for stmt in node.body:
                frozen = (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is False
                          and any(_dotted(t) == f"{var}.requires_grad" for t in stmt.targets)) or \
                         (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                          and _dotted(stmt.value.func) == f"{var}.requires_grad_" and stmt.value.args
                          and isinstance(stmt.value.args[0], ast.Constant) and stmt.value.args[0].value is False)
                name = _dotted(node.iter.func.value)
                if frozen and name:
                    out.add(name.rsplit(".", 1)[-1])
    # ``unet.requires_grad_(False)`` then ``for name, p in unet.named_parameters(): if "to_out" in name:
    # p.requires_grad = True`` (ControlNeXt): some of its parameters train, so the module is not frozen
    return out - _parameters_reenabled(nodes) if out else out


def _parameters_reenabled(nodes: List[ast.AST]) -> set:
    """Modules some of whose parameters a loop over them sets trainable (``p.requires_grad = True``)."""
    out = set()
    for node in nodes:
        if not (isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call)
                and isinstance(node.iter.func, ast.Attribute) and node.iter.func.attr in ("parameters", "named_parameters")):
            continue
        name = _dotted(node.iter.func.value)
        if name and any(isinstance(a, ast.Assign) and isinstance(a.value, ast.Constant) and a.value.value is True
                        and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in a.targets)
                        for a in ast.walk(node)):
            out.add(name.rsplit(".", 1)[-1])
    return out


def _string_returns(node: ast.AST, param: Optional[str] = None, branch: Optional[bool] = None):
    """The strings an expression evaluates to, each as [value, parameter tested, branch] (``"bf16-mixed" if
    training else "bf16-true"`` -> [["bf16-mixed", "training", True], ["bf16-true", "training", False]]);
    None when it is not made of string literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [[node.value, param, branch]]
    if isinstance(node, ast.IfExp):
        test = node.test.id if isinstance(node.test, ast.Name) else None
        body = _string_returns(node.body, test or param, True if test else branch)
        orelse = _string_returns(node.orelse, test or param, False if test else branch)
        return body + orelse if body is not None and orelse is not None else None
    return None


def _precision_functions(functions, returns) -> Dict[str, List[list]]:
    """Functions that return a Lightning precision string (litgpt's ``get_default_supported_precision``:
    ``"bf16-mixed"`` or ``"16-mixed"`` by the hardware): name -> the [value, parameter, branch] they return.
    ``returns``: every ``return`` of the file (without a Lightning string among them, no function is one)."""
    out: Dict[str, List[list]] = {}
    if not any(_lightning_return(n) for n in returns):
        return out  # (what follows walks every function)
    for fn in functions:
        values: List[list] = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Return):
                found = _string_returns(node.value) if node.value is not None else None
                if found is None:
                    values = []
                    break
                values.extend(found)
        if values and any(v[0].lower() in _LIGHTNING for v in values):
            out[fn.name] = values
    return out


def _lightning_return(node: ast.Return) -> bool:
    """A ``return`` of string literals one of which is a Lightning float16 / bfloat16 precision."""
    found = _string_returns(node.value) if node.value is not None else None
    return bool(found) and any(v[0].lower() in _LIGHTNING for v in found)


def _precision_call(node: ast.Call, owner, parents: "_Parents") -> Optional[Dict[str, Any]]:
    """A trainer's ``precision=`` set by a call of a function (``Fabric(precision=default_precision())``,
    or through a name: ``precision = precision or default_precision(training=True)``): the callee's name
    and its literal keyword arguments, for the project to resolve (``Project`` knows the callee's returns)."""
    f = node.func
    last = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if last not in ("Trainer", "Fabric"):
        return None
    value = next((k.value for k in node.keywords if k.arg == "precision"), None)
    setting = _dotted(value) if isinstance(value, ast.Attribute) else None
    if setting is not None and len(setting.split(".")) >= 3 and _CONFIG_NAME.fullmatch(setting.split(".")[0]):
        # ``pl.Trainer(precision=configs.trainer.precision)`` (openspeech, M16-2): the value of that setting, which the
        # project reads from the program's configs and the structured-config dataclasses of its section
        return {"callee": None, "setting": setting, "kwargs": {}}
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and _CONFIG_NAME.fullmatch(value.value.id):
        key = value.slice.value if isinstance(value.slice, ast.Index) else value.slice  # (3.8's ast.Index)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            # ``pl.Trainer(precision=_config["precision"])`` (ViLT, a sacred experiment's config, P21-2): the value the
            # project's settings give that key
            return {"callee": None, "key": key.value, "kwargs": {}}
    if isinstance(value, ast.Name):
        fn = owner(node)
        scope = ast.walk(fn) if fn is not None else parents.nodes
        assigned = [a.value for a in scope if isinstance(a, ast.Assign) and a.lineno < node.lineno
                    and any(isinstance(t, ast.Name) and t.id == value.id for t in a.targets)]
    else:
        assigned = [value]
    candidates = []  # every value the name may hold (``precision = None`` in a quantisation branch too)
    for value in assigned:
        candidates.extend(value.values if isinstance(value, ast.BoolOp) else
                          [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value])
    for c in candidates:
        if isinstance(c, ast.Call):
            name = c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id if isinstance(c.func, ast.Name) else None
            if name:
                kwargs = {k.arg: k.value.value for k in c.keywords
                          if k.arg and isinstance(k.value, ast.Constant) and isinstance(k.value.value, (bool, int, str))}
                return {"callee": name, "kwargs": kwargs}
    return None


_CONFIG_NAME = re.compile(r"(?i)\w*(?:cfg|conf|config)s?\w*|h?params|hp|opts?")


def _sacred_configs(functions: List[ast.AST]) -> List[list]:
    """The precision settings of a sacred experiment's config functions: ``@ex.config`` (the defaults of every run)
    and ``@ex.named_config`` (picked by ``with <name>`` on the command line), each as [function, "config" or
    "named_config", {key: literal value}] for the literals its body assigns to names naming a precision (ViLT's
    ``precision = 16``, P21-2)."""
    out = []
    for fn in functions:
        kinds = {(_dotted(d) or "").rsplit(".", 1)[-1] for d in fn.decorator_list}
        kind = "config" if "config" in kinds else "named_config" if "named_config" in kinds else None
        if kind is None:
            continue
        values = {}
        for stmt in fn.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, (bool, int, float, str)) \
                    and _SETTING_KEY.search(stmt.targets[0].id):
                values[stmt.targets[0].id] = stmt.value.value
        out.append([fn.name, kind, values])
    return out[:64]


def _setting_fields(classes: List[ast.AST]) -> List[list]:
    """The ``precision`` fields of the file's dataclasses with a literal default (openspeech's structured configs:
    ``class Fp16GPUTrainerConfigs(GPUTrainerConfigs): precision: int = field(default=16)``): [class, field, value]."""
    out = []
    for cls in classes:
        if not (isinstance(cls, ast.ClassDef) and any("dataclass" in (_dotted(d.func if isinstance(d, ast.Call) else d) or "")
                                                      for d in cls.decorator_list)):
            continue
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "precision":
                v = stmt.value
                if isinstance(v, ast.Call) and (_dotted(v.func) or "").rsplit(".", 1)[-1] == "field":
                    v = next((k.value for k in v.keywords if k.arg == "default"), None)
                if isinstance(v, ast.Constant) and isinstance(v.value, (int, str)) and not isinstance(v.value, bool):
                    out.append([cls.name, stmt.target.id, str(v.value)])
    return out


def precision_call_values(call: Dict[str, Any], returns: List[list]) -> List[str]:
    """The precision strings a resolved ``precision_calls`` entry may give: the callee's returns on the
    branches its literal keyword arguments select."""
    out = []
    for value, param, branch in returns:
        if param is not None and param in call["kwargs"] and bool(call["kwargs"][param]) != branch:
            continue
        if value not in out:
            out.append(value)
    return out


def precision_call_signal(call: Dict[str, Any], values: List[str]) -> Optional[Signal]:
    """The evidence of a resolved precision call: float16 first when it is one of several."""
    found = [(v, _LIGHTNING[v.lower()]) for v in values if v.lower() in _LIGHTNING]
    if not found:
        return None
    found.sort(key=lambda x: x[1][0] != "float16")
    value, (dtype, pure) = found[0]
    others = ", ".join(v for v in values if v != value)
    note = f"precision={value!r} from `{call['callee']}()`" + (f" (one of {value}, {others})" if others else "")
    return Signal("flag", dtype, pure=pure, note=note, conditional=bool(others),
                  condition=f"`{call['callee']}()` returns one of {', '.join(values)}" if others else "")


# Trainers built on accelerate, whose precision ``accelerate launch`` / the accelerate config sets
# (as the files name them; the project's subclasses of them count too: Project.entry_points).
LAUNCHER_TRAINERS = ("pytorch_accelerated.Trainer", "pytorch_accelerated.trainer.Trainer")


def _launcher_signal(node: ast.Call, call_facts) -> Optional[Signal]:
    """A precision the launcher decides: ``Accelerator()`` with no literal ``mixed_precision`` (``accelerate
    launch --mixed_precision fp16`` / the accelerate config set it), a trainer built on accelerate
    (``pytorch_accelerated.Trainer``). One of fp32, fp16 or bf16 autocast: no precision of its own, but
    what fails under any CUDA autocast (AMP202's refused binary_cross_entropy) is a hazard there."""
    q = call_facts.qualname or ""
    if q.startswith("pytorch_accelerated.") and q.rsplit(".", 1)[-1].endswith("Trainer"):  # LAUNCHER_TRAINERS and kin
        return Signal("launcher", "", note="a pytorch_accelerated trainer: the precision is accelerate's (the launcher's)")
    if q in ("accelerate.Accelerator", "accelerate.accelerator.Accelerator") and \
            not isinstance(call_facts.kwargs.get("mixed_precision", UNKNOWN), str):
        return Signal("launcher", "", note="`Accelerator()` without a literal mixed_precision: the launcher's precision")
    return None


_LIGHTNING_TRAINERS = {"pytorch_lightning.Trainer", "pytorch_lightning.trainer.trainer.Trainer", "lightning.Trainer",
                       "lightning.pytorch.Trainer", "lightning.pytorch.trainer.trainer.Trainer", "lightning.Fabric",
                       "lightning.fabric.Fabric", "lightning_fabric.Fabric"}


def _callers_precision(node: ast.Call, call_facts, fn) -> Optional[Signal]:
    """A Lightning ``Trainer`` / ``Fabric`` built with no precision of its own but the enclosing
    function's ``**kwargs`` (graphnet's ``EasySyntax.fit(..., **trainer_kwargs)``): the caller passes
    the precision (``precision="16-mixed"``), one of fp32, fp16 or bf16 autocast, as a launcher does."""
    if (call_facts.qualname or "") not in _LIGHTNING_TRAINERS or "precision" in call_facts.kwargs \
            or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.args.kwarg is None:
        return None
    name = fn.args.kwarg.arg
    if not any(kw.arg is None and isinstance(kw.value, ast.Name) and kw.value.id == name for kw in node.keywords):
        return None
    return Signal("launcher", "", note=f"`**{name}` of `{fn.name}` passes the caller's precision")


def _conditional_signal(node: ast.Call, call_facts, imports: ImportTable, fields: Optional["_Fields"] = None):
    """``Trainer(precision=32 if args.fp32 else 16)``, ``Accelerator(mixed_precision="fp16" if
    args.fp16 else "no")``: a keyword set by a conditional expression is evidence of each branch
    that is evidence alone; float16 first. (signal, "`precision` is one of 32, 16") or (None, None).
    ``fields``: the dtype fields of the config objects in the file (a branch ``config.amp_dtype``)."""
    for kw in node.keywords:
        if not kw.arg or not isinstance(kw.value, ast.IfExp):
            continue
        branches, value = [], kw.value
        while isinstance(value, ast.IfExp):
            branches.append(value.body)
            value = value.orelse
        branches.append(value)
        found = []
        for b in branches:
            call_facts.kwargs[kw.arg] = fields.value(b) if fields is not None else ast_value(b, imports)
            # a model loader's ``dtype=config.amp_dtype if config.amp else torch.float32`` (fairseq2's examples)
            sig = classify(call_facts) or _loader_signal(node, call_facts)
            if sig is not None:
                found.append(sig)
        call_facts.kwargs[kw.arg] = UNKNOWN
        if found:
            found.sort(key=lambda sg: sg.dtype != "float16")
            texts = [ast.unparse(b) for b in branches] if hasattr(ast, "unparse") else []
            # the test that picks the branch (``if cfg.use_fp16``): the switch of this option
            test = f" (if {ast.unparse(kw.value.test)})" if hasattr(ast, "unparse") else ""
            return found[0], (f"`{kw.arg}` is one of {', '.join(texts)}" if texts else f"`{kw.arg}` is conditional") + test
    return None, None


def _ifexp_half_test(value: ast.AST, imports: ImportTable) -> Optional[str]:
    """The condition under which the conditional expression ``value`` (``torch.bfloat16 if args.bf16 else torch.half``,
    a chain of them) gives float16, as a Python expression (``not (args.bf16)``); None when no branch, or several,
    are float16."""
    tests, branches = [], []
    while isinstance(value, ast.IfExp):
        tests.append(value.test)
        branches.append(value.body)
        value = value.orelse
    branches.append(value)
    half = [i for i, b in enumerate(branches)
            if imports.resolve(_dotted(b) or "") in ("torch.float16", "torch.half")
            or isinstance(b, ast.Constant) and b.value in ("fp16", "float16", 16, "16", "16-mixed")]
    if not tests or len(half) != 1 or not hasattr(ast, "unparse"):
        return None
    i = half[0]
    parts = [f"not ({ast.unparse(t)})" for t in tests[:i]] + ([f"({ast.unparse(tests[i])})"] if i < len(tests) else [])
    return " and ".join(parts)


def _branch_test(node: ast.AST, parents: "_Parents") -> Optional[str]:
    """The condition under which ``node`` runs by the innermost enclosing ``if`` / conditional expression testing a
    dtype flag (``_dtype_condition``'s): its test on the body side, ``not (test)`` on the else side."""
    child = node
    for p in parents.chain(node):
        if isinstance(p, (ast.If, ast.IfExp)) and child is not p.test and hasattr(ast, "unparse"):
            test = ast.unparse(p.test)
            if _DTYPE_FLAG.search(test):
                body = p.body if isinstance(p, ast.If) else [p.body]
                return f"({test})" if any(child is b for b in body) else f"not ({test})"
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        child = p
    return None


_PRECISION_KEYWORDS = {"precision", "mixed_precision", "fp16", "bf16", "opt_level"}


# a module-level assignment of a precision keyword's value to a name (``mixed_precision = 'bf16'``)
_MODULE_PRECISION_NAME = re.compile(rb"(?m)^(?:\w*_)?(?:precision|mixed_precision|fp16|bf16|opt_level)\s*=\s*['\"\w]")


def _module_strings(tree: ast.Module, parents: "_Parents") -> Dict[str, ast.Constant]:
    """The module-level names bound once, to a literal string / number / bool, and stored nowhere else in the file (no
    ``global`` of them either): a script's settings constants (``mixed_precision = 'bf16'``)."""
    top = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, (str, int, bool)):
            top[stmt.targets[0].id] = stmt.value
    if not top:
        return {}
    stores: Dict[str, int] = {}
    for n in parents.nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and n.id in top:
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                stores[name] = stores.get(name, 0) + 2
    return {k: v for k, v in top.items() if stores.get(k) == 1}


def _with_local_values(node: ast.Call, fn, module_strings: Optional[Dict[str, ast.Constant]] = None) -> ast.Call:
    """``node`` with its precision keywords that name a local of the enclosing function replaced
    by the value last assigned to it before the call (InnerEye's ``precision = 32 if num_gpus == 0
    else 16 if config.use_mixed_precision else 32`` then ``Trainer(precision=precision)``), or a string constant the
    module binds once (``module_strings``: Chinese-Vicuna's ``mixed_precision = 'bf16'`` at the top of the script,
    passed as ``Accelerator(mixed_precision=mixed_precision)``, P22-6): the call as the precision evidence reads it.
    ``node`` itself when nothing is replaced."""
    names = {k.arg: k.value.id for k in node.keywords
             if k.arg in _PRECISION_KEYWORDS and isinstance(k.value, ast.Name)}
    if names and module_strings:
        local = set()
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} | {
                n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        constant = {k: module_strings[v] for k, v in names.items() if v in module_strings and v not in local}
        if constant:
            node = ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=[
                ast.keyword(arg=k.arg, value=constant[k.arg]) if k.arg in constant else k for k in node.keywords]), node)
            names = {k: v for k, v in names.items() if k not in constant}
    if not names or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node
    values: Dict[str, ast.AST] = {}
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id in names.values() and stmt.lineno < node.lineno \
                and (stmt.targets[0].id not in values or values[stmt.targets[0].id].lineno < stmt.lineno):
            values[stmt.targets[0].id] = stmt
    if not values:
        return node
    # literals assigned on the branches of an ``if`` (parler-tts: ``mixed_precision = "fp16"`` / ``"bf16"`` /
    # ``"no"`` by ``training_args.dtype``): one of them, as ``"fp16" if ... else "bf16" if ... else "no"`` says
    branched = {id(a) for i in ast.walk(fn) if isinstance(i, ast.If) for a in ast.walk(i) if isinstance(a, ast.Assign)}
    for name in set(values):
        assigned = [a for a in ast.walk(fn) if isinstance(a, ast.Assign) and len(a.targets) == 1
                    and isinstance(a.targets[0], ast.Name) and a.targets[0].id == name and a.lineno < node.lineno]
        literals = [a.value for a in assigned if isinstance(a.value, ast.Constant)]
        if len(literals) == len(assigned) > 1 and any(id(a) in branched for a in assigned) \
                and len({repr(v.value) for v in literals}) > 1:
            chain = literals[-1]
            for v in reversed(literals[:-1]):
                chain = ast.IfExp(test=ast.Name(id=name, ctx=ast.Load()), body=v, orelse=chain)
            values[name] = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=chain, lineno=values[name].lineno)
    keywords = [ast.keyword(arg=k.arg, value=values[names[k.arg]].value) if names.get(k.arg) in values else k
                for k in node.keywords]
    return ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=keywords), node)


def _autocast_aliases(assigns: List[ast.AST], imports: ImportTable, owner) -> Dict[str, ast.Call]:
    """Module-level names bound to ``functools.partial(<autocast>, ...)`` fixing neither its dtype nor whether it is
    enabled (TransformerEngine's ``gpu_autocast_ctx = functools.partial(torch.amp.autocast, device_type="cuda")``,
    whose calls all pass ``enabled=False``): a spelling of autocast, no use of it; what says a precision is each
    call of the name (T11-11). Calls in other files that import the name are not read."""
    out: Dict[str, ast.Call] = {}
    for a in assigns:
        v = a.value
        if not (isinstance(v, ast.Call) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)
                and owner(a) is None and v.args and imports.resolve(_dotted(v.func) or "") in ("functools.partial", "partial")
                and imports.resolve(_dotted(v.args[0]) or "") in AUTOCAST_NAMES):
            continue
        fixed = {k.arg for k in v.keywords} | ({"dtype"} if len(v.args) > 2 else set())
        if not fixed & {"dtype", "enabled"}:
            out[a.targets[0].id] = v
    return out


def _self_options(classes: List[ast.AST]) -> Dict[str, Dict[str, Tuple[str, Any]]]:
    """For each class, the attributes its ``__init__`` sets from a parameter with a literal default (FlagAI's
    ``Trainer.__init__(self, ..., fp16=False)`` with ``self.fp16 = fp16``): class -> attr -> (parameter, default)."""
    out: Dict[str, Dict[str, Tuple[str, Any]]] = {}
    for cls in classes:
        init = next((n for n in getattr(cls, "body", ()) if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            continue
        a = init.args
        positional = a.posonlyargs + a.args
        defaults = {x.arg: d for x, d in zip(positional[len(positional) - len(a.defaults):], a.defaults)}
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        literal = {k: d.value for k, d in defaults.items()
                   if isinstance(d, ast.Constant) and (d.value is None or isinstance(d.value, (bool, int, str)))}
        attrs: Dict[str, Tuple[str, Any]] = {}
        for stmt in ast.walk(init):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name) \
                    and stmt.value.id in literal:
                t = stmt.targets[0]
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    attrs[t.attr] = (stmt.value.id, literal[stmt.value.id])
        if attrs:
            out[cls.name] = attrs
    return out


def _self_condition(node: ast.AST, parents: "_Parents", options: Dict[str, Dict[str, Tuple[str, Any]]]) -> Optional[dict]:
    """The nearest ``if self.<attr>:`` (or ``if not self.<attr>:``) around ``node`` in a method, when the class's
    ``__init__`` sets that attribute from a parameter with a literal default (``_self_options``): its class, the
    parameter, the default, and whether ``node`` runs when the attribute is true (``taken``: True) or false."""
    child = node
    for p in parents.chain(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(p, ast.If):
            test, negated = p.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negated = test.operand, True
            if not (isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self"):
                return None
            in_body = any(child is b for b in p.body)
            if not in_body and not any(child is b for b in p.orelse):
                return None  # (the test itself)
            cls = next((c for c in parents.chain(p) if isinstance(c, ast.ClassDef)), None)
            opt = options.get(cls.name, {}).get(test.attr) if cls is not None else None
            if opt is None:
                return None
            return {"class": cls.name, "attr": test.attr, "param": opt[0], "default": opt[1],
                    "taken": in_body != negated}
        child = p
    return None


_COMPARE_OPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


def _self_enabled(node: ast.Call, fn, parents: "_Parents", options: Dict[str, Dict[str, Tuple[str, Any]]],
                  imports: ImportTable) -> Optional[dict]:
    """The constructor option an autocast's ``enabled`` switch reads (``torch.cuda.amp.autocast(self.fp16 > 0)``, or
    through a local of the method assigned once: ``is_fp16 = self.fp16 > 0``), as ``_self_condition`` gives it, with
    the comparison (``compare``: [operator, number]) the attribute's value is put to; None otherwise."""
    name = imports.resolve(_dotted(node.func) or "")
    keyword = next((k.value for k in node.keywords if k.arg == "enabled"), None)
    if keyword is None:
        position = 0 if name.startswith(("torch.cuda.", "torch.cpu.")) else 2
        keyword = node.args[position] if len(node.args) > position else None
    expr = keyword
    if isinstance(expr, ast.Name):
        assigned = [a for a in ast.walk(fn) if isinstance(a, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)]
        if len(assigned) != 1 or len(assigned[0].targets) != 1:
            return None
        expr = assigned[0].value
    compare = None
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in _COMPARE_OPS \
            and isinstance(expr.comparators[0], ast.Constant) and isinstance(expr.comparators[0].value, (int, float)) \
            and not isinstance(expr.comparators[0].value, bool):
        compare = [_COMPARE_OPS[type(expr.ops[0])], expr.comparators[0].value]
        expr = expr.left
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
        return None
    cls = next((c for c in parents.chain(node) if isinstance(c, ast.ClassDef)), None)
    opt = options.get(cls.name, {}).get(expr.attr) if cls is not None else None
    if opt is None:
        return None
    out = {"class": cls.name, "attr": expr.attr, "param": opt[0], "default": opt[1], "taken": True}
    if compare is not None:
        out["compare"] = compare
    return out


def _conditional_builds(calls: List[ast.AST], parents: "_Parents", options) -> List[dict]:
    """Classes a method builds only under ``if self.<attr>:`` of a constructor option (FlagAI's ``if self.fp16: model =
    FP16_Module(model)``): the call's line and name with that condition (``_self_condition``)."""
    out = []
    for node in calls:
        name = _dotted(node.func) if isinstance(node, ast.Call) else None
        if not name or not name.rsplit(".", 1)[-1][:1].isupper():
            continue
        cond = _self_condition(node, parents, options)
        if cond is not None:
            out.append({"line": node.lineno, "callee": name, **cond})
    return out


def _with_caller_state(node: ast.Call, fn) -> ast.Call:
    """An autocast call whose arguments name locals of ``fn`` assigned only the autocast state in force
    (``enabled = torch.is_autocast_enabled("cuda")``, ``dtype = torch.get_autocast_dtype("cuda")``, then
    ``torch.amp.autocast("cuda", enabled=enabled, dtype=dtype)``: TransformerEngine's recompute, T11-11) with
    those arguments replaced by the calls, which ``ast_value`` reads as the caller's state. ``node`` itself
    otherwise."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            not (_dotted(node.func) or "").endswith("autocast"):
        return node
    names = {a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
    if not names:
        return node
    assigned: Dict[str, List[ast.AST]] = {}
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name) and t.id in names:
                    assigned.setdefault(t.id, []).append(stmt.value)
    state = {n: vs[0] for n, vs in assigned.items()
             if all(isinstance(v, ast.Call) and (_dotted(v.func) or "").rsplit(".", 1)[-1] in _AUTOCAST_STATE_GETTERS
                    for v in vs)}
    if not state:
        return node

    def swap(a: ast.AST) -> ast.AST:
        return state[a.id] if isinstance(a, ast.Name) and a.id in state else a
    return ast.copy_location(ast.Call(func=node.func, args=[swap(a) for a in node.args],
                                      keywords=[ast.keyword(arg=k.arg, value=swap(k.value)) for k in node.keywords]), node)


_AUTOCAST_STATE_GETTERS = frozenset(n.rsplit(".", 1)[-1] for n in AUTOCAST_STATE_NAMES)


def _or_default(node: ast.Call, fn) -> ast.Call:
    """``from_pretrained(name, torch_dtype=torch_dtype or torch.float16)`` (AnglE): with ``torch_dtype`` a
    parameter of ``fn`` whose default is None, the dtype is the fallback; with anything else it is one of
    the two (read as ``a if a else fallback``). ``node`` itself when no dtype keyword has that shape."""
    changed = False
    keywords = []
    for k in node.keywords:
        v = k.value
        if k.arg in ("torch_dtype", "dtype") and isinstance(v, ast.BoolOp) and isinstance(v.op, ast.Or) \
                and len(v.values) == 2 and isinstance(v.values[0], ast.Name):
            name, fallback = v.values[0].id, v.values[1]
            value: ast.AST = ast.IfExp(test=v.values[0], body=v.values[0], orelse=fallback)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = fn.args
                positional = a.posonlyargs + a.args
                defaults = dict(zip([x.arg for x in positional[len(positional) - len(a.defaults):]], a.defaults))
                defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
                d = defaults.get(name)
                if isinstance(d, ast.Constant) and d.value is None:
                    value = fallback
            keywords.append(ast.keyword(arg=k.arg, value=value))
            changed = True
        else:
            keywords.append(k)
    if not changed:
        return node
    return ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=keywords), node)


def _amp_optim_wrapper(node: ast.AST) -> Optional[Signal]:
    """mmengine's ``AmpOptimWrapper`` named as an optimizer wrapper's type: an assignment of the string
    (``cfg.optim_wrapper.type = "AmpOptimWrapper"``), ``dict(type="AmpOptimWrapper", dtype=...)``, the
    dict literal, or the wrapper built directly (``AmpOptimWrapper(optimizer=..., dtype=...)``). Its ``dtype`` defaults to float16 (``"bfloat16"``: bf16 autocast, no scaling needed)."""
    pairs: List[Tuple[Optional[str], ast.AST]] = []
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == "AmpOptimWrapper":
        return Signal("flag", "float16", note="mmengine AmpOptimWrapper (fp16 autocast, dynamic loss scaling)")
    if isinstance(node, ast.Call) and (_dotted(node.func) or "").rsplit(".", 1)[-1] == "AmpOptimWrapper":
        # built directly: ``AmpOptimWrapper(optimizer=..., dtype="float16")``
        pairs = [("type", ast.Constant("AmpOptimWrapper"))] + [(k.arg, k.value) for k in node.keywords]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        pairs = [(k.arg, k.value) for k in node.keywords]
    elif isinstance(node, ast.Dict):
        pairs = [(k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None, v)
                 for k, v in zip(node.keys, node.values)]
    values = {k: v for k, v in pairs if k}
    t = values.get("type")
    if not (isinstance(t, ast.Constant) and t.value == "AmpOptimWrapper"):
        return None
    d = values.get("dtype")
    text = d.value if isinstance(d, ast.Constant) and isinstance(d.value, str) else _dotted(d) if d is not None else None
    if text and "bf" in text.lower():
        return Signal("flag", "bfloat16", note="mmengine AmpOptimWrapper(dtype=bfloat16)")
    return Signal("flag", "float16", note="mmengine AmpOptimWrapper (fp16 autocast, dynamic loss scaling)")


def _plugin_parameter(node: ast.Call, fn) -> Optional[str]:
    """The parameter of ``fn`` a ColossalAI plugin's ``precision=`` names (Open-Sora's
    ``create_colossalai_plugin(plugin, dtype, ...)``: ``LowLevelZeroPlugin(precision=dtype)``), or None."""
    if (_dotted(node.func) or "").rsplit(".", 1)[-1] not in COLOSSALAI_MASTER_WEIGHT_PLUGINS \
            or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    for k in node.keywords:
        if k.arg == "precision" and isinstance(k.value, ast.Name) and k.value.id in params:
            return k.value.id
    return None


def _plugin_record(node: ast.Call, value: str) -> Optional[Dict[str, Any]]:
    """The evidence fields of the ColossalAI plugin call ``node`` with ``precision=value``; None: fp32."""
    from .context.evidence import _colossalai_plugin
    sig = _colossalai_plugin((_dotted(node.func) or "").rsplit(".", 1)[-1], value)
    if sig is None:
        return None
    return {"kind": sig.kind, "dtype": sig.dtype, "enabled": sig.enabled, "pure": sig.pure, "master": sig.master,
            "note": sig.note}


_LITERAL_KEYWORDS = {"dtype", "precision", "mixed_precision", "param_dtype"}


# a config object's switch of fp16 autocast (coqui's ``VitsConfig(mixed_precision=True)``, nerfstudio's
# ``TrainerConfig(mixed_precision=True, pipeline=...(model=NerfactoModelConfig()))``)
_RUN_KEYS = ("mixed_precision", "use_amp", "fp16")
_CONFIG_CLASS = re.compile(r"Argument|Config|Trainer")


def _config_runs(nodes: List[ast.AST], imports: ImportTable) -> Tuple[List[Dict[str, Any]], Dict[str, Dict[str, bool]]]:
    """The config objects of a registry of runs, each naming the code it trains: a ``*Config`` /
    ``*Arguments`` / ``*Trainer`` call with a literal ``mixed_precision=True|False`` (``use_amp``,
    ``fp16``), or with none and other config objects inside (its class's default then), with the
    classes named inside it (``model=NerfactoModelConfig(...)``, ``_target=NeRFModel``), as the file's
    imports resolve them. And the
    literal defaults of those keys in the file's classes (``mixed_precision: bool = False``)."""
    runs, defaults = [], {}
    inside = set()  # the config objects nested in a run's are its parts, not runs of their own
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                target = stmt.target if isinstance(stmt, ast.AnnAssign) else \
                    stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
                if isinstance(target, ast.Name) and target.id in _RUN_KEYS and isinstance(stmt.value, ast.Constant) \
                        and isinstance(stmt.value.value, bool):
                    defaults.setdefault(node.name, {})[target.id] = stmt.value.value
            continue
        if not isinstance(node, ast.Call) or id(node) in inside:
            continue
        callee = _dotted(node.func) or ""
        if not _CONFIG_CLASS.search(callee.rsplit(".", 1)[-1]):
            continue
        key = value = None
        for k in node.keywords:
            if k.arg in _RUN_KEYS and isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool):
                key, value = k.arg, k.value.value
                break
        names, nested = [], False
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            # a nested config object, and a class handed over by name (``VanillaModelConfig(_target=NeRFModel)``)
            values = [arg]
            for n in ast.walk(arg):
                if isinstance(n, ast.Call):
                    values += [n.func, *n.args, *(k.value for k in n.keywords)]
                    nested = nested or bool(_CONFIG_CLASS.search((_dotted(n.func) or "").rsplit(".", 1)[-1]))
            for v in values:
                name = imports.resolve(_dotted(v) or "") if isinstance(v, (ast.Name, ast.Attribute)) else None
                if name and name not in names:
                    names.append(name)
        if names and (key is not None or nested):
            inside.update(id(n) for n in ast.walk(node))
            runs.append({"line": node.lineno, "callee": imports.resolve(callee), "key": key, "value": value, "names": names})
    return runs, defaults


def _literal_args(nodes: List[ast.AST], owner) -> List[Dict[str, Any]]:
    """Precision keywords a call passes as a string: a literal, a config's default (``cfg.get("dtype",
    "bf16")``), or a local of the calling function last assigned one of those before the call
    (Open-Sora's ``cfg_dtype = cfg.get("dtype", "bf16")`` ... ``create_colossalai_plugin(..., dtype=cfg_dtype)``)."""
    out = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        for k in node.keywords:
            if k.arg not in _LITERAL_KEYWORDS:
                continue
            v = k.value
            if isinstance(v, ast.Name):
                v = _with_local_values(ast.Call(func=node.func, args=[], keywords=[ast.keyword(arg="precision", value=v)],
                                                lineno=node.lineno, col_offset=node.col_offset), owner(node)).keywords[0].value
            text = _string_or_default(v)
            if text is not None:
                out.append({"line": node.lineno, "keyword": k.arg, "value": text})
    return out


def _string_or_default(v: ast.AST) -> Optional[str]:
    if isinstance(v, ast.Constant) and isinstance(v.value, str):
        return v.value
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "get" and len(v.args) == 2 \
            and isinstance(v.args[1], ast.Constant) and isinstance(v.args[1].value, str):
        return v.args[1].value
    return None


def _plugin_config_default(node: ast.Call, call_facts) -> None:
    """A ColossalAI plugin's ``precision=cfg.get("dtype", "bf16")`` is the config's default, not the
    plugin's own (fp16): Open-Sora's configs all keep bf16 (fp16 only for a user who edits one)."""
    if (_dotted(node.func) or "").rsplit(".", 1)[-1] not in COLOSSALAI_MASTER_WEIGHT_PLUGINS:
        return
    for k in node.keywords:
        v = k.value
        if k.arg == "precision" and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr == "get" and len(v.args) == 2 and isinstance(v.args[1], ast.Constant) \
                and isinstance(v.args[1].value, str):
            call_facts.kwargs["precision"] = v.args[1].value


def _splat_kwargs(node: ast.Call, call_facts, owner, parents: "_Parents", imports: ImportTable,
                  lines: List[str]) -> Optional[str]:
    """Keywords passed as ``**params`` where ``params`` is a dict the same function builds before
    the call (``params = {"max_steps": n}``, ``params["precision"] = 16``, ``params.update(precision=16)``)
    go into ``call_facts``; one set under an ``if`` makes the evidence "one of" (detectron2's
    ``if cfg.SOLVER.AMP.ENABLED: params["precision"] = 16`` then ``pl.Trainer(**params)``).
    Returns that condition's text, or None."""
    for kw in node.keywords:
        if kw.arg is None and isinstance(kw.value, ast.Call) and isinstance(kw.value.func, ast.Name):
            for key, value in _returned_dict(kw.value.func.id, parents):
                call_facts.kwargs.setdefault(key, ast_value(value, imports))
    splats = {kw.value.id for kw in node.keywords if kw.arg is None and isinstance(kw.value, ast.Name)}
    if not splats:
        return None
    scope = owner(node)
    body = scope if scope is not None else parents.nodes[0] if parents.nodes else None
    if body is None:
        return None
    found: Dict[str, tuple] = {}
    for stmt in ast.walk(body):
        if getattr(stmt, "lineno", node.lineno) >= node.lineno or not isinstance(stmt, (ast.Assign, ast.Expr)):
            continue
        pairs = []
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            t, v = stmt.targets[0], stmt.value
            if isinstance(t, ast.Name) and t.id in splats and isinstance(v, ast.Dict):
                pairs = [(k.value, val) for k, val in zip(v.keys, v.values)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            elif isinstance(t, ast.Name) and t.id in splats and isinstance(v, ast.Call) and _dotted(v.func) == "dict":
                pairs = [(kw.arg, kw.value) for kw in v.keywords if kw.arg]
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in splats:
                key = t.slice.value if isinstance(t.slice, ast.Index) else t.slice  # (3.8's ast.Index)
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    pairs = [(key.value, v)]
        elif isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
                and stmt.value.func.attr == "update" and isinstance(stmt.value.func.value, ast.Name) \
                and stmt.value.func.value.id in splats:
            pairs = [(kw.arg, kw.value) for kw in stmt.value.keywords if kw.arg]
        for key, value in pairs:
            if key in call_facts.kwargs:
                continue  # the call's own keyword
            cond = None
            for p in parents.chain(stmt):
                if p is scope:
                    break
                if isinstance(p, ast.If):
                    cond = f"if {_text(lines, p.test)}"
                    break
            found[key] = (value, cond)
    conditions = []
    for key, (value, cond) in found.items():
        call_facts.kwargs[key] = ast_value(value, imports)
        if cond:
            conditions.append(f"`{key}` set {cond}")
    return "; ".join(conditions) or None


def _returned_dict(name: str, parents: "_Parents") -> List[Tuple[str, ast.AST]]:
    """The literal keys and values of the dict that the file's module-level function ``name``
    returns, when every ``return`` of it is a dict literal with string keys: the keywords of a
    ``torch.autocast(**get_autocast_args(args))`` (rf-detr: ``return {"device_type": "cuda",
    "enabled": args.amp, "dtype": torch.bfloat16}``)."""
    module = parents.nodes[0] if parents.nodes else None
    fn = next((n for n in getattr(module, "body", ()) if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        return []
    returns = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns or not all(isinstance(d, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                              for k in d.keys) for d in returns):
        return []
    # rf-detr's helper returns one dict per torch version: a key the returns give different values
    # is left out (decided elsewhere); one they agree on, or only some give, is kept
    values: Dict[str, List[ast.AST]] = {}
    for d in returns:
        for k, v in zip(d.keys, d.values):
            values.setdefault(k.value, []).append(v)
    return [(key, vs[0]) for key, vs in values.items() if len({ast.dump(v) for v in vs}) == 1]


def _enabled_switch(node: ast.AST, sig: Signal, lines: List[str]) -> Optional[str]:
    """``autocast(enabled=cfg.use_fp16)`` / ``GradScaler(enabled=args.amp)``: the run's flag that switches
    the mixed precision on, as the condition of that option (``if cfg.use_fp16``); flags anded together
    (``enabled=cfg.use_fp16 and not cfg.enable_fsdp``, llama-recipes) are that condition too."""
    if sig.kind == "flag" and isinstance(node, ast.Call):
        # ``TrainingArguments(fp16=True if precision == 'fp16' else False)``: that test switches the option
        keys = ("fp16", "mixed_precision") if sig.dtype == "float16" else ("bf16",)
        for k in node.keywords:
            if k.arg in keys and isinstance(k.value, ast.IfExp) \
                    and isinstance(k.value.body, ast.Constant) and k.value.body.value is True:
                return f"if {_text(lines, k.value.test)}"
    if sig.kind not in ("autocast", "grad_scaler") or not isinstance(node, ast.Call):
        return None
    for k in node.keywords:
        if k.arg == "enabled" and (isinstance(k.value, (ast.Name, ast.Attribute))
                                   # ``GradScaler(enabled=self.cfg["grad_scaler_enabled"])`` (autogluon's Mitra, T12-5)
                                   or _setting_text(k.value) is not None
                                   or isinstance(k.value, ast.BoolOp) and isinstance(k.value.op, ast.And)
                                   # ``GradScaler(enabled=cfg.precision == "float16")`` (physicsnemo's recipes)
                                   or isinstance(k.value, ast.Compare)):
            return f"if {_text(lines, k.value)}"
    return None


def _literal_half_cast(node: ast.AST) -> bool:
    """``x.half()`` / ``x.to(torch.float16)`` / ``x.to(device, dtype=torch.half)``: float16 written in
    the cast itself, not a dtype variable that follows the run's mixed precision (diffusers'
    ``weight_dtype``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "half":
        return True
    if node.func.attr == "from_pretrained":
        values = [k.value for k in node.keywords if k.arg == "torch_dtype"]
    elif node.func.attr in ("to", "type"):
        values = [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]
    else:
        return False
    return any(_dotted(v) in ("torch.float16", "torch.half") for v in values)


def _under_main(node: ast.AST, parents: "_Parents") -> bool:
    """Is ``node`` in the body of an ``if __name__ == "__main__":`` block: run when the file is the
    program, never when another file imports it (sd-scripts' sdxl_original_unet.py speed test with a
    GradScaler and autocast is not the precision of the trainers that import the U-Net)?"""
    child = node
    for p in parents.chain(node):
        if isinstance(p, ast.If) and child in p.body and isinstance(p.test, ast.Compare) \
                and isinstance(p.test.left, ast.Name) and p.test.left.id == "__name__" \
                and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in p.test.comparators):
            return True
        child = p
    return False


def _dtype_lookup(node: ast.AST, tables: Optional["_DtypeTables"] = None) -> Optional[str]:
    """The setting an autocast's dtype is looked up by: ``autocast(..., dtype=getattr(torch, cfg.dtype))`` ->
    ``cfg.dtype`` (read against the program's config by the project, ``Project._hydra_settings``); with
    ``tables``, also a lookup in a dict of dtypes by string key (``dtype=dtype_map[cfg.training.amp_precision]``,
    the table a dict literal or a name the file assigns one, directly or through a name assigned that lookup:
    T15-4)."""
    for k in getattr(node, "keywords", ()):
        v = k.value
        if k.arg != "dtype":
            continue
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "getattr" \
                and len(v.args) == 2 and _dotted(v.args[0]) == "torch":
            return _setting_text(v.args[1])
        if tables is not None:
            return tables.setting_of(v)
    return None


class _DtypeTables:
    """The file's dicts of dtypes by string key (``{"float16": torch.float16, ...}``, ``dict(fp16=torch.float16,
    ...)``) and what reads them: a table is a literal or a name the file assigns one once; a name assigned once a
    lookup in one by a setting (``amp_dtype = dtype_map[cfg.precision]``) stands for that lookup."""

    def __init__(self, assigns: List[ast.AST], imports: ImportTable):
        self.imports = imports
        counts: Dict[str, int] = {}
        values: Dict[str, ast.AST] = {}
        for node in assigns:
            # (``torch_dtype_map: dict[str, torch.dtype] = {...}``, xlstm: an annotated table too)
            target_node = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                else node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
            target = _dotted(target_node) if target_node is not None else None
            if target is not None:
                counts[target] = counts.get(target, 0) + 1
                values[target] = node.value
        once = {t: v for t, v in values.items() if counts[t] == 1}
        self.tables = {t for t, v in once.items() if self._keyed_dtypes(v)}
        self.lookups = {t: v for t, v in once.items() if isinstance(v, ast.Subscript) and self._lookup_setting(v)}

    def _keyed_dtypes(self, node: ast.AST) -> bool:
        """Is ``node`` a dict literal (or ``dict(...)`` call of keywords) of dtypes with string keys?"""
        if isinstance(node, ast.Dict):
            keys, values = node.keys, node.values
            if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
                return False
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and not node.args and node.keywords and all(k.arg for k in node.keywords):
            values = [k.value for k in node.keywords]
        else:
            return False
        return bool(values) and all(len(_dtype_alternatives(v, self.imports)) == 1 for v in values)

    def _lookup_setting(self, node: ast.Subscript) -> Optional[str]:
        table = node.value
        if not (self._keyed_dtypes(table) or (_dotted(table) or "") in self.tables):
            return None
        key = node.slice.value if isinstance(node.slice, ast.Index) else node.slice  # (3.8's ast.Index)
        return _setting_text(key) if isinstance(key, (ast.Name, ast.Attribute, ast.Subscript)) else None

    def setting_of(self, value: ast.AST) -> Optional[str]:
        """The setting ``value`` (a dtype argument) is looked up by in one of the tables, else None."""
        if isinstance(value, ast.Subscript):
            return self._lookup_setting(value)
        name = _dotted(value)
        if name in self.lookups:
            return self._lookup_setting(self.lookups[name])
        return None


_YAML_PATH = re.compile(r"[\w./-]+\.ya?ml")


def _yaml_paths(calls: List[ast.AST]) -> List[str]:
    """The YAML paths a file passes to calls as string literals (``add_argument("--config",
    default="configs/base_config.yaml")``, ``open("config.yaml")``), at most eight."""
    out: List[str] = []
    for node in calls:
        if not isinstance(node, ast.Call):
            continue
        for v in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(v, ast.Constant) and isinstance(v.value, str) and _YAML_PATH.fullmatch(v.value) \
                    and v.value not in out and len(out) < 8:
                out.append(v.value)
    return out


_JSON_PATH = re.compile(r"[\w./-]*?([\w.-]+\.json)")


def _json_names(constants: List[ast.AST]) -> List[str]:
    """The file names of the JSON paths written as string literals in the file (``"./deepspeed.json"`` ->
    ``deepspeed.json``), at most sixteen."""
    out: List[str] = []
    for node in constants:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
            m = _JSON_PATH.fullmatch(node.value)
            if m and m.group(1) not in out and len(out) < 16:
                out.append(m.group(1))
    return out


_INFERENCE_SWITCH = re.compile(r"(?i)^(\w+\.)*(is_|for_|do_|use_|run_)?(inference|infer|predict|eval|evaluate|generate|serve)"
                               r"(_mode|_only)?$")


def _inference_switch(node: ast.AST, parents: "_Parents") -> Optional[str]:
    """The text of the nearest ``if`` around ``node`` (in its body) whose test is a flag named for inference
    (``if inference_mode:``, ``if args.eval:``), else None."""
    child = node
    for p in parents.chain(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(p, ast.If):
            if any(child is b for b in p.body):
                name = _dotted(p.test)
                return name if name and _INFERENCE_SWITCH.match(name) else None
            return None
        child = p
    return None


def _mm_config_fp16(tree: ast.Module, source: bytes) -> List[list]:
    """An mmcv 1.x Python config's float16 setting, at its module level: ``fp16 = dict(loss_scale=512.)`` (mmdet /
    mmdet3d / mmseg's ``train_detector`` then builds ``Fp16OptimizerHook``: the models' ``@auto_fp16`` forwards under
    autocast and a GradScaler on torch >= 1.6), ``optimizer_config = dict(type="Fp16OptimizerHook", ...)``, or a
    project hook's ``use_fp16=True`` there (ibot's apex ``DistOptimizerHook``): ``[line, text]`` of each (T11-10 /
    M13-3). ``fp16 = None`` is none. Only a file that reads like a config (module-level assignments of ``dict(...)``
    / literals, among them a ``model`` or an ``optimizer``) is asked."""
    body = tree.body
    names = {t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if not ({"model", "optimizer", "runner", "optimizer_config", "_base_"} & names) or any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in body):
        return []
    lines = source.decode("utf-8", "replace").splitlines()
    out = []
    for n in body:
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)):
            continue
        name, v = n.targets[0].id, n.value
        kw = {k.arg: k.value for k in v.keywords if k.arg} if isinstance(v, ast.Call) and _dotted(v.func) == "dict" else \
            {k.value: x for k, x in zip(v.keys, v.values) if isinstance(k, ast.Constant)} if isinstance(v, ast.Dict) else None
        if kw is None:
            continue
        hook = kw.get("type")
        if name == "fp16" or name == "optimizer_config" and (
                isinstance(hook, ast.Constant) and isinstance(hook.value, str) and "Fp16" in hook.value
                or isinstance(kw.get("use_fp16"), ast.Constant) and kw["use_fp16"].value is True):
            out.append([n.lineno, _text(lines, n)])
    return out


def _setting_text(node: ast.AST) -> Optional[str]:
    """The text of a setting read through names, attributes and string keys (``cfg.dtype``,
    ``self.cfg.hyperparams["precision"]``), else None."""
    if isinstance(node, ast.Subscript):
        key = node.slice.value if isinstance(node.slice, ast.Index) else node.slice  # (3.8's ast.Index)
        inner = _setting_text(node.value)
        if inner is None or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        return f"{inner}[{key.value!r}]"
    return _dotted(node)


# dict keys that may hold a precision setting (``"precision": "bfloat16"``, ``"grad_scaler_enabled": False``)
_SETTING_KEY = re.compile(r"(?i)(^|_)(precision|dtype|amp|fp16|bf16|half|scaler|autocast)(_|$)")
_SETTING_KEY_TEXT = re.compile(rb"""(?i)["'](\w*_)?(precision|dtype|amp|fp16|bf16|half|scaler|autocast)(_\w*)?["']\s*:|"""
                               rb"""\b(\w*_)?(precision|dtype|amp|fp16|bf16|half|scaler|autocast)(_\w*)?\s*=""")


# a dtype / precision setting read by a string key: ``cfg["dtype"]``, ``config.get('amp_dtype')``
_DTYPE_SETTING = re.compile(r"(?i)(\w+_)?(dtype|precision)")
_KEYED_SETTING_TEXT = re.compile(rb"""(?i)\[\s*["'](\w+_)?(dtype|precision)["']\s*\]|\.get\(\s*["'](\w+_)?(dtype|precision)["']""")


def _keyed_settings(nodes: List[ast.AST]) -> List[str]:
    """The dtype / precision keys the file reads by a string (``config['general']['dtype']``, ``cfg.get("precision")``),
    at most eight."""
    out: List[str] = []
    for node in nodes:
        key = None
        if isinstance(node, ast.Subscript):
            key = node.slice.value if isinstance(node.slice, ast.Index) else node.slice  # (3.8's ast.Index)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and _DTYPE_SETTING.fullmatch(key.value) \
                and key.value not in out and len(out) < 8:
            out.append(key.value)
    return out


# attribute-access dicts: ``easydict.EasyDict`` (``edict``), ``addict.Dict``, ``munch.Munch`` / ``munchify``,
# ``dotmap.DotMap``, ``box.Box``, ``ml_collections.ConfigDict`` and the usual project copies of them
_ATTR_DICT_NAMES = frozenset({"EasyDict", "edict", "AttrDict", "AttributeDict", "Munch", "munchify", "DotMap", "DotDict",
                              "dotdict", "Box", "ConfigDict", "AttrMap"})
_ATTR_DICT_MODULES = frozenset({"easydict", "addict", "munch", "dotmap", "box", "attrdict", "ml_collections"})
_ATTR_DICT_TEXT = re.compile(rb"__getattr__|" + b"|".join(re.escape(n.encode()) for n in sorted(_ATTR_DICT_NAMES | _ATTR_DICT_MODULES)))


def _builds_attr_dicts(nodes: List[ast.AST]) -> bool:
    """Does the file build an attribute-access dict: call ``EasyDict(...)`` / ``edict(...)`` (imported from a library
    of such dicts or named so), or a class of its own deriving from one or from ``dict`` with a ``__getattr__`` that
    reads its items (``return self[name]``, ``self.get(name)``)? ZoeDepth's ``get_config`` returns
    ``edict(typed_config)`` built from its ``COMMON_TRAINING_CONFIG = {"use_amp": False, ...}`` (T21-3)."""
    local: set = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            top = (node.module or "").split(".")[-1]
            for alias in node.names:
                if alias.name in _ATTR_DICT_NAMES or top in _ATTR_DICT_MODULES and alias.name[:1].isupper() \
                        or top == "easydict":
                    local.add(alias.asname or alias.name)
        elif isinstance(node, ast.ClassDef):
            bases = {_dotted(b).rsplit(".", 1)[-1] for b in node.bases if _dotted(b)}
            getattr_reads = any(
                isinstance(f, ast.FunctionDef) and f.name == "__getattr__" and any(
                    isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "self"
                    or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
                    for n in ast.walk(f))
                for f in node.body)
            if bases & _ATTR_DICT_NAMES or "dict" in bases and getattr_reads:
                local.add(node.name)
    names = local | _ATTR_DICT_NAMES
    return any(isinstance(node, ast.Call) and (_dotted(node.func) or "").rsplit(".", 1)[-1] in names
               for node in nodes)


def _setting_dicts(nodes: List[ast.AST], parents: "_Parents") -> List[list]:
    """The precision settings a file writes in dict literals with string keys (and ``dict(...)`` calls): autogluon's
    Mitra ``hyperparams={"precision": "bfloat16", "grad_scaler_enabled": False, ...}``, read by its trainer as
    ``getattr(torch, self.cfg.hyperparams["precision"])`` and ``GradScaler(enabled=...["grad_scaler_enabled"])``
    (T12-5): ``[dotted key, value]`` for each constant value under a key naming a precision, nested dicts and the
    keyword a dict is passed as giving the key its prefix (``hyperparams.precision``), and its line."""
    out: List[list] = []

    def pairs(node: ast.AST):
        if isinstance(node, ast.Dict):
            return [(k.value, v) for k, v in zip(node.keys, node.values)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            return [(k.arg, k.value) for k in node.keywords if k.arg]
        return None

    def walk(node: ast.AST, prefix: str, depth: int) -> None:
        for key, value in pairs(node) or ():
            if pairs(value) is not None and depth < 3:
                walk(value, f"{prefix}{key}.", depth + 1)
            elif isinstance(value, ast.Constant) and isinstance(value.value, (str, bool, int, float)) \
                    and _SETTING_KEY.search(key) and len(out) < 64:
                out.append([f"{prefix}{key}", value.value, value.lineno])

    for node in nodes:
        if pairs(node) is None:
            continue
        parent = parents.parent.get(id(node))
        if isinstance(parent, ast.Dict) or isinstance(parent, ast.keyword) and pairs(parents.parent.get(id(parent))) is not None:
            continue  # (a nested dict: walked from its outermost one)
        prefix = f"{parent.arg}." if isinstance(parent, ast.keyword) and parent.arg else ""
        walk(node, prefix, 0)
    return out


def _record(sig: Signal, why: str, node: ast.AST, lines: List[str], role: str, one_of: Optional[str],
            tables: Optional[_DtypeTables] = None) -> Dict[str, Any]:
    src = _text(lines, node)
    lookup = _dtype_lookup(node, tables) if sig.kind == "autocast" else None
    note = f"{DTYPE_LOOKUP}`{lookup}`" if lookup else sig.note
    return {"kind": sig.kind, "dtype": sig.dtype, "enabled": sig.enabled, "pure": sig.pure,
            "master": getattr(sig, "master", False), "note": note, "role": role, "why": why,
            "one_of": one_of, "text": src, "line": node.lineno, "model": _cast_object(node, sig)}


_CONFIG_OBJECT = re.compile(r"(?i)config(_class)?$")


_MODULE_ITERATORS = {"modules", "children", "named_modules", "named_children"}


def _module_loop_owner(node: ast.AST, parents: "_Parents") -> Optional[str]:
    """``model`` when ``node`` is a method call on the target of an enclosing ``for m in model.modules():`` (or
    ``for name, m in model.named_modules():``), the loop's module; else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)):
        return None
    name = node.func.value.id
    for p in parents.chain(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        if isinstance(p, ast.For) and isinstance(p.iter, ast.Call) and isinstance(p.iter.func, ast.Attribute) \
                and p.iter.func.attr in _MODULE_ITERATORS:
            targets = p.target.elts if isinstance(p.target, ast.Tuple) else [p.target]
            if isinstance(targets[-1], ast.Name) and targets[-1].id == name:
                return _dotted(p.iter.func.value) or None
    return None


def _returns_name(fn: ast.AST, name: str) -> bool:
    """Does function ``fn`` return the local ``name`` (``return net``) in its own body?"""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == name
               for n in ast.walk(fn)) and not isinstance(fn, ast.ClassDef)


def _bound_to_calls_of(name: str, parents: "_Parents") -> List[str]:
    """The names the file binds the result of calling its function ``name`` to (``model = make_net()`` ->
    ``model``; ``self.model = self.build()`` -> ``model``)."""
    out = []
    for a in parents.of(ast.Assign):
        v = a.value
        if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(v, ast.Call) \
                and (_dotted(v.func) or "").rsplit(".", 1)[-1] == name:
            out.append((_dotted(a.targets[0]) or "").rsplit(".", 1)[-1])
    return out


def _cast_object(node: ast.AST, sig: Signal) -> str:
    """The name of the object a half cast applies to (``vae`` in ``self.vae.to(dtype=...)``)."""
    if sig.kind != "half_params" or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return ""
    name = _dotted(_cast_receiver(node))
    return name.rsplit(".", 1)[-1] if name else ""


def _cast_receiver(node: ast.Call) -> ast.AST:
    """What the method cast ``node`` (``x.half()``, ``x.to(...)``) is called on, past the moves before it
    (``model`` of ``model.cuda().half()``)."""
    receiver = node.func.value
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
            receiver.func.attr in _MOVES:
        receiver = receiver.func.value
    return receiver


_MOVES = {"cuda", "cpu", "to", "half", "float", "bfloat16", "eval", "train", "requires_grad_", "to_empty"}


def _text(lines: List[str], node: ast.AST) -> str:
    first = node.lineno - 1
    last = (getattr(node, "end_lineno", None) or node.lineno) - 1
    if not 0 <= first < len(lines):
        return ""
    if first == last and getattr(node, "end_col_offset", None) is not None:
        raw = lines[first].encode("utf-8")[node.col_offset:node.end_col_offset].decode("utf-8", "replace")
    else:
        chunk = [lines[i] for i in range(first, min(last, len(lines) - 1) + 1)]
        chunk[0] = chunk[0].encode("utf-8")[node.col_offset:].decode("utf-8", "replace")
        raw = " ".join(chunk)
    src = " ".join(raw.split())
    return src if len(src) <= 60 else src[:57] + "..."


def _extra_signal(node: ast.Call, facts, source: bytes) -> Optional[Signal]:
    """Half-conversion APIs that ``classify`` does not know as such: ``model.convert_to_fp16()``
    (guided-diffusion: fp32 master parameters kept by its MixedPrecisionTrainer) and FSDP
    ``MixedPrecision(param_dtype=torch.float16)`` (sharded fp32 parameters, fp16 compute)."""
    f = node.func
    q = facts.qualname or ""
    if isinstance(f, ast.Attribute) and f.attr == "convert_to_fp16" and not node.args:
        master = b"master_param" in source
        return Signal("half_params", "float16", pure=True, note="convert_to_fp16()" + (", fp32 master params" if master else ""),
                      master=master)
    sig = _loader_signal(node, facts)
    if sig is not None:
        return sig
    # (FSDP2's ``fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=...))`` as FSDP's MixedPrecision, T11-7)
    policy = q.rsplit(".", 1)[-1]
    if policy in ("MixedPrecision", "MixedPrecisionPolicy") and "param_dtype" in facts.kwargs:
        d = facts.kwargs["param_dtype"]
        if isinstance(d, Dotted) and d.name in ("torch.float16", "torch.half"):
            return Signal("half_params", "float16", pure=True, note=f"FSDP {policy}(param_dtype=torch.float16)", master=True)
        if isinstance(d, Dotted) and d.name == "torch.bfloat16":
            return Signal("half_params", "bfloat16", pure=True, note=f"FSDP {policy}(param_dtype=torch.bfloat16)", master=True)
    return None


# ``Accelerator(mixed_precision="no")``: accelerate autocasts nothing, an FSDP policy's half compute is all there is
_ACCELERATE_NO_MIXED = re.compile(rb"""mixed_precision\s*=\s*["']no["']""")


def _in_accelerate_fsdp_plugin(node: ast.AST, parents: "_Parents") -> bool:
    """Is ``node`` the ``mixed_precision_policy=`` of accelerate's ``FullyShardedDataParallelPlugin(...)``?"""
    kw = parents.parent.get(id(node))
    call = parents.parent.get(id(kw)) if isinstance(kw, ast.keyword) else None
    return isinstance(kw, ast.keyword) and kw.arg == "mixed_precision_policy" and isinstance(call, ast.Call) \
        and (_dotted(call.func) or "").rsplit(".", 1)[-1] == "FullyShardedDataParallelPlugin"


# functions that build or load a model, whose ``dtype=`` is its parameters' dtype
_MODEL_LOADER = re.compile(r"(?i)(load|build|create|get|make)_\w*model")


def _loader_signal(node: ast.Call, facts) -> Optional[Signal]:
    """fairseq2's ``load_unity_model(name, device=..., dtype=torch.float16)`` (seamless_communication's
    finetune.py), ``load_model(name, dtype=...)``: the model is built with parameters of that dtype."""
    f = node.func
    last = (facts.qualname or "").rsplit(".", 1)[-1] or (
        f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    if _MODEL_LOADER.fullmatch(last) and isinstance(facts.kwargs.get("dtype"), Dotted):
        d = facts.kwargs["dtype"].name
        if d in ("torch.float16", "torch.half", "torch.bfloat16"):
            return Signal("half_params", "bfloat16" if d == "torch.bfloat16" else "float16", pure=True,
                          note=f"{last}(dtype={d})")
    return None


_CLI_FLAGS = {"--fp16": "float16", "--amp": "float16", "--use_amp": "float16", "--use-amp": "float16",
              "--bf16": "bfloat16"}
_CLI_CHOICES = {"--precision", "--mixed_precision", "--mixed-precision"}
_LIGHTNING = {"16": ("float16", False), "16-mixed": ("float16", False), "16-true": ("float16", True),
              "fp16": ("float16", False), "bf16": ("bfloat16", False), "bf16-mixed": ("bfloat16", False),
              "bf16-true": ("bfloat16", True)}


# Command-line switches that say "mixed precision" without saying which: the autocast they enable does.
GENERIC_AMP_FLAGS = ("--amp", "--use_amp", "--use-amp")


def _generic_flags_follow_autocast(signals: List[dict]) -> None:
    """``add_argument("--amp", action="store_true")`` beside ``torch.autocast(..., dtype=torch.bfloat16,
    enabled=args.amp)``: the flag switches bf16 autocast (PhysicsNeMo's airfrans example). When every
    autocast of the file is bfloat16 and no GradScaler is built, a generic AMP flag is bfloat16."""
    autocasts = [s for s in signals if s["kind"] == "autocast"]
    if not autocasts or any(s["dtype"] != "bfloat16" for s in autocasts) or any(s["kind"] == "grad_scaler" for s in signals):
        return
    for s in signals:
        if s["kind"] == "flag" and s["dtype"] == "float16" and any(
                s["note"].startswith(f"command line {flag}") for flag in GENERIC_AMP_FLAGS):
            s.update(dtype="bfloat16", note=s["note"] + ": its autocast is bfloat16")


def _cli_signal(node: ast.Call, deepspeed_options: frozenset = frozenset()) -> Optional[Signal]:
    """A training script's command line: ``add_argument("--fp16", action="store_true")`` makes
    float16 one of its precisions; ``add_argument("--precision", default="16-mixed")`` (Lightning)
    / ``--mixed_precision default "fp16"`` (accelerate) says it unless overridden. A flag the file
    reads only into a DeepSpeed config dict (``deepspeed_options``) is an option of DeepSpeed's run."""
    f = node.func
    if not (isinstance(f, ast.Attribute) and f.attr == "add_argument" and node.args):
        return None
    names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    default = kw.get("default")
    default_value = default.value if isinstance(default, ast.Constant) else None
    dest = kw.get("dest")
    for name in names:
        if name in _CLI_FLAGS:
            action = kw.get("action")
            store_true = isinstance(action, ast.Constant) and action.value == "store_true"
            if default_value is True or store_true:
                attr = dest.value if isinstance(dest, ast.Constant) else name.lstrip("-").replace("-", "_")
                note = f"command line {name}" + (" (one of)" if default_value is not True else "")
                if attr in deepspeed_options:
                    note += DEEPSPEED_OPTION
                return Signal("flag", _CLI_FLAGS[name], note=note)
        if name in _CLI_CHOICES and default_value is not None and not isinstance(default_value, bool):
            hit = _LIGHTNING.get(str(default_value).lower())
            if hit is not None:
                return Signal("flag", hit[0], pure=hit[1], note=f"command line {name} default {default_value!r}")
    return None


def _half_wrapper(node: ast.Call, parents: _Parents) -> Optional[Signal]:
    """``module.half()`` on a parameter of an ``__init__``: a wrapper that makes what it wraps half
    (``self.add_module("module", module.half())``; Megatron's Float16Module keeps fp32 master
    weights in its optimizer, hence ``master`` for a class named so)."""
    f = node.func
    if not (isinstance(f, ast.Attribute) and f.attr == "half" and not node.args and isinstance(f.value, ast.Name)):
        return None
    for p in parents.chain(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if p.name == "__init__" and f.value.id in [a.arg for a in p.args.args]:
                cls = next((c for c in parents.chain(p) if isinstance(c, ast.ClassDef)), None)
                master = bool(cls and re.search(r"(?i)float16|fp16|half", cls.name))
                return Signal("half_params", "float16", pure=True, note="a wrapper module that makes its module half",
                              master=master)
            return None
    return None


def _truthy(node: ast.AST) -> Optional[bool]:
    """True / False for a literal, None (one of) for anything computed."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return node.value.lower() not in ("false", "0", "")
        return bool(node.value)
    return None


# DeepSpeed config keys: a dict literal holding one is a DeepSpeed config
_DEEPSPEED_KEYS = {"fp16", "bf16", "amp", "train_batch_size", "train_micro_batch_size_per_gpu",
                   "gradient_accumulation_steps", "zero_optimization", "gradient_clipping"}
DEEPSPEED_OPTION = " (read only into a DeepSpeed config: an option of DeepSpeed's run)"


def _deepspeed_dict(node: ast.Dict) -> bool:
    keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return len(keys & _DEEPSPEED_KEYS) >= 2


def _deepspeed_only_options(nodes: List[ast.AST], parents: "_Parents") -> frozenset:
    """Attributes the file reads (``args.amp``) only as values inside a DeepSpeed config dict literal
    (DALLE-pytorch's ``'amp': {'enabled': args.amp, 'opt_level': 'O1'}``): the ``--amp`` flag is
    apex O1 inside DeepSpeed, not an autocast of the script's own torch optimizer."""
    inside, outside = set(), set()
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
            in_config = any(isinstance(p, ast.Dict) and _deepspeed_dict(p) for p in parents.chain(node))
            (inside if in_config else outside).add(node.attr)
    return frozenset(inside - outside)


def _dict_signals(node: ast.Dict, fn=None):
    """A DeepSpeed config as a dict literal: ``{"fp16": {"enabled": True}}`` (half model with fp32
    master weights and dynamic loss scaling) / ``"bf16"``; ``"enabled": args.fp16`` is one of.
    ``"enabled": param_dtype == "fp16"`` in a function ``fn`` whose ``param_dtype="bf16"`` is what
    its callers leave as is is read at that default (OpenRLHF's ``get_train_ds_config``: bf16)."""
    for k, v in zip(node.keys, node.values):
        if not (isinstance(k, ast.Constant) and k.value in ("fp16", "bf16", "bfloat16")):
            continue
        if not isinstance(v, ast.Dict):
            continue
        for k2, v2 in zip(v.keys, v.values):
            if isinstance(k2, ast.Constant) and k2.value == "enabled":
                on = _truthy(v2)
                default = _at_parameter_default(v2, fn) if on is None else None
                if on is False or default is False:
                    continue
                dtype = "float16" if k.value == "fp16" else "bfloat16"
                note = f'DeepSpeed "{k.value}": {{"enabled": ...}}' + (
                    "" if on else " (on at the parameter's default)" if default else " (one of)")
                yield Signal("flag", dtype, pure=True, note=note, master=True), note


def _at_parameter_default(test: ast.AST, fn) -> Optional[bool]:
    """``name == "lit"`` / ``name != "lit"`` where ``name`` is a parameter of ``fn`` with a string
    default: the test's value at that default; None for anything else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
            and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))):
        return None
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = dict(zip([x.arg for x in positional[len(positional) - len(a.defaults):]], a.defaults))
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    default = defaults.get(test.left.id)
    if not (isinstance(default, ast.Constant) and isinstance(default.value, str)):
        return None
    equal = default.value == test.comparators[0].value
    return equal if isinstance(test.ops[0], ast.Eq) else not equal


def _dtype_condition(node: ast.AST, parents: _Parents, lines: List[str]) -> Optional[str]:
    """The text of an enclosing ``if`` / conditional expression testing a dtype flag: ``if <test>`` on its body side,
    ``if not (<test>)`` on its else side (fastNLP's ShardedGradScaler in the else of ``if ... or fp16 is False:``)."""
    child = node
    for p in parents.chain(node):
        if isinstance(p, (ast.If, ast.IfExp)) and child is not p.test:
            test = _text(lines, p.test)
            if _DTYPE_FLAG.search(test):
                orelse = child is p.orelse if isinstance(p, ast.IfExp) else any(child is b for b in p.orelse)
                return f"if not ({test})" if orelse else f"if {test}"
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        child = p
    return None


def _training_helpers(functions, training_lines: Dict[int, List[int]]) -> set:
    """Names of the functions a training function of the file calls before its last backward /
    optimizer step (EveryDream2's ``get_model_prediction_and_target``, the forward pass of its
    training loop, also used by validation): what they run is training, whatever their name."""
    out = set()
    for fn in functions:
        steps = training_lines.get(id(fn))
        if not steps:
            continue
        last = max(steps)
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and call.lineno <= last:
                f = call.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) and \
                    isinstance(f.value, ast.Name) and f.value.id == "self" else None
                if name:
                    out.add(name)
    return out | _training_callers(functions, training_lines)


def _training_callers(functions, training_lines: Dict[int, List[int]]) -> set:
    """Names of the file's functions that call one of its training functions, directly or through one another
    (glow-tts' ``train_and_eval`` builds the model, runs ``amp.initialize`` and calls ``train(...)`` each epoch):
    training setup, whatever their name says."""
    trainers = {fn.name for fn in functions if training_lines.get(id(fn))}
    if not trainers:
        return set()
    calls = {}
    for fn in functions:
        called = set()
        for call in ast.walk(fn):
            if isinstance(call, ast.Call):
                f = call.func
                called.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) and
                           isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr not in ("train", "eval")
                           else None)  # (``self.train()`` in a module's method switches its mode)
        calls[id(fn)] = (fn.name, called)
    out, grew = set(), True
    while grew:
        grew = False
        for name, called in calls.values():
            if name not in out and name not in trainers and called & (trainers | out):
                out.add(name)
                grew = True
    return out


def _role(node: ast.Call, sig: Signal, parents: _Parents, owner, path: str, trains: bool,
          training_lines: Dict[int, List[int]], imports: ImportTable, script: bool,
          training_helpers: frozenset = frozenset(), stepping: bool = False):
    """The role of a piece of evidence, and why. ``stepping``: a function of the file steps an optimizer, so
    evidence in a function that trains (runs the step, or is called by or calls what does) is training in a
    file named for evaluation too (the "evaluation protocols" of DINO / iBOT / BEiT fine-tune the whole model
    in ``eval_cls.py``: autocast and GradScaler in ``train_one_epoch``, M13-1)."""
    fn = owner(node)
    names = []
    trained = set()  # functions named for evaluation that run a training step or that training calls
    for p in parents.chain(node):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(p.name)
            if not isinstance(p, ast.ClassDef) and (training_lines.get(id(p)) or p.name in training_helpers):
                trained.add(p.name)
        if isinstance(p, (ast.With, ast.AsyncWith)):
            for item in p.items:
                call = item.context_expr
                if isinstance(call, ast.Call):
                    q = imports.resolve(_dotted(call.func) or "")
                    if q in _NO_GRAD or (q == "torch.set_grad_enabled" and call.args and _truthy(call.args[0]) is False):
                        return INFERENCE, f"under `{_dotted(call.func)}()`"
    for p in (fn, *(x for x in parents.chain(node) if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef)))):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in p.decorator_list:
                q = imports.resolve(_dotted(d.func if isinstance(d, ast.Call) else d) or "")
                if q in _NO_GRAD:
                    return INFERENCE, f"in `{p.name}`, decorated with `{q}`"
    if sig.kind == "flag" and sig.note.startswith("command line"):
        helps = [k.value.value for k in node.keywords if k.arg == "help" and isinstance(k.value, ast.Constant)
                 and isinstance(k.value.value, str)]
        if helps and _INFERENCE_HELP.search(helps[0]):
            return INFERENCE, "a command-line flag for inference (its help text)"
    for name in names:
        if name.startswith("test_") or name.startswith("Test"):
            return TEST, f"in test `{name}`"
        if _BENCHMARK.search(name):
            return BENCHMARK, f"in `{name}`"
        if _EXPORT_FUNCTION.search(name) and sig.kind == "half_params":
            return EXPORT, f"in `{name}`"
        if _INFERENCE_FUNCTION.search(name) and name not in trained:
            # (vits' ``train_and_evaluate`` runs backward and the optimizer step itself)
            return INFERENCE, f"in `{name}`"
    if _benchmark_file(path):
        return BENCHMARK, "in a benchmark script"
    if _EXPORT_FILE.search(path) and sig.kind == "half_params":
        return EXPORT, "in an export / conversion script"
    # (a script training at module level, Chinese-Vicuna's chatglm_lora_finetune.py: its module-level evidence is the
    # training's, whatever the name says, P22-6)
    if (_INFERENCE_FILE.search(path) or _INFERENCE_DIR.search(path)) \
            and not (stepping and (trained or fn is None and training_lines.get(0))):
        return INFERENCE, "in an inference / evaluation script"
    if sig.kind == "half_params" and not trains and (fn is None or script) and "wrapper" not in sig.note:
        # a script that casts a model to half and never trains it; a function of a module that
        # does not train is judged by who reaches it (``build_model(cfg)`` called by train.py)
        return INFERENCE, NEVER_TRAINS
    if sig.kind == "half_params" and fn is not None and not training_lines.get(id(fn)) and _saves_after(fn, node):
        return EXPORT, f"a half copy saved by `{fn.name}`"
    own = _own_cast(node, sig, parents)
    if own is not None:
        return MODULE, own
    steps = training_lines.get(id(fn) if fn is not None else 0)
    if steps and node.lineno > max(steps) and not _inside_loop_with(node, parents, steps):
        return INFERENCE, "after the last backward / optimizer step"
    return TRAINING, ""


def _own_cast(node: ast.Call, sig: Signal, parents: _Parents) -> Optional[str]:
    """``self.half()`` / ``self.bfloat16()`` / ``self.to(torch.float16)`` in a method of a class: the module
    casts its own parameters. NeMo's ``ParallelLinearAdapter.__init__`` does ``elif config.fp16: self.half()``
    to match a host model that Megatron's O2 already keeps in half with fp32 master weights: it says what the
    adapter's instances hold, not the precision of the model the program trains (nor that of every file
    the program reaches)."""
    if sig.kind != "half_params" or not isinstance(node.func, ast.Attribute):
        return None
    receiver = _cast_receiver(node)
    if not (isinstance(receiver, ast.Name) and receiver.id == "self"):
        return None
    chain = [p for p in parents.chain(node) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if len(chain) < 2 or not isinstance(chain[1], ast.ClassDef) or isinstance(chain[0], ast.ClassDef):
        return None
    return (f"`self.{node.func.attr}()` in `{chain[1].name}.{chain[0].name}`: the module casts its own parameters "
            f"(what its instances hold), not the model a program trains")


def _inside_loop_with(node: ast.AST, parents: _Parents, steps: List[int]) -> bool:
    """Is ``node`` inside a loop that also holds a training step (the step's own loop)?"""
    for p in parents.chain(node):
        if isinstance(p, (ast.For, ast.While, ast.AsyncFor)):
            end = getattr(p, "end_lineno", None) or p.lineno
            if any(p.lineno <= s <= end for s in steps):
                return True
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
    return False


def _saves_after(fn: ast.AST, node: ast.AST) -> bool:
    """Does ``fn`` save or export something after ``node`` (``model.half(); model.save(path)``), with
    no training between? LLaVA's ``model.to(torch.float16)`` before ``trainer.train()`` and
    ``trainer.save_model()`` is the dtype the model trains in, not a half copy for the checkpoint."""
    calls = sorted((c for c in ast.walk(fn) if isinstance(c, ast.Call) and c.lineno >= node.lineno),
                   key=lambda c: (c.lineno, c.col_offset))
    for call in calls:
        f = call.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if _trains_here(f, name):
            return False
        if ("save" in name.lower() or "export" in name.lower()) and not _TRAINER_CLASS.search(name):
            # (MedicalGPT's ``SavePeftModelTrainer(model=model, ...)`` builds the trainer: it saves nothing)
            return True
    return False


def _trains_here(func: ast.AST, name: str) -> bool:
    """A call that trains: ``trainer.train()`` / ``engine.fit(...)``, or a function ``train(...)``."""
    if isinstance(func, ast.Attribute):
        receiver = (_dotted(func.value) or "").rsplit(".", 1)[-1]
        return name == "fit" or (name == "train" and bool(re.search(r"(?i)trainer|engine|runner", receiver)))
    return bool(re.match(r"(?i)^train(_\w+)?$", name))
