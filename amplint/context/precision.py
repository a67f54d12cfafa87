"""The precision model: what dtype an expression has at its line.

A small per-function dataflow over local names with the lattice {float16, bfloat16, float32,
unknown}, following CUDA's autocast policy (amplint.torch_api.autocast) inside autocast regions:
lower-precision ops produce the autocast dtype, fp32-list ops produce float32, promote ops widen,
every other op keeps its input's dtype, binary operators promote, explicit casts give what they
say. Where values come from when nothing local says so:

- parameters of functions that run under fp16 autocast (forward and helpers) are float16 when the
  project's regime is fp16-mixed ("likely"); under pure half every floating tensor is float16;
- outputs of nn layers and of nn.Module calls are the autocast dtype under autocast;
- ``self.x`` attributes are resolved from ``__init__``.

Rules ask ``precision_model(ctx).dtype_of(expr)``, ``autocast_at(node)`` and ``fp16_status(node)``;
they never re-derive dtypes themselves. Names are resolved by the file's semantic model
(``ctx.semantic``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..torch_api import autocast as autocast_ops
from ..torch_api import grad_mode
from ..torch_api import distributions as torch_distributions
from ..torch_api import hf_models
from .autocast_helpers import without_autocast_branch
from .definitions import definition_of
from .devices import on_cpu_branch
from .callers import mapped_callback
from .literal_paths import call_skips_path, path_needs
from .evidence import BFLOAT16_NAMES, FLOAT16_NAMES, FLOAT32_NAMES, _looks_like_model, autocast_device
from .file_context import Evidence, FileContext

# Other files parsed to ask whether their calls of a method run in model code (each costs a parse).
MAX_OTHER_FILES = 8

F16, BF16, F32 = "float16", "bfloat16", "float32"
# Complex tensors: CUDA autocast casts floating-point tensors only, so they keep their dtype under
# autocast, and whatever they touch is complex (or, through abs / real / view_as_real, float32).
COMPLEX = "complex64"
_TO_COMPLEX = {"view_as_complex", "complex", "polar", "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn",
               "rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}
_COMPLEX_TO_REAL = {"abs", "angle", "view_as_real", "real", "imag"}
# Conjugation: a no-op on a real tensor, written only for complex ones (a beamformer's ``W.conj()``).
_CONJUGATES = {"conj", "conj_physical", "resolve_conj"}
_COMPLEX_DTYPES = {"torch.complex64", "torch.cfloat", "torch.complex128", "torch.cdouble", "torch.complex32",
                   "torch.chalf"}
CERTAIN, LIKELY = "certain", "likely"
_LOSS_NAME = re.compile(r"(?i)loss|criterion|objective")


@dataclass(frozen=True)
class DTypeFact:
    dtype: Optional[str]  # float16 | bfloat16 | float32 | None (unknown, or not a tensor)
    confidence: str = LIKELY
    why: str = ""  # how the model got there, for messages
    evidence: Optional[Evidence] = None  # the region / regime evidence behind it
    # float16 only because the regime takes the tensor arguments of code under fp16 autocast to be
    # activations (no caller says): a value that code then moves to a device is input data instead.
    assumed: bool = False

    @property
    def is_half(self) -> bool:
        return self.dtype == F16

    def explain(self) -> str:
        parts = [p for p in (self.why, f"({self.evidence})" if self.evidence else "") if p]
        return " ".join(parts)


UNKNOWN = DTypeFact(None)


@dataclass(frozen=True)
class AutocastState:
    active: bool
    dtype: Optional[str] = None
    confidence: str = LIKELY
    evidence: Optional[Evidence] = None
    # "cuda", "cpu", ...; None when not known (regime evidence, a device that is not a literal):
    # assume cuda. CPU autocast has shorter op lists and does not ban binary_cross_entropy.
    device: Optional[str] = None


NOT_AUTOCAST = AutocastState(False)


@dataclass(frozen=True)
class Fp16Status:
    """Whether code at a node runs with float16 activations, how sure we are, and why."""
    fp16: bool
    confidence: str  # "certain" | "likely"
    evidence: Optional[Evidence]

# Module methods that return the module itself (``Net().cuda().eval()`` is still the Net built).
_SAME_MODULE_METHODS = {"cuda", "cpu", "to", "eval", "train", "float", "half", "bfloat16", "double",
                        "requires_grad_", "to_empty", "share_memory"}
_CASTS = {"float": F32, "double": F32, "half": F16, "bfloat16": BF16}
_SCALAR_METHODS = {"item", "tolist", "size", "numel", "dim", "nelement", "element_size", "__len__",
                   "stride", "data_ptr", "get_device", "is_contiguous", "any", "all"}
_SCALAR_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "grad_fn", "layout"}
_VIEW_ATTRS = {"T", "mT", "H", "mH", "data", "real", "imag", "grad"}
_CONSTRUCTORS = {"zeros", "ones", "empty", "full", "randn", "rand", "tensor", "arange", "linspace",
                 "logspace", "eye", "as_tensor", "from_numpy", "randint", "normal"}
# Reshapes and views: what they return has their input's dtype (``_reshapes``).
_RESHAPE_METHODS = {"view", "reshape", "transpose", "permute", "contiguous", "unsqueeze", "squeeze", "flatten",
                    "unflatten", "expand", "repeat", "movedim", "swapaxes", "chunk", "split", "narrow"}
_EINOPS_RESHAPES = {"einops.rearrange", "einops.repeat"}
# Scatter reductions of graph libraries: their result has the dtype of what they scatter, the first
# argument (torch_scatter's ``scatter_sum``: ``torch.zeros(size, dtype=src.dtype, ...).scatter_add_(dim,
# index, src)``; torch_geometric.utils.scatter: ``src.new_zeros(size).scatter_add_(...)`` for "sum", and
# "mean" divides that by counts of the same dtype); scatter_add_ is on no autocast list.
_SCATTERS = {"torch_geometric.utils.scatter", "torch_scatter.scatter", "torch_scatter.scatter_add",
             "torch_scatter.scatter_sum", "torch_scatter.scatter_mean", "torch_geometric.utils.scatter.scatter"}
_RESHAPE_FUNCTIONS = {"einops.rearrange", "einops.repeat", "torch.transpose", "torch.reshape", "torch.permute",
                      "torch.flatten", "torch.unsqueeze", "torch.squeeze", "torch.movedim"}


def _reshapes(ctx, body: cst.BaseExpression, param: str) -> bool:
    """Is ``body`` a chain of reshapes / views of the name ``param`` (``rearrange(t, ...)``,
    ``t.view(b, n, h, -1).transpose(1, 2)``)?"""
    while True:
        if isinstance(body, cst.Name):
            return body.value == param
        if not isinstance(body, cst.Call):
            return False
        func = body.func
        if isinstance(func, cst.Attribute) and func.attr.value in _RESHAPE_METHODS and \
                ctx.call_name(body) not in _RESHAPE_FUNCTIONS:
            body = func.value
            continue
        if ctx.call_name(body) in _RESHAPE_FUNCTIONS and body.args and body.args[0].keyword is None:
            body = body.args[0].value
            continue
        return False


# Elementwise functions that keep a 0-dim tensor 0-dim (``torch.sqrt(torch.tensor(d))``).
_ZERO_DIM_ELEMENTWISE = {"sqrt", "rsqrt", "log", "exp", "abs", "reciprocal", "pow", "clamp", "neg"}
_LIKE = {"zeros_like", "ones_like", "empty_like", "full_like", "randn_like", "rand_like"}
# Sparse constructors: the position of their values, whose dtype the tensor has (the indices are integers).
_SPARSE_VALUES = {"sparse_coo_tensor": 1, "sparse_csr_tensor": 2, "sparse_csc_tensor": 2}
_NEW = {"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
# Parameter names that are conventionally numbers, not tensors.
_SCALAR_PARAM = re.compile(
    r"^(self|cls|n|i|j|num|num_.*|.*_num|count|.*_count|n_.*|steps?|.*_steps?|size|.*_size|"
    r"dims?|.*_dims?|axis|eps|epsilon|.*_eps|temperature|tau|alpha|beta|gamma|lr|.*_rate|rate|scale|"
    r".*_scale|factor|.*_factor|idx|index|.*_idx|epoch|iteration|iter|it|step|training|inplace|"
    r"p|dropout|.*_dropout|momentum|weight_decay|reduction|mode|name|.*_name|verbose|device|dtype|"
    r"margin|threshold|.*_threshold|smoothing|label_smoothing|ignore_index|top_k|topk|k_.*|"
    r"max_.*|min_.*|.*_len|length|seq_len|batch_size|bsz|heads|num_heads|head_dim|.*_ratio|ratio)$")


# Classes whose methods are model code, and helper functions that are, by name.
_MODULE_BASE = re.compile(r"(Module|Model|Layer|Attention|Block|Net|Encoder|Decoder|Head|Loss|Criterion)\w*$")
# torchmetrics' Metric (also pytorch_lightning.metrics' before 1.3) is an nn.Module whose forward runs
# update() and compute(): called in a training step (``metric(preds, target)``), they run under its autocast
_METRIC_BASE = re.compile(r"(torchmetrics|pytorch_lightning\.metrics|lightning\.pytorch\.metrics)(\.\w+)*\.Metric$")
_DATA_PATH = re.compile(r"(^|/)(data|datasets?|dataloaders?|preprocess\w*|tools)(/|$)")
# what returns a function that runs the one it is given: calling the result calls it
_COMPILERS = {"torch.jit.script", "torch.compile"}
_LOOP_FUNCTION = re.compile(r"(?i)^(main|run|fit|train|evaluate|eval|validate|test|predict|infer|inference)(_|$)|"
                            r"(_|^)(loop|epoch|step)$")
_MODEL_HELPER = re.compile(r"(?i)loss|nll|attention|attn|logit|contrastive|similarity|focal|dice|entropy|forward|"
                           r"normali[sz]e|softmax|sigmoid|bce|kl_div|score")


# Methods only tensors have, besides the ops of autocast's lists (``_surely_tensor``).
_TENSOR_METHODS = {"sigmoid", "tanh", "relu", "exp", "log", "sqrt", "rsqrt", "abs", "clamp", "clamp_min",
                   "clamp_max", "detach", "contiguous", "view", "unsqueeze", "squeeze", "permute", "flatten"}
# Methods and torch functions that give a boolean or integer tensor (``not_floating``).
_NOT_FLOATING_METHODS = {"bool", "long", "int", "byte", "short", "char", "eq", "ne", "lt", "le", "gt", "ge",
                         "logical_not", "logical_and", "logical_or", "logical_xor", "isnan", "isinf", "isfinite",
                         "argmax", "argmin", "argsort", "nonzero"}
_NOT_FLOATING_FUNCTIONS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
                           "logical_xor", "isnan", "isinf", "isfinite", "argmax", "argmin", "argsort", "nonzero",
                           "randint", "randperm", "bucketize", "searchsorted"}


# Layers with weights: under half weights they compute in float16 whatever their input's dtype.
_WEIGHTED_LAYER = re.compile(r"^(Linear|Bilinear|LazyLinear|Conv\w*|LazyConv\w*|Embedding|EmbeddingBag)$")


# Tensor parameters that are conventionally boolean or integer (masks, token ids, labels, lengths):
# not float16 even in a pure-half project (``mask.sum() + 1e-8`` of a bool mask is float32).
_INDEX_PARAM = re.compile(r"^(.*_)?(mask|masks|ids|labels?|indices|lengths?|lens)$")
_ATTENTION_MASK = re.compile(r"(?i)attn|attention|key_padding|causal|bias")
# An argument named as a mask (``attention_mask_l``, ``key_padding_mask``), whatever its annotation:
# under fp16 autocast it is input data (bool / int / float32 from the tokenizer or the data pipeline),
# never an autocast output, so it is not assumed float16 (mmdet's GLIP fusion fills its text mask).
# (a suffix of one or two letters only: ``mask_logits`` / ``mask_pred`` are a mask head's activations)
_MASK_ARGUMENT = re.compile(r"(?i)(^|_)masks?(_[a-z0-9]{1,2})?$")
# An argument named as a recording (``audio``, ``wavs``, ``waveform``): the input a feature extractor
# frames and transforms, data from the loader, which autocast never casts (speechbrain's
# VocalFeatures.forward(audio) -> compute_periodic_features(frames)); float32 under fp16 autocast.
# Lightning's step hooks: their first argument is what the data loader gives (input data, which
# autocast does not cast), not an activation
_STEP_HOOKS = {"training_step", "validation_step", "test_step", "predict_step"}
_WAVEFORM_ARGUMENT = re.compile(r"(?i)^(raw_)?(audio|audios|wav|wavs|waveform|waveforms|speech)$")


# A loop over a data loader binds input data (``for x, y in train_loader:``): the loader's class, a name
# or attribute named for one, and the wrappers a loop puts around it.
_DATA_LOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_LOADER_NAME = re.compile(r"(?i)(^|_)(data_?)?loaders?$")
_LOOP_WRAPPERS = {"enumerate", "tqdm", "iter", "trange"}


# (file, function, parameter) whose callers are being asked: a cycle of helpers ends there.
_ASKING: set = set()
# How many answers were cut short so far (a cycle of helpers or of a file's own values, the depth
# limit): an answer computed while none was is the same whoever asks, and is kept for the run.
_CUTS = [0]
# The functions whose calls are being asked whether they run outside autocast (a depth bound).
_OUTSIDE_ASKING: List[cst.FunctionDef] = []
# Modules whose functions are no project function's calls, whatever their last name.
_EXTERNAL_MODULES = {"torch", "numpy", "np", "math", "einops", "scipy", "F", "nn", "jax", "tf", "os", "cv2", "PIL"}
_PENDING = DTypeFact(None)  # a value whose dtype is being worked out (a cycle ends there, unknown)
# Answers a cut made (``_CUTS``): kept while the outermost question that led to them is being answered
# (so that a cycle is worked out once), then dropped, so that the next question works them out again
# from where it starts: an answer then never depends on which question came first (the rules a run
# selects, the order they ask in). (model, expr) for each, and how deep the questions are nested.
_TENTATIVE: List[Tuple["PrecisionModel", cst.CSTNode]] = []
_OUTERMOST = [0]
# The same for a file's cached answers that ask dtypes (``_guarded``): (cache, key) kept for the
# question under way, and the ids of those and of the ones being worked out (reading one is a cut).
_TENTATIVE_CACHED: List[Tuple[dict, object]] = []
_UNSURE: set = set()


def _flush() -> None:
    """The outermost question is answered: drop what cuts made on the way to it."""
    for model, node in _TENTATIVE:
        model._tentative.pop(node, None)
    _TENTATIVE.clear()
    for cache, key in _TENTATIVE_CACHED:
        cache.pop(key, None)
        _UNSURE.discard((id(cache), key))
    _TENTATIVE_CACHED.clear()


def _guarded(cache: dict, key, placeholder, compute):
    """``cache[key]``, worked out by ``compute()`` the first time (``placeholder`` while it is: a
    cycle through it ends there). Reading an answer being worked out, or one a cut made, is a cut;
    an answer a cut made is kept only for the question under way (``_flush``)."""
    tag = (id(cache), key)
    if key in cache:
        if tag in _UNSURE:
            _CUTS[0] += 1
        return cache[key]
    cache[key] = placeholder
    _UNSURE.add(tag)
    _OUTERMOST[0] += 1
    cuts = _CUTS[0]
    done = False
    try:
        value = compute()
        done = True
    finally:
        _OUTERMOST[0] -= 1
        if not done:
            cache.pop(key, None)
            _UNSURE.discard(tag)
    cache[key] = value
    if _CUTS[0] == cuts:
        _UNSURE.discard(tag)
    else:
        _TENTATIVE_CACHED.append((cache, key))
    if not _OUTERMOST[0]:
        _flush()
    return value


@dataclass(frozen=True)
class _Heard:
    """What one call passes for a parameter, as ``_from_callers`` weighs it: ``line`` (the call's)
    is read only for a float16 value, ``where`` (the calling function) only for a known tensor dtype.
    For a call in another file both are written out, so that nothing of that file's tree is kept."""
    fact: DTypeFact
    known: bool
    path: str
    line: object  # int, or a function giving it
    where: object  # str, or a function giving it
    dead: object = False  # bool, or a function giving it: is the call in a method nothing calls (asked of a float16 value)


def _dead(heard: "_Heard") -> bool:
    return heard.dead() if callable(heard.dead) else heard.dead


def _line(heard: "_Heard") -> int:
    return heard.line() if callable(heard.line) else heard.line


def _where(heard: "_Heard") -> str:
    return heard.where() if callable(heard.where) else heard.where


def args_positional(call: cst.Call) -> List[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


_PREDICTION_KEY = re.compile(r"(?i)logit|pred|score")


def _string_keyed(e: cst.Subscript) -> bool:
    """``x["key"]``: an index only a mapping takes (a tensor takes numbers, slices, masks)."""
    return len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index) \
        and isinstance(e.slice[0].slice.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def entry_key(e: cst.Subscript) -> Optional[str]:
    """``"hm"`` of ``d["hm"]``."""
    if not _string_keyed(e):
        return None
    value = e.slice[0].slice.value  # type: ignore[attr-defined]
    key = value.evaluated_value if isinstance(value, cst.SimpleString) else None
    return key if isinstance(key, str) else None


def _literal_entry(ctx: FileContext, value: cst.BaseExpression, key: str) -> Optional[cst.BaseExpression]:
    """The value under ``key`` of a dict literal (``{"hm": x}``, ``dict(hm=x)``); None otherwise."""
    found = None
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.StarredDictElement):
                found = None  # ``{**other, ...}``: an entry may come from ``other``
            elif isinstance(element.key, cst.SimpleString) and element.key.evaluated_value == key:
                found = element.value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" \
            and not ctx.imports.binds("dict") and not any(a.star for a in value.args):
        found = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == key), None)
    return found


def _widest_passed(heard: List["_Heard"], name: str, fn: cst.FunctionDef, how: str) -> "DTypeFact":
    """The widest dtype the known, non-float16 values ``heard`` pass for ``name`` (UNKNOWN when none is a
    tensor), said with where one of them is passed (``how``, with ``{where}`` for its place)."""
    tensors = [h for h in heard if h.fact.dtype is not None]
    if not tensors:
        return UNKNOWN
    widest = _widest([h.fact for h in tensors])
    h = next(h for h in tensors if h.fact.dtype == widest.dtype)
    where = f"{_where(h)} in {h.path}"
    return DTypeFact(widest.dtype, LIKELY, f"`{name}` of `{fn.name.value}` is passed {widest.dtype} "
                                           + how.format(where=where))


def _only_raises(body: cst.BaseSuite) -> bool:
    stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return len(stmts) == 1 and isinstance(stmts[0], cst.SimpleStatementLine) \
        and len(stmts[0].body) == 1 and isinstance(stmts[0].body[0], cst.Raise)


def _widest(facts: List[DTypeFact]) -> DTypeFact:
    known = [f for f in facts if f.dtype is not None]
    if not known:
        return UNKNOWN
    dtypes = {f.dtype for f in known}
    if COMPLEX in dtypes:
        return next(f for f in known if f.dtype == COMPLEX)
    if F32 in dtypes or (F16 in dtypes and BF16 in dtypes):
        return next(f for f in known if f.dtype == F32) if F32 in dtypes else DTypeFact(F32, LIKELY)
    f = known[0]
    # A half value combined with something unknown (a scalar or a tensor of unknown dtype) is
    # likely still half: Python scalars do not promote a tensor's dtype.
    conf = CERTAIN if len(known) == len(facts) and all(k.confidence == CERTAIN for k in known) else LIKELY
    return DTypeFact(f.dtype, conf if conf == LIKELY else f.confidence, f.why, f.evidence,
                     all(k.assumed for k in known))


class PrecisionModel:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._memo: Dict[cst.CSTNode, DTypeFact] = {}
        self._tentative: Dict[cst.CSTNode, DTypeFact] = {}  # answers a cut made, for the question under way
        self._depth = 0
        self._buffers: Dict[cst.ClassDef, Dict[str, List[cst.BaseExpression]]] = {}

    def model_for(self, ctx: FileContext) -> "PrecisionModel":
        """The precision model of another file's context (what a caller in that file passes)."""
        return precision_model(ctx)

    # ---- autocast ---------------------------------------------------------------------------
    def fp16_status(self, node: cst.CSTNode) -> Fp16Status:
        """Does code at ``node`` run with float16 activations? Lexical autocast regions decide
        first (certain); otherwise the project's regime (likely)."""
        ctx = self.ctx
        region = ctx.region_of(node)
        if region is not None:
            if region.enabled and region.dtype == F16:
                return Fp16Status(True, CERTAIN, region.evidence)
            return Fp16Status(False, CERTAIN, region.evidence)
        regime = ctx.regime
        if regime is None:
            return Fp16Status(False, LIKELY, None)
        if regime.half_params is not None:
            return Fp16Status(True, LIKELY, regime.half_params)
        state = self.autocast_at(node)
        if state.active and state.dtype == F16:
            return Fp16Status(True, state.confidence, state.evidence)
        return Fp16Status(False, LIKELY, None)

    def autocast_at(self, node: cst.CSTNode) -> AutocastState:
        """Is autocast active at ``node``, with what dtype, and how sure are we?

        An enclosing autocast region decides (certain). Code in a function (or module) that opens
        autocast regions of its own but lies outside them is not under autocast. Otherwise, under
        an fp16-mixed project regime, functions are assumed to be called from the autocast region
        of the training step (forward and its helpers): likely.
        """
        ctx = self.ctx
        region = ctx.region_of(node)
        if without_autocast_branch(ctx, node):
            return AutocastState(False, None, CERTAIN)
        if region is not None:
            if region.enabled and region.dtype in (F16, BF16):
                return AutocastState(True, region.dtype, CERTAIN, region.evidence, self._region_device(region))
            return AutocastState(False, None, CERTAIN, region.evidence)
        fn = ctx.enclosing_function(node)
        if self._scopes_autocast(fn):
            return NOT_AUTOCAST
        if fn is not None and self._held_by_datasets(ctx.enclosing_class(fn)):
            return NOT_AUTOCAST
        off = self._called_without_autocast(fn) if fn is not None else None
        if off is not None:
            return AutocastState(False, None, LIKELY, off)
        regime = ctx.regime
        if regime is None or not self.model_code(fn):
            return NOT_AUTOCAST
        if regime.fp16_autocast is not None and regime.half_params is None:
            state = AutocastState(True, F16, LIKELY, regime.fp16_autocast)
        elif regime.bf16 is not None and regime.fp16 is None:
            state = AutocastState(True, BF16, LIKELY, regime.bf16)
        else:
            return NOT_AUTOCAST
        # (where a launcher or a configured precision decides, its autocast is out of sight and the
        # code is judged as under any float16 use of it: only calls made where autocast is surely
        # off count then, the else of ``if torch.is_autocast_enabled():`` or ``autocast(enabled=False)``)
        if fn is not None and self.called_only_outside_autocast(
                fn, node, surely=regime.override is not None or regime.launcher is not None):
            return NOT_AUTOCAST
        return state

    def called_only_outside_autocast(self, fn: cst.FunctionDef, node: Optional[cst.CSTNode] = None,
                                     surely: bool = False) -> bool:
        """Is every call of the module-level function ``fn`` seen, in this file and in the project's
        other files (by its name: ``math_utils.intersect_aabb(...)``, ``intersect_aabb(...)`` after
        an import), made where autocast is off? Then ``fn`` runs without autocast, whatever the
        regime: autocast is a property of the calls made inside its region and of what they reach
        (nerfstudio's ``intersect_aabb``, called from camera code). False when no call is seen, when ``fn`` is referenced other than by a
        call (a callback, a hook), and for methods: ``model.compute_loss(x)`` on a local or a
        parameter is a call the project's call graph does not hold, so a method's calls are never
        all seen (``module(x)`` runs ``forward`` without naming it). ``node``: a node of ``fn``; a
        call whose literal arguments send it past ``node``'s branch does not count (pytorch3d's
        ``calc_bce(p.logit(), gt, pred_logits=True)`` under autocast never reaches the
        ``F.binary_cross_entropy`` below ``if pred_logits: return ...``). ``surely``: only a call
        certainly made with autocast off counts as outside it (an autocast out of sight may cover
        the others)."""
        if self.ctx.parent(fn) is not self.ctx.module:
            return False
        needs = tuple(path_needs(self.ctx, node, fn)) if node is not None else ()
        key = ("called_outside", fn, needs, surely)
        cache = self.ctx._cache
        if key in cache:
            found = cache[key]
            if found is None:  # a cycle of callers: nothing said
                _CUTS[0] += 1
                return False
            return found  # type: ignore[return-value]
        if len(_OUTSIDE_ASKING) >= 4:
            _CUTS[0] += 1
            return False
        cache[key] = None
        cuts = _CUTS[0]
        _OUTSIDE_ASKING.append(fn)
        try:
            found = self._calls_outside_autocast(fn, needs, surely)
        finally:
            _OUTSIDE_ASKING.pop()
            del cache[key]
        if _CUTS[0] == cuts:
            cache[key] = found  # kept only when no cycle cut the answer short
        return found

    def _calls_outside_autocast(self, fn: cst.FunctionDef, needs=(), surely: bool = False) -> bool:
        ctx = self.ctx
        name = fn.name.value

        def may_autocast(model, call) -> bool:
            if needs and call_skips_path(ctx, fn, needs, call, model):
                return False
            state = model.autocast_at(call)
            return state.active or surely and state.confidence != CERTAIN

        if surely and not needs:
            return False  # nothing but a branch's test can say more than the launcher's autocast
        seen = self.seen_calls(fn)
        if seen is None:
            # no call names it: a function a decorator registers, called through the registry's lookup
            from .registries import registered_calls  # noqa: PLC0415 (asked of few functions)
            through = registered_calls(self, fn)
            return through is not None and not any(may_autocast(model, call) for model, call in through)
        here, elsewhere = seen
        if any(may_autocast(self, call) for call in here):
            return False
        for path, lines in elsewhere.items():
            other = ctx.other_file(path)
            if other is None:
                return False
            model = self.model_for(other)
            calls = [c for c in other.nodes(cst.Call) if (c.func.attr.value if isinstance(c.func, cst.Attribute) else
                                                          getattr(c.func, "value", None)) == name
                     and other.on_lines(c, lines)]
            if not calls or any(may_autocast(model, c) for c in calls):
                return False
        return True

    def seen_calls(self, fn: cst.FunctionDef, private_methods: bool = False,
                   public_methods: bool = False) -> Optional[Tuple[List[cst.Call], Dict[Path, set]]]:
        """Every call of the module-level function ``fn``: (this file's calls, other than its own
        recursion; the lines of the calls by its name in each other project file), or None when they
        may not all be seen: ``fn`` referenced other than by a call (a callback, a hook), a method,
        no call at all, or calls in more files than are read (``callers.MAX_FILES``).
        ``private_methods``: also a private method (``def _m(self, ...)``) of a module-level class
        whose name no other project file calls: by convention only its class calls it
        (``self._m(...)``), and this file is all there is to see; ``public_methods``: any method of
        such a class (not a dunder) whose name no other project file calls."""
        from .callers import MAX_FILES
        ctx = self.ctx
        if ctx.parent(fn) is not ctx.module:
            owner = ctx.enclosing_class(fn)
            name = fn.name.value
            if not (private_methods and owner is not None and ctx.parent(owner) is ctx.module
                    and ctx.parent(fn) is owner.body and not (name.startswith("__") and name.endswith("__"))
                    and (name.startswith("_") or public_methods)):
                return None
            seen = self._seen_calls(fn, 0)
            return seen if seen is not None and not seen[1] else None
        return self._seen_calls(fn, MAX_FILES)

    def _seen_calls(self, fn: cst.FunctionDef, max_files: int) -> Optional[Tuple[List[cst.Call], Dict[Path, set]]]:
        ctx = self.ctx
        name = fn.name.value
        here: List[cst.Call] = []
        spelled = ctx._cache.get("spelled")
        if spelled is None:  # identifier -> the Names and Attributes (by their last name) spelling it
            spelled = {}
            for node in ctx.nodes(cst.Name):
                spelled.setdefault(node.value, []).append(node)
            for node in ctx.nodes(cst.Attribute):
                spelled.setdefault(node.attr.value, []).append(node)
            ctx._cache["spelled"] = spelled
        for node in spelled.get(name, ()):  # type: ignore[union-attr]
            if isinstance(node, cst.Name) and isinstance(ctx.parent(node), cst.Attribute) \
                    and ctx.parent(node).attr is node:
                continue  # the ``attr`` Name of an Attribute: read as the Attribute
            parent = ctx.parent(node)
            if isinstance(node, cst.Name) and isinstance(parent, cst.FunctionDef) and parent.name is node:
                continue  # the def itself
            if not (isinstance(parent, cst.Call) and parent.func is node):
                return None  # referenced, not called: called where this file cannot see
            root = node
            while isinstance(root, cst.Attribute):
                root = root.value
            if isinstance(root, cst.Name) and ctx.imports.binds(root.value) and root is not node:
                continue  # ``F.normalize(x)``: another module's function of that name
            if ctx.enclosing_function(parent) is not fn:
                here.append(parent)
        elsewhere: Dict[Path, set] = {}
        project = ctx.project
        if project is not None and hasattr(project, "calls_named") and ctx.imports.module_name:
            mine = Path(ctx.path).resolve()
            for site in project.calls_named(name):
                if site.path != mine and site.callee.split(".", 1)[0] not in _EXTERNAL_MODULES:
                    elsewhere.setdefault(site.path, set()).add(site.line)
        if not here and not elsewhere or len(elsewhere) > max_files:
            return None
        return here, elsewhere

    def gradient_flows(self, node: cst.CSTNode) -> bool:
        """Can a backward pass run through ``node``? Not inside ``with torch.no_grad()`` /
        ``inference_mode()`` / ``set_grad_enabled(False)`` or a function decorated with them, and
        not where the regime knows of no backward through this code (``Regime.backward_known``:
        library code under any float16 use, files no training entry point reaches). A lone snippet
        (no regime): yes."""
        ctx = self.ctx
        regime = ctx.regime
        if regime is not None and not getattr(regime, "backward_known", True) and not self._loss_code(node):
            return False
        for a in ctx.ancestors(node):
            if isinstance(a, cst.With) and any(self._grad_off(item.item) for item in a.items):
                return False
            if isinstance(a, cst.FunctionDef) and any(self._grad_off(d.decorator) for d in a.decorators):
                return False
        return True

    def half_unsupported_call(self, fn: Optional[cst.FunctionDef]) -> Optional[cst.Call]:
        """A call in ``fn``, on every path through it, of an op with no float16 kernel
        (``torch.linalg.inv``, ``.inverse()``, svd, solve, ...: ``grad_mode.NO_HALF``) whose input is
        float16 here, or of a helper of this file that makes one: ``fn`` raises before it returns
        whenever it runs in float16 (autocast casts none of those ops), so no float16 value it
        computes is ever used. None if there is none."""
        if fn is None:
            return None
        return next((call for call in self._unconditional_calls(fn) if self._raises_in_half(call)), None)

    def raised_in_half_before(self, node: cst.CSTNode) -> Optional[cst.Call]:
        """A call before ``node`` in its function that raises whenever the function runs in float16
        (see ``half_unsupported_call``): code after it runs only in float32 (pytorch3d's
        ``efficient_pnp``, whose ``torch.linalg.eigh`` comes before its ``_reproj_error(y_hat, y)``
        call). None if there is none."""
        ctx = self.ctx
        fn = ctx.enclosing_function(node)
        if fn is None:
            return None
        at = ctx.order(node)
        for call in self._unconditional_calls(fn):
            if ctx.order(call) >= at:
                return None
            if not ctx.is_ancestor(call, node) and self._raises_in_half(call):
                return call
        return None

    def passed_dtype(self, call: cst.Call, value: cst.BaseExpression) -> DTypeFact:
        """The dtype of what ``call`` (of this file) passes as ``value``: not float16 when the calling
        function has already raised in float16 before the call (``raised_in_half_before``), or is
        itself called only so (``only_called_in_float32``)."""
        fact = self.dtype_of(value)
        if fact.is_half:
            raised = self.raised_in_half_before(call)
            if raised is not None:
                return DTypeFact(F32, LIKELY, f"`{self.ctx.code(raised.func)}` before this call has no float16 kernel")
            caller = self.ctx.enclosing_function(call)
            if caller is not None and self.only_called_in_float32(caller):
                return DTypeFact(F32, LIKELY, f"`{caller.name.value}` is called only where float16 has raised before")
        return fact

    def only_called_in_float32(self, fn: cst.FunctionDef) -> bool:
        """Is every call of the private helper ``fn`` (all seen, in this file) made after its caller
        has raised in float16 (``raised_in_half_before``), or by such a helper itself? Then ``fn``
        never runs in float16 (pytorch3d's ``_compute_norm_sign_scaling_factor``, called only after
        ``efficient_pnp``'s eigh)."""
        name = fn.name.value
        if not name.startswith("_") or name.endswith("__") or not self._calls_ops_without_half():
            return False
        cache = self.ctx._cache
        key = ("only_called_in_float32", fn)

        def compute() -> bool:
            seen = self.seen_calls(fn, private_methods=True)
            return seen is not None and not seen[1] and all(
                self.raised_in_half_before(c) is not None
                or self.ctx.enclosing_function(c) is not None
                and self.only_called_in_float32(self.ctx.enclosing_function(c)) for c in seen[0])
        return _guarded(cache, key, False, compute)  # (recursion through mutual calls: False)

    def _unconditional_calls(self, fn: cst.FunctionDef) -> List[cst.Call]:
        """The calls ``fn`` makes on every path through it (not in a branch, loop, ``try``, nested
        function or short-circuit), in order; none in a file that calls no op without a float16
        kernel (the cheap test first)."""
        ctx = self.ctx
        cache = ctx._cache
        if not self._calls_ops_without_half():
            return []
        key = ("unconditional_calls", fn)
        if key not in cache:
            calls = []
            for call in ctx.nodes(cst.Call):
                if not ctx.is_ancestor(fn, call):
                    continue
                for a in ctx.ancestors(call):
                    if a is fn:
                        calls.append(call)
                        break
                    if isinstance(a, (cst.If, cst.IfExp, cst.For, cst.While, cst.Try, cst.FunctionDef, cst.Lambda,
                                      cst.BooleanOperation, cst.ListComp, cst.SetComp, cst.DictComp,
                                      cst.GeneratorExp)):
                        break
            cache[key] = calls
        return cache[key]  # type: ignore[return-value]

    def _calls_ops_without_half(self) -> bool:
        """Does this file call an op with no float16 kernel at all, or one that writes a tensor into another
        of the same dtype only (by name: the cheap test first)?"""
        cache = self.ctx._cache
        if "no_half_candidates" not in cache:
            cache["no_half_candidates"] = any(self._no_half_operand(c) is not None or self._same_dtype_write(c)
                                              is not None for c in self.ctx.nodes(cst.Call))
        return cache["no_half_candidates"]  # type: ignore[return-value]

    def _raises_in_half(self, call: cst.Call) -> bool:
        """Does ``call`` raise when its function runs in float16: an op with no float16 kernel on a
        float16 input, or a helper of this file that always makes one (``_null_space``'s eigh)?"""
        cache = self.ctx._cache
        key = ("raises_in_half", call)

        def compute() -> bool:
            operand = self._no_half_operand(call)
            if operand is not None:
                return self.dtype_of(operand).is_half
            if self._mismatched_write(call):
                return True
            callee = self._callee(call)
            return callee is not None and callee is not self.ctx.enclosing_function(call) \
                and self.half_unsupported_call(callee) is not None
        return _guarded(cache, key, False, compute)  # (recursion through mutual calls: False)

    def _same_dtype_write(self, call: cst.Call) -> Optional[Tuple[str, cst.BaseExpression, cst.BaseExpression]]:
        """``(op, destination, source)`` if ``call`` writes a source tensor into a destination of the same
        dtype only (``grad_mode.SAME_DTYPE_WRITES``: ``dest.scatter_reduce_(dim, index, src, ...)``,
        ``torch.index_add(dest, dim, index, source)``)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in grad_mode.SAME_DTYPE_WRITES:
            return None
        op = func.attr.value
        position, keyword = grad_mode.SAME_DTYPE_WRITES[op]
        if any(a.star for a in call.args):
            return None
        positional = [a.value for a in call.args if a.keyword is None]
        name = self.ctx.call_name(call)
        if name is not None and name.startswith("torch.") and name == f"torch.{op}":
            dest: Optional[cst.BaseExpression] = positional.pop(0) if positional else None
        elif isinstance(func.value, cst.Name) and self.ctx.imports.binds(func.value.value):
            return None  # another module's function of that name (torch_scatter.scatter)
        else:
            dest = func.value
        source = positional[position] if len(positional) > position else next(
            (a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
        if dest is None or source is None:
            return None
        return op, dest, source

    def mismatched_write(self, call: cst.Call) -> Optional[Tuple[str, cst.BaseExpression, DTypeFact,
                                                                 cst.BaseExpression, DTypeFact]]:
        """``(op, destination, its dtype, source, its dtype)`` when ``call`` writes a float16 tensor into one of
        another floating dtype, or the reverse (``torch.zeros_like(<float16 conv output>).scatter_reduce_(1,
        index, src=<autocast's float32 exp>)``). Such a write raises ("scatter(): Expected self.dtype to be
        equal to src.dtype"), so the function raises whenever it runs in float16 (glue-factory's GlueStick
        under ``--mp float16``). None where autocast promotes the op (the out-of-place ``scatter_add`` /
        ``index_put``), where either dtype is not known, and for complex tensors."""
        write = self._same_dtype_write(call)
        if write is None:
            return None
        op, dest, source = write
        if autocast_ops.policy(op) == "promote" and self.autocast_at(call).active:
            return None
        a, b = self.dtype_of(dest), self.dtype_of(source)
        if a.dtype is None or b.dtype is None or a.dtype == b.dtype or F16 not in (a.dtype, b.dtype) \
                or COMPLEX in (a.dtype, b.dtype):
            return None
        return op, dest, a, source, b

    def _mismatched_write(self, call: cst.Call) -> bool:
        return self.mismatched_write(call) is not None

    def _no_half_operand(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The input of ``call`` if it is an op with no float16 kernel (``grad_mode.NO_HALF``)."""
        ctx = self.ctx
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if ctx.call_name(call) in grad_mode.NO_HALF:
            return positional[0] if positional else None
        if isinstance(func, cst.Attribute) and func.attr.value in grad_mode.NO_HALF_METHODS \
                and not (isinstance(func.value, cst.Name) and ctx.imports.binds(func.value.value)):
            return func.value
        return None

    def _loss_code(self, node: cst.CSTNode) -> bool:
        """``node`` lies in a loss (a function or class named so, or a loss module): what a backward
        starts from, whoever calls it (speechbrain's ``stoi_loss``, used by recipes outside the package)."""
        for a in self.ctx.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.ClassDef)) and _LOSS_NAME.search(a.name.value):
                return True
        return bool(_LOSS_NAME.search(Path(str(self.ctx.path)).stem))

    def _grad_off(self, expr: cst.BaseExpression) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()`` (not ``inference_mode(False)``),
        ``torch.set_grad_enabled(False)``, or a bare ``@torch.no_grad`` decorator."""
        call = expr if isinstance(expr, cst.Call) else None
        name = self.ctx.qualname(call.func if call is not None else expr)
        first = call.args[0].value if call is not None and call.args else None
        literal = first.value if isinstance(first, cst.Name) and first.value in ("True", "False") else None
        if name in grad_mode.NO_GRAD:
            return literal != "False"
        return name == "torch.set_grad_enabled" and literal == "False"

    def launcher_autocast_at(self, node: cst.CSTNode) -> AutocastState:
        """Under a precision the launcher decides (``Regime.launcher``: ``Accelerator()`` with no literal
        mixed_precision), model code may run under fp16 or bf16 CUDA autocast: for what fails under
        either (binary_cross_entropy)."""
        regime = self.ctx.regime
        evidence = getattr(regime, "launcher", None) if regime is not None else None
        fn = self.ctx.enclosing_function(node)
        if evidence is None or fn is None:
            return NOT_AUTOCAST
        cls = self.ctx.enclosing_class(fn)
        loss_object = cls is not None and re.search(r"(?i)loss|criterion", cls.name.value)  # Loss.__call__
        if not (self.model_code(fn) or loss_object):
            return NOT_AUTOCAST
        if without_autocast_branch(self.ctx, node) or self.called_only_outside_autocast(fn, node, surely=True):
            return NOT_AUTOCAST  # every call reaching it is made where autocast is off (pytorch3d's calc_bce)
        return AutocastState(True, "fp16 or bf16 (set by the launcher or the caller)", LIKELY, evidence)

    def model_code(self, fn: Optional[cst.FunctionDef]) -> bool:
        """Does ``fn`` run as part of a model's computation, so that the project's regime (fp16
        autocast, half parameters) applies to it without a region of its own saying so?

        Yes for methods of nn.Module-like classes (they define ``forward`` or derive from a
        Module / Model / Layer / Attention / Block class), for functions this file calls from such
        methods or from inside an autocast region, and for loss / attention helpers by name. No for
        module-level code, test modules and files that do not use torch: data pipelines on numpy
        arrays, preprocessing scripts and test references never see the training step's fp16.
        """
        if fn is None:
            return False
        key = ("model_code", fn)
        cache = self.ctx._cache
        return _guarded(cache, key, False, lambda: self._model_code(fn))  # (recursion through mutual calls: False)

    def _model_code(self, fn: cst.FunctionDef) -> bool:
        ctx = self.ctx
        from .training import is_test_file
        if not self._uses_torch() or is_test_file(ctx):
            return False
        cls = ctx.enclosing_class(fn)
        if fn.name.value != "forward" and self._writes_parameter_data(fn):
            return False  # weight surgery (merge / unmerge an adapter into .weight.data): not the forward
        if fn.name.value != "forward" and self._runs_a_training_step(fn):
            return False  # it runs the model, a backward and the optimizer's step: not the model
        if cls is not None and self._module_like(cls):
            # An nn.Module under a preprocessing / data directory is a feature extractor run over
            # the data set (fairseq's speech_synthesis/preprocessing/speaker_embedder), not the
            # model the training step runs in fp16.
            return not _DATA_PATH.search(self._project_path())
        if self._scopes_autocast(fn) or _LOOP_FUNCTION.search(fn.name.value):
            return False  # a training / evaluation loop: it runs the model, it is not the model
        if self._cpu_fallback(fn):
            return False
        callers = self.calls_of(fn)
        if any(self._runs_in_model(call, fn) for call in callers):
            return True
        if callers and any(ctx.enclosing_function(c) is not fn for c in callers):
            # Called in this file, and never from model code or an autocast region (an evaluate()
            # helper of the training script, say): it does not run under the fp16 regime.
            return False
        if _MODEL_HELPER.search(fn.name.value):
            return True
        if cls is not None:
            # a method of a Dataset, a Trainer, a config class... unless a model calls it through
            # an instance it holds (a head's ``self.assigner.assign(scores.sigmoid(), labels)``)
            return self._called_by_model_elsewhere(cls, fn)
        if _DATA_PATH.search(self._project_path()) or self._uses_numpy(fn):
            return False  # data pipelines and preprocessing work on numpy arrays / fp32 tensors
        if self._never_used(fn):
            # No code of the project calls it or names it (speechbrain's NMF_separate_spectra, a
            # separation utility its users run after training): the training step does not reach
            # it, and the entry point's fp16 regime says nothing about how its users call it.
            return False
        return True  # a module-level helper whose callers are elsewhere

    def _cpu_fallback(self, fn: cst.FunctionDef) -> bool:
        """A module-level function that no other file calls and whose every use in its file lies on the
        CPU side of a device test (``if logits.is_cuda: loss_func = sigmoid_focal_loss_cuda else:
        loss_func = sigmoid_focal_loss_cpu``, maskrcnn-benchmark): the CPU fallback of a CUDA kernel,
        which CUDA autocast and half models never reach."""
        ctx = self.ctx
        if ctx.parent(fn) is not ctx.module:
            return False
        uses = [n for n in ctx.semantic.references(fn.name.value) if ctx.enclosing_function(n) is not fn]
        if not uses or not all(on_cpu_branch(ctx, n) for n in uses):
            return False
        module, project = ctx.imports.module_name, ctx.project
        if module and hasattr(project, "callers"):
            here = Path(ctx.path).resolve()
            return not any(site.path != here for site in project.callers(f"{module}.{fn.name.value}"))
        return True

    def _runs_a_training_step(self, fn: cst.FunctionDef) -> bool:
        """Does ``fn`` itself run a tensor's ``.backward()`` and step an optimizer (directly or through
        a GradScaler)? An RL actor's ``update_policy`` beside the ``forward`` that opens the autocast
        region (verl): the training step, whose own code runs outside autocast."""
        if b".backward(" not in self.ctx.source:
            return False  # (the cheap test first: the training steps are a pass over the whole file)
        from .training import training_steps  # noqa: PLC0415 (training imports this module's peers)
        step = training_steps(self.ctx).get(fn)
        if step is None:
            return False
        backward = any(isinstance(e.call.func, cst.Attribute) and e.call.func.attr.value == "backward"
                       and e.how != "engine" for e in step.of_kind("backward"))
        return backward and bool(step.of_kind("opt_step", "scaler_step"))

    def _called_by_model_elsewhere(self, cls: cst.ClassDef, fn: cst.FunctionDef) -> bool:
        """Is the method ``fn`` of the module-level class ``cls`` called, through an instance, from
        model code or an autocast region of another project file (the project index's callers)?"""
        ctx = self.ctx
        project = ctx.project
        if project is None or not hasattr(project, "callers") or ctx.parent(cls) is not ctx.module \
                or not ctx.imports.module_name:
            return False
        here = Path(ctx.path).resolve()
        sites = [s for s in project.callers(f"{ctx.imports.module_name}.{cls.name.value}.{fn.name.value}")
                 if s.on_self and s.path != here]
        for path in sorted({s.path for s in sites})[:MAX_OTHER_FILES]:
            other = ctx.other_file(path)
            if other is None:
                continue
            lines = {s.line for s in sites if s.path == path}
            other_pm = self.model_for(other)
            if any(other_pm._runs_in_model(call) for call in other.method_calls(fn.name.value)
                   if other.on_lines(call, lines)):
                return True
        return False

    def _runs_in_model(self, call: cst.Call, fn: Optional[cst.FunctionDef] = None) -> bool:
        """Does the call ``call`` of this file (of ``fn``, when it is in this file) run in model code:
        inside an fp16 / bf16 autocast region, or in a function that is model code?"""
        region = self.ctx.region_of(call)
        if region is not None:
            return region.enabled and region.dtype in (F16, BF16)
        caller = self.ctx.enclosing_function(call)
        return caller is not None and caller is not fn and self.model_code(caller)

    def _never_used(self, fn: cst.FunctionDef) -> bool:
        """A module-level function that no file of the project calls (the project index) and that
        its own file never names (no call, no ``self.f = f``, no callback use), in a package module
        or a module other files use, in a project whose training entry points are known. Not asked of library code judged by the library policy,
        nor under an assumed precision: there the users' calls are what is judged."""
        ctx = self.ctx
        regime = ctx.regime
        project = ctx.project
        module = ctx.imports.module_name
        # the launcher's fp16 run of an application (``Accelerator()`` decides) is still the run of its
        # entry points: what they never call is not reached there either
        from ..project import LAUNCHED
        launched = regime is not None and regime.any_fp16_use and LAUNCHED in regime.scope
        if regime is None or (regime.any_fp16_use or regime.override) and not launched or not module \
                or not hasattr(project, "callers"):
            return False
        if not regime.entry_points or fn in ctx.regions():
            return False  # no training entry point to be reached from, or autocast of its own
        if "." not in module and not self._module_used_elsewhere(module):
            # a lone script's helper: its callers may be anywhere; a package module's function, or
            # one of a module other files use (imagen's imagen_video.py `log` beside the called
            # functions), is reached only through the calls the project makes
            return False
        if any(ctx.enclosing_function(n) is not fn for n in ctx.semantic.references(fn.name.value)):
            return False
        return not project.callers(f"{module}.{fn.name.value}")

    def _module_used_elsewhere(self, module: str) -> bool:
        """Does another file of the project call a function or class this module defines?"""
        ctx = self.ctx
        here = Path(ctx.path).resolve()
        for stmt in ctx.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                if any(site.path != here for site in ctx.project.callers(f"{module}.{stmt.name.value}")):
                    return True
        return False

    def _project_path(self) -> str:
        """The file's path relative to its project's root (the directories above the project, a
        checkout under ``~/data/``, say nothing of what the code is)."""
        ctx = self.ctx
        if "project_path" not in ctx._cache:
            path = ctx.path
            file, root = getattr(ctx, "file", None), getattr(ctx.project, "root", None)
            if file is not None and root is not None:
                try:
                    path = Path(file).resolve().relative_to(Path(root).resolve()).as_posix()
                except (ValueError, OSError):
                    pass
            ctx._cache["project_path"] = path
        return ctx._cache["project_path"]  # type: ignore[return-value]

    def _writes_parameter_data(self, fn: cst.FunctionDef) -> bool:
        """Does ``fn`` overwrite a tensor's ``.data`` (``layer.weight.data = w``,
        ``p.data.copy_(w)``, ``w.data[...] = v``)? Such code edits parameters outside autograd:
        merging an adapter, re-initialising, loading; it is called between steps, not inside
        the autocast region of a forward."""
        index = self.ctx._cache.get("data_writers")
        if index is None:
            index = set()
            ctx = self.ctx

            def is_data(expr) -> bool:
                while isinstance(expr, cst.Subscript):
                    expr = expr.value
                return isinstance(expr, cst.Attribute) and expr.attr.value == "data"

            targets = [t.target for a in ctx.nodes(cst.Assign) for t in a.targets]
            writes = [t for t in targets if is_data(t)]
            writes += [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Attribute)
                       and c.func.attr.value in ("copy_", "set_") and is_data(c.func.value)]
            for w in writes:
                f = ctx.enclosing_function(w)
                if f is not None:
                    index.add(f)
            ctx._cache["data_writers"] = index
        return fn in index  # type: ignore[operator]

    def _uses_numpy(self, fn: cst.FunctionDef) -> bool:
        index = self.ctx._cache.get("numpy_functions")
        if index is None:
            index = set()
            for call in self.ctx.nodes(cst.Call):
                name = self.ctx.call_name(call) or ""
                if name.startswith("numpy.") or name.startswith("np."):
                    f = self.ctx.enclosing_function(call)
                    while f is not None:
                        index.add(f)
                        f = self.ctx.enclosing_function(f)
            self.ctx._cache["numpy_functions"] = index
        return fn in index  # type: ignore[operator]

    def _uses_torch(self) -> bool:
        key = "uses_torch"
        if key not in self.ctx._cache:
            self.ctx._cache[key] = any(q == "torch" or q.startswith("torch.") for _, q in self.ctx.imports.items())
        return self.ctx._cache[key]  # type: ignore[return-value]

    def _module_like(self, cls: cst.ClassDef, seen: Optional[set] = None) -> bool:
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward":
                return True
        seen = seen if seen is not None else set()
        seen.add(cls.name.value)
        for base in cls.bases:
            name = self.ctx.qualname(base.value) or ""
            if _MODULE_BASE.search(name.rsplit(".", 1)[-1]) or _METRIC_BASE.match(name):
                return True
            # a base class of this file (InnerEye's ``BinaryCrossEntropy(ScalarMetricsBase)``, whose
            # base derives from Metric): what it derives from
            if isinstance(base.value, cst.Name) and base.value.value not in seen:
                local = next((c for c in self.ctx.module.body if isinstance(c, cst.ClassDef)
                              and c.name.value == base.value.value), None)
                if local is not None and self._module_like(local, seen):
                    return True
        return False

    def _region_device(self, region) -> Optional[str]:
        """The device type of the autocast call that opened ``region`` (a With or a decorated def)."""
        owner = region.node
        calls = ([self.ctx.with_item_call(item) for item in owner.items] if isinstance(owner, cst.With)
                 else [d.decorator for d in getattr(owner, "decorators", ())])
        for call in calls:
            if isinstance(call, cst.Call):
                device = autocast_device(self.ctx.call_facts(call))
                if device is not None:
                    return device
        return None

    def _called_without_autocast(self, fn: cst.FunctionDef) -> Optional[Evidence]:
        """The evidence of an ``autocast(enabled=False)`` region when ``fn`` is called from inside
        one in this file and never from inside an enabled autocast region: a helper its author runs
        with autocast off (timm's ``LiteMLA._attn``, called as ``with torch.autocast(...,
        enabled=False): out = self._attn(q, k, v)``). Calls outside any region say nothing."""
        key = ("called_off", fn)
        cache = self.ctx._cache
        if key not in cache:
            ctx = self.ctx
            off: Optional[Evidence] = None
            on = False
            for call in self.calls_of(fn):
                region = ctx.region_of(call)
                if region is None:
                    continue
                if region.enabled and region.dtype in (F16, BF16):
                    on = True
                    break
                off = off or region.evidence
            cache[key] = off if not on else None
        return cache[key]  # type: ignore[return-value]

    def _held_by_datasets(self, cls: Optional[cst.ClassDef]) -> bool:
        """Is every instance of the module-level class ``cls`` built for a ``Dataset``: each
        construction the project index sees is an argument of a ``Dataset`` subclass's construction
        (``AudioDataset(WhisperFrontend())``, or through a local used only so), or sits in a method of a
        ``Dataset`` subclass (``self.frontend = WhisperFrontend()`` in its ``__init__``)? Then its
        methods run where the dataset calls them, in ``__getitem__`` on the data loader's CPU workers,
        never under the training step's autocast (FunASR's and ludwig's audio front ends: triage set
        10, T10-4). False when no construction is seen."""
        if cls is None or self.ctx.parent(cls) is not self.ctx.module or not self._module_like(cls):
            return False
        key = ("held_by_datasets", cls)
        cache = self.ctx._cache
        if key not in cache:
            cache[key] = False
            cache[key] = self._built_for_datasets(cls)
        return cache[key]  # type: ignore[return-value]

    def _built_for_datasets(self, cls: cst.ClassDef) -> bool:
        ctx = self.ctx
        project = ctx.project
        if project is None or not hasattr(project, "callers") or not ctx.imports.module_name:
            return False
        sites = project.callers(f"{ctx.imports.module_name}.{cls.name.value}")
        if not sites:
            return False
        # what must be a Dataset subclass: the classes whose methods build it, the calls it is handed
        # to (asked of the project index last: most classes are built where no dataset is in sight)
        owners: List[str] = []
        receivers: List[Tuple[FileContext, cst.Call]] = []
        for site in sites:
            other = ctx if Path(site.path) == Path(ctx.path).resolve() else ctx.other_file(site.path)
            if other is None:
                return False
            calls = [c for c in other.nodes(cst.Call) if (other.call_name(c) or "").rsplit(".", 1)[-1] == cls.name.value
                     and other.on_lines(c, {site.line})]
            if not calls:
                return False
            for c in calls:
                given = _handed_to(other, c)
                if given is not None:
                    receivers.extend((other, g) for g in given)
                elif other.enclosing_class(c) is not None:
                    owners.append(site.caller.rsplit(".", 1)[0])  # built in a method: of a Dataset?
                else:
                    return False
        index = ctx.project_index
        if index is None:
            return False
        datasets = {s.name for base in _DATASET_BASES for s in index.subclasses(base)}
        if not datasets:
            return False
        for other, call in receivers:
            name = other.call_name(call)
            sym = index.resolve(name, other.imports.module_name or "") if name else None
            if sym is None or sym.name not in datasets:
                return False
        return all(owner in datasets for owner in owners)

    def calls_of(self, fn: cst.FunctionDef) -> List[cst.Call]:
        """The calls of this file that call ``fn``: ``f(...)`` for a function, ``self.f(...)`` /
        ``cls.f(...)`` for a method (by name, within the file)."""
        owner = self.ctx.parent(self.ctx.parent(fn))
        if isinstance(owner, cst.ClassDef):
            # ``self.m(...)`` runs this ``m`` only in this class and the classes of the file related
            # to it by inheritance: speechbrain's SPNPredictor.infer calls its own
            # ``self.forward(tokens, ...)``, not BinaryAlignmentLoss.forward further down the file.
            related = self._related_classes(owner)
            own = [c for c in self._calls_by_callee().get(("method", fn.name.value), ())
                   if self.ctx.enclosing_class(c) in related]
            if fn.name.value == "forward":
                # ``miner = Miner()`` ... ``miner(emb, idx)``: nn.Module.__call__ runs forward
                own += self.module_calls(lambda built: isinstance(built.func, cst.Name)
                                         and built.func.value == owner.name.value)
                # ``self(x)`` in the class's own ``training_step``
                own += [c for c in self._calls_by_callee().get(("function", "self"), ())
                        if self.ctx.enclosing_class(c) is owner]
            elif fn.name.value == "__init__" and self.ctx.parent(owner) is self.ctx.module:
                # ``Trainer(model=model, args=args)`` runs ``__init__``
                own += [c for c in self._calls_by_callee().get(("function", owner.name.value), ())
                        if not self.ctx.imports.binds(owner.name.value)]
            return [*own, *self._instance_calls(owner.name.value, fn.name.value)]
        calls = list(self._calls_by_callee().get(("function", fn.name.value), ()))
        for alias in self.compiled_aliases(fn):  # ``focal_jit = torch.jit.script(focal)``; ``focal_jit(x)``
            calls.extend(self._calls_by_callee().get(("function", alias), ()))
        # ``self.sample = gumbel_sample`` in ``__init__``, then ``self.sample(logits)``: a call of
        # the function (an instance attribute is not bound: no ``self`` is passed).
        for cls, attr in self._function_attributes().get(fn.name.value, ()):
            # (only in the class that binds it and its kin: FocalLossSparse's ``self.neg_loss`` is
            # its own ``neg_loss_sparse``, not FocalLossCenterNet's ``neg_loss_cornernet``)
            related = self._related_classes(cls)
            calls.extend(c for c in self._calls_by_callee().get(("method", attr), ())
                         if self.ctx.enclosing_class(c) in related)
        return calls

    def compiled_aliases(self, fn: cst.FunctionDef) -> List[str]:
        """The module-level names bound to a compiled ``fn``: ``focal_jit = torch.jit.script(focal)``,
        ``torch.compile(focal)`` (CenterNet2's ``heatmap_focal_loss_jit``): calling one runs ``fn``."""
        ctx = self.ctx
        if ctx.parent(fn) is not ctx.module:
            return []
        index = ctx._cache.get("compiled_aliases")
        if index is None:
            index = {}
            for stmt in ctx.module.body:
                for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                            and isinstance(small.targets[0].target, cst.Name) and isinstance(small.value, cst.Call)):
                        continue
                    call = small.value
                    if ctx.call_name(call) in _COMPILERS and call.args and isinstance(call.args[0].value, cst.Name) \
                            and call.args[0].keyword is None:
                        index.setdefault(call.args[0].value.value, []).append(small.targets[0].target.value)
            ctx._cache["compiled_aliases"] = index
        return index.get(fn.name.value, [])  # type: ignore[union-attr]

    def _related_classes(self, cls: cst.ClassDef) -> set:
        """``cls`` and the classes of this file it derives from or that derive from it (by base
        name, transitively): where a ``self.m(...)`` may run ``cls``'s ``m``."""
        key = ("related_classes", cls)
        cache = self.ctx._cache
        if key not in cache:
            all_classes = list(self.ctx.nodes(cst.ClassDef))
            classes = {c.name.value: c for c in all_classes}
            bases = {c: {b.value.value for b in c.bases if isinstance(b.value, cst.Name)} for c in all_classes}

            def closure(start, step) -> set:
                seen, todo = {start}, [start]
                while todo:
                    for other in step(todo.pop()):
                        if other not in seen:
                            seen.add(other)
                            todo.append(other)
                return seen

            up = closure(cls, lambda c: [classes[b] for b in bases[c] if b in classes and classes[b] is not c])
            down = closure(cls, lambda c: [d for d in all_classes if c.name.value in bases[d]])
            cache[key] = up | down
        return cache[key]  # type: ignore[return-value]

    def _instance_calls(self, cls: str, method: str) -> List[cst.Call]:
        """``self.coder.encode(h, ha)`` with ``self.coder = BoxCoder()`` in ``__init__`` (or
        ``coder = BoxCoder(); coder.encode(...)``): calls of a method of a class of this file
        through an instance of it (effdet's box coder, called from a head's forward)."""
        index = self.ctx._cache.get("attribute_calls")
        if index is None:  # method name -> calls ``<receiver>.<method>(...)`` whose receiver is not self / cls
            index = {}
            for call in self.ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")):
                    index.setdefault(func.attr.value, []).append(call)
            self.ctx._cache["attribute_calls"] = index
        out = []
        for call in index.get(method, ()):  # type: ignore[union-attr]
            receiver = call.func.value
            if isinstance(receiver, cst.Name) and receiver.value == cls:
                # ``SimpleTrainer.write_metrics(loss_dict)``: a static or class method called
                # through its class (a plain method called so passes ``self`` itself: not taken)
                if self._static_or_class_method(cls, method):
                    out.append(call)
                continue
            built = None
            if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
                built = self.init_attribute(call, receiver.attr.value)
            elif isinstance(receiver, cst.Name) and receiver.value not in ("self", "cls"):
                built = self.value_of(receiver)
            while isinstance(built, cst.Call) and isinstance(built.func, cst.Attribute) \
                    and built.func.attr.value in _SAME_MODULE_METHODS:
                built = built.func.value  # ``Field().cuda()``, ``Net(cfg).to(device).eval()``: the same module
            if isinstance(built, cst.Call) and isinstance(built.func, cst.Name) and built.func.value == cls:
                out.append(call)
        return out

    def _static_or_class_method(self, cls: str, method: str) -> bool:
        for c in self.ctx.nodes(cst.ClassDef):
            if c.name.value != cls:
                continue
            for stmt in c.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == method and any(
                        isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
                        for d in stmt.decorators):
                    return True
        return False

    def module_calls(self, built_by) -> List[cst.Call]:
        """Calls of this file of a module object (``miner(emb)`` after ``miner = Miner()``,
        ``self.loss_fn(x, y)`` after ``self.loss_fn = SFTLoss()`` in ``__init__``, through
        ``.cuda()`` / ``.to(...)`` / ``.eval()``) whose building call ``built_by`` accepts."""
        out = []
        for call, built, param_of in self._module_call_sites():
            if param_of is not None:
                # ``def train(model, loader, criterion)``: the module a call of ``train`` in this
                # file passes (``train(m, dl, TacotronLoss())``, or a name bound to it)
                if any(built_by(passed) for passed in self._modules_passed(*param_of)):
                    out.append(call)
            elif built_by(built):
                out.append(call)
        return out

    def _module_call_sites(self) -> List[Tuple[cst.Call, Optional[cst.Call], Optional[Tuple[cst.FunctionDef, str]]]]:
        """The calls of this file that may call a module object, in order, each with its building
        call, or with (def, parameter) for a call of a parameter: found once per file (each
        forward's ``calls_of`` asks ``module_calls``; a scan of every call each time was 5 % of a
        cold run of transformers)."""
        sites = self.ctx._cache.get("module_call_sites")
        if sites is None:
            sites = []
            for call in self.ctx.nodes(cst.Call):
                func = call.func
                built = None
                if isinstance(func, cst.Name) and not self.ctx.imports.binds(func.value):
                    b = self._through_returned_arguments(func.value, self._binding(func))
                    if isinstance(b, tuple) and b[0] == "param":
                        sites.append((call, None, (b[1], func.value)))
                        continue
                    built = b if isinstance(b, cst.Call) else None
                elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                    built = self.init_attribute(call, func.attr.value)
                while isinstance(built, cst.Call) and isinstance(built.func, cst.Attribute) \
                        and built.func.attr.value in _SAME_MODULE_METHODS:
                    built = built.func.value
                if isinstance(built, cst.Call):
                    sites.append((call, built, None))
            self.ctx._cache["module_call_sites"] = sites
        return sites  # type: ignore[return-value]

    def _through_returned_arguments(self, name: str, b: Optional[object], depth: int = 0) -> Optional[object]:
        """``b`` (a binding of ``name``, as ``binding_at`` gives it), or, where it is the result of a project
        function that returns one of its parameters as it was handed in (radtts' ``model = warmstart(path,
        model)``, ``model, optimizer, iteration = load_checkpoint(path, model, optimizer)``, ``model =
        apply_gradient_allreduce(model)``: each ``return model``), the binding of the name the call passes for
        that parameter, where the call sees it (T18-4): the module built before them."""
        while depth < 4:
            index = None
            if isinstance(b, tuple) and len(b) == 3 and b[0] == "part" and isinstance(b[1], cst.Call):
                call, index = b[1], _unpacked_index(self.ctx, b[2])
                if index is None:
                    return b
            elif isinstance(b, cst.Call):
                call = b
            else:
                return b
            passed = _returned_argument(self.ctx, call, index)
            if not isinstance(passed, cst.Name):
                return b
            b = self.binding_at(passed.value, call)
            depth += 1
        return b

    def _modules_passed(self, fn: cst.FunctionDef, param: str) -> List[cst.Call]:
        """The building calls of the objects the calls of ``fn`` in this file pass for ``param``
        (none while that is being asked already: ``calls_of`` a forward asks ``module_calls``)."""
        from .callers import argument_for
        key = ("modules_passed", fn, param)
        cache = self.ctx._cache
        if key in cache:
            return cache[key] or []  # type: ignore[return-value]
        cache[key] = None  # asking
        method = isinstance(self.ctx.parent(self.ctx.parent(fn)), cst.ClassDef)
        out = []
        for site in self.calls_of(fn):
            _, value = argument_for(site, fn, param, method)
            if isinstance(value, cst.Name):
                value = self.value_of(value)
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value in _SAME_MODULE_METHODS:
                value = value.func.value
            if isinstance(value, cst.Call):
                out.append(value)
        cache[key] = out
        return out

    def _function_attributes(self) -> Dict[str, List[Tuple[cst.ClassDef, str]]]:
        """Module-level function name -> (class, ``self.<attr>`` name) for each ``__init__`` binding it."""
        index = self.ctx._cache.get("function_attributes")
        if index is None:
            index = {}
            for cls in self.ctx.nodes(cst.ClassDef):
                for b in self.ctx.semantic.attributes_of(cls):
                    if b.scope.node.name.value == "__init__" and isinstance(b.value, cst.Name) and not b.part:
                        index.setdefault(b.value.value, []).append((cls, b.name))
            self.ctx._cache["function_attributes"] = index
        return index  # type: ignore[return-value]

    def _calls_by_callee(self) -> Dict[Tuple[str, str], List[cst.Call]]:
        """Calls of this file by what they call: ("method", m) for ``self.m(...)`` / ``cls.m(...)``,
        ("function", f) for ``f(...)`` (one index per file)."""
        index = self.ctx._cache.get("calls_by_callee")
        if index is None:
            index = {}
            for call in self.ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
                    index.setdefault(("method", func.attr.value), []).append(call)
                elif isinstance(func, cst.Name):
                    index.setdefault(("function", func.value), []).append(call)
                # ``multi_apply(self._get_target_single, gt_bboxes_list, ...)`` / ``map(f, xs)`` call
                # the callback with the lists' items (``callers.argument_for`` reads them so)
                callback = mapped_callback(call)
                if callback is not None:
                    index.setdefault(callback, []).append(call)
            self.ctx._cache["calls_by_callee"] = index
        return index  # type: ignore[return-value]

    def _scopes_autocast(self, fn: Optional[cst.FunctionDef]) -> bool:
        key = ("scopes", fn)
        cache = self.ctx._cache
        if key not in cache:
            owner = fn if fn is not None else None
            # Only regions that turn autocast on: an ``enabled=False`` block inside a function says
            # the code around it runs under autocast.
            cache[key] = any(
                isinstance(r.node, cst.With) and r.enabled and self.ctx.enclosing_function(r.node) is owner
                for r in self.ctx.regions().values()
            )
        return cache[key]  # type: ignore[return-value]

    # ---- names -------------------------------------------------------------------------------
    def _binding(self, name: cst.Name) -> Optional[object]:
        return self.binding_at(name.value, name)

    def binding_at(self, name: str, at: cst.CSTNode) -> Optional[object]:
        """What the name ``name`` is bound to as seen from node ``at`` (``ctx.semantic.lookup``),
        as the dtype flow uses it: the value expression of an assignment (or walrus),
        ``("part", value)`` for an unpacked target, ``("param", fn, param)`` for a parameter of a
        def, ``("aug", stmt)`` for an augmented assignment, ``(kind, binding)`` for any other
        binding (a loop or ``with`` target, an import, a def: no dtype from here), or None. Two
        nodes see the same value of a name when this returns the same (or an equal) object."""
        b = self.ctx.semantic.lookup(name, at)
        if b is None:
            return None
        if b.kind in ("assign", "walrus"):
            return ("part", b.value, b.node) if b.part else b.value
        if b.kind == "augassign":
            return ("aug", b.value)
        if b.kind == "param":
            if isinstance(b.scope.node, cst.FunctionDef):
                return ("param", b.scope.node, b.value)
            return ("lambda_param", b)  # ("param", fn, param) is a def's: callers read its three parts
        return (b.kind, b)

    # ---- mapping entries ------------------------------------------------------------------------
    def entry_value(self, base: cst.Name, key: str, at: cst.CSTNode) -> Optional[object]:
        """What ``base[key]`` holds where ``at`` reads it: the value last stored under ``key``
        before ``at`` in its function (``pred_dict["hm"] = self.sigmoid(pred_dict["hm"])`` then
        ``loss(pred_dict["hm"], gt)``: OpenPCDet's CenterHead, M14-1), or else the entry of the dict
        literal ``base`` is bound to (``{"hm": self.conv(x)}``, ``dict(hm=...)``); ``("param", fn,
        name)`` for a parameter nothing stored to; None when it is not known. A store counts only in
        a block that holds the read (it ran before it), to the binding of ``base`` the read sees."""
        fn = self.ctx.enclosing_function(at)
        order = self.ctx.order(at)
        seen = self.binding_at(base.value, at)
        found = None
        for assign, target, value in self._entry_stores().get((base.value, key), ()):
            if self.ctx.enclosing_function(assign) is not fn or self.ctx.order(assign) >= order \
                    or self.ctx.is_ancestor(assign, at):
                continue
            block = self.ctx.parent(self.ctx.parent(assign))
            if block is None or not self.ctx.is_ancestor(block, at) or self.binding_at(base.value, target) != seen:
                continue
            found = value  # (in source order: the last store wins)
        if found is not None:
            return found
        if isinstance(seen, cst.BaseExpression):
            return _literal_entry(self.ctx, seen, key)
        if isinstance(seen, tuple) and len(seen) == 3 and seen[0] == "param":
            return ("param", seen[1], base.value)
        return None

    def _entry_stores(self) -> Dict[Tuple[str, str], List[Tuple[cst.Assign, cst.Name, cst.BaseExpression]]]:
        """(name, key) -> the file's ``name["key"] = value`` statements, in source order (found once)."""
        index = self.ctx._cache.get("entry_stores")
        if index is None:
            index = {}
            for assign in self.ctx.nodes(cst.Assign):
                if len(assign.targets) != 1 or not isinstance(self.ctx.parent(assign), cst.SimpleStatementLine):
                    continue
                target = assign.targets[0].target
                key = entry_key(target) if isinstance(target, cst.Subscript) else None
                if key is not None and isinstance(target.value, cst.Name):
                    index.setdefault((target.value.value, key), []).append((assign, target.value, assign.value))
            self.ctx._cache["entry_stores"] = index
        return index  # type: ignore[return-value]

    def _entry_dtype(self, sub: cst.Subscript) -> Optional[DTypeFact]:
        """The dtype of ``d["key"]`` from what was put under ``key`` (``entry_value``), also by the
        callers of this file when ``d`` is a parameter (``self.get_loss(pred_dict, gt)`` after
        ``pred_dict = {"hm": self.conv(feats)}``); None when that is not known."""
        key = entry_key(sub)
        if key is None or not isinstance(sub.value, cst.Name):
            return None
        held = self.entry_value(sub.value, key, sub)
        if isinstance(held, tuple):
            return self._entry_from_callers(held[1], held[2], key)
        return self.dtype_of(held) if held is not None else None

    def _entry_from_callers(self, fn: cst.FunctionDef, name: str, key: str) -> Optional[DTypeFact]:
        """What the calls of ``fn`` in this file put under ``key`` of the mapping they pass for
        ``name``: float16 when one passes a float16 entry, the widest dtype when every one is known,
        None otherwise (a call that does not say, an entry not known)."""
        from .callers import argument_for
        asking = ("entry", self.ctx.path, self.ctx.order(fn), name, key)
        if asking in _ASKING:
            _CUTS[0] += 1
            return None
        _ASKING.add(asking)
        facts = []
        try:
            method = isinstance(self.ctx.parent(self.ctx.parent(fn)), cst.ClassDef)
            for call in self.calls_of(fn):
                if self.ctx.enclosing_function(call) is fn:
                    continue
                known, value = argument_for(call, fn, name, method)
                held = None
                if known and isinstance(value, cst.Name):
                    held = self.entry_value(value, key, value)
                elif known and value is not None:
                    held = _literal_entry(self.ctx, value, key)
                if isinstance(held, tuple):
                    fact = self._entry_from_callers(held[1], held[2], key)
                else:
                    fact = self.dtype_of(held) if held is not None else None
                if fact is None:
                    return None
                facts.append((call, fact))
        finally:
            _ASKING.discard(asking)
        if not facts:
            return None
        for call, fact in facts:
            if fact.is_half:
                return DTypeFact(F16, LIKELY, f"`{name}[{key!r}]` of `{fn.name.value}` is passed a float16 value at "
                                              f"{self.ctx.path}:{self.ctx.line_of(call)} ({fact.why})".replace(" ()", ""),
                                 fact.evidence, assumed=fact.assumed)
        if all(fact.dtype is not None for _, fact in facts):
            return _widest([fact for _, fact in facts])
        return None

    def value_of(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The expression last assigned to ``name`` before its use (for ``a, b = t.chunk(2)``, the
        whole ``t.chunk(2)``), or None for parameters, augmented assignments and unknown names."""
        value = self._binding(name)
        if isinstance(value, tuple):
            return value[1] if value[0] == "part" and isinstance(value[1], cst.BaseExpression) else None
        return value if isinstance(value, cst.BaseExpression) else None

    def _param_dtype(self, fn: cst.FunctionDef, param: cst.Param) -> DTypeFact:
        """A parameter is float16 when a caller passes it a float16 value; when every caller seen
        passes something else (an ``nn.Parameter``, a value upcast with ``.float()``, the output of
        an fp32-list op, a numpy array), it is not. Only where no caller says (``forward``, called by
        ``nn.Module.__call__``; a helper whose callers are out of sight) does the regime decide:
        a tensor argument of model code is float16 under pure half or fp16 autocast."""
        name = param.name.value
        ann = self.ctx.code(param.annotation.annotation) if param.annotation is not None else ""
        if ann:
            if "Tensor" not in ann:
                return UNKNOWN
        elif _SCALAR_PARAM.match(name):
            return UNKNOWN
        elif _INDEX_PARAM.match(name):
            # a mask / ids / lengths argument: data, unless a caller passes it float16 (Open-Sora-Plan's
            # ``self.make_attn_bias(attn_mask)`` after ``attn_mask = attn_mask.to(q.dtype)``)
            from_callers = self._from_callers(fn, name) if param.default is None else None
            # (a value computed float16, not one only taken so from the regime: fairseq's
            # ``encoder_out["encoder_padding_mask"]`` of a half model is the boolean padding mask)
            regime = self.ctx.regime
            by_regime = from_callers is not None and (from_callers.assumed or regime is not None and (
                from_callers.evidence is regime.half_params or from_callers.evidence == regime.half_params))
            return from_callers if from_callers is not None and from_callers.is_half and not by_regime else UNKNOWN
        if param.default is not None and not (isinstance(param.default, cst.Name) and param.default.value == "None"):
            return UNKNOWN  # a default like 1e-6 or True: not a tensor
        if name in self.required_complex(fn):
            return DTypeFact(COMPLEX, CERTAIN, f"`{fn.name.value}` raises unless `{name}` is complex")
        parametrized = self._parametrized_tensor(fn, name)
        if parametrized is not None:
            return parametrized
        from_callers = self._from_callers(fn, name)
        if from_callers is not None:
            return from_callers
        if _INDEX_PARAM.match(name) and not _ATTENTION_MASK.search(name):
            # a loss / token mask, ids, labels, lengths no caller says more of: ``Tensor`` in its
            # annotation says it is a tensor, not an activation (OpenRLHF's ``loss_mask: torch.Tensor``,
            # float32 data). An attention mask is added to the scores, in their dtype: under half
            # weights the model casts it (fairseq's ``attn_mask`` filled with -1e8 under --fp16).
            return UNKNOWN
        regime = self.ctx.regime
        if regime is None or not self.model_code(fn):
            return UNKNOWN
        if regime.half_params is not None:
            return DTypeFact(F16, LIKELY, f"`{name}` is a tensor argument of `{fn.name.value}` in a pure-half project",
                             regime.half_params)
        state = self.autocast_at(fn.body)
        if state.active and _WAVEFORM_ARGUMENT.match(name):
            return DTypeFact(F32, LIKELY, f"`{name}` is a recording: input data, which autocast does not cast")
        if state.active and fn.name.value in _STEP_HOOKS and self._first_argument(fn) == name:
            return DTypeFact(F32, LIKELY, f"`{name}` of `{fn.name.value}` is the data loader's batch: input data, "
                                          f"which autocast does not cast")
        if state.active and state.dtype == F16 and not _MASK_ARGUMENT.search(name):
            return DTypeFact(F16, LIKELY, f"`{name}` is an argument of `{fn.name.value}`, which runs under fp16 autocast",
                             state.evidence, assumed=True)
        if state.active and state.dtype == BF16:
            # (only the rules that judge bfloat16 read it: log(1 - p) of a sigmoid that rounds to 1.0)
            return DTypeFact(BF16, LIKELY, f"`{name}` is an argument of `{fn.name.value}`, which runs under bf16 autocast",
                             state.evidence, assumed=True)
        return UNKNOWN

    def _first_argument(self, fn: cst.FunctionDef) -> Optional[str]:
        """The first parameter of the method ``fn`` after ``self``."""
        names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        return names[1] if len(names) > 1 and names[0] == "self" else None

    def _parametrized_tensor(self, fn: cst.FunctionDef, name: str) -> Optional[DTypeFact]:
        """The tensor argument of a parametrization's ``forward``: ``register_parametrization(m,
        "weight", WeightStandardizer())`` makes ``m.weight`` the forward's output and passes it the
        original parameter (composer's weight standardization). Float32 under mixed precision (autocast
        casts op inputs, not parameters), float16 in a half model. None for any other parameter."""
        if fn.name.value != "forward":
            return None
        params = [p.name.value for p in fn.params.params]
        cls = self.ctx.enclosing_class(fn)
        if cls is None or params[:2] != ["self", name]:
            return None
        key = ("parametrizations",)
        cache = self.ctx._cache
        if key not in cache:
            built = set()
            for call in self.ctx.nodes(cst.Call):
                if (self.ctx.call_name(call) or "").endswith("register_parametrization") and len(call.args) >= 3:
                    arg = call.args[2].value
                    if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Name):
                        built.add(arg.func.value)
            cache[key] = built
        if cls.name.value not in cache[key]:  # type: ignore[operator]
            return None
        regime = self.ctx.regime
        if regime is not None and regime.half_params is not None:
            return DTypeFact(F16, LIKELY, f"`{name}` is the parameter `{cls.name.value}` parametrizes, in a half model",
                             regime.half_params)
        return DTypeFact(F32, LIKELY, f"`{name}` is the parameter `{cls.name.value}` parametrizes (float32: autocast "
                                      "casts the inputs of ops, not parameters)")

    def required_complex(self, fn: cst.FunctionDef) -> frozenset:
        """The parameters ``fn`` raises on unless they are complex: a statement of its body, before
        anything else it computes, ``if <test>: raise ...`` whose test is false only when they are
        (``not (a.is_complex() and b.is_complex())``, ``a.dtype not in (torch.cfloat, ...)``,
        ``not torch.is_complex(a) or ...``). torchaudio's MVDR functions check so; autocast casts
        floating tensors only, so what the function computes from them is complex, never float16."""
        key = ("required_complex", fn)
        cache = self.ctx._cache
        if key not in cache:
            names: set = set()
            body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
            for stmt in body:
                if isinstance(stmt, cst.SimpleStatementLine) and all(
                        isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString))
                        for s in stmt.body):
                    continue  # the docstring
                if not (isinstance(stmt, cst.If) and stmt.orelse is None and _only_raises(stmt.body)):
                    break
                names |= self._complex_when_false(stmt.test)
            cache[key] = frozenset(names)
        return cache[key]  # type: ignore[return-value]

    def _complex_when_false(self, test: cst.BaseExpression) -> set:
        """The names ``test`` being false proves complex."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._complex_when_true(test.expression)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
            return self._complex_when_false(test.left) | self._complex_when_false(test.right)
        return self._complex_dtype_test(test, negated=True)

    def _complex_when_true(self, test: cst.BaseExpression) -> set:
        """The names ``test`` being true proves complex."""
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._complex_when_true(test.left) | self._complex_when_true(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._complex_when_false(test.expression)
        if isinstance(test, cst.Call):
            args = [a.value for a in test.args if a.keyword is None and not a.star]
            if isinstance(test.func, cst.Attribute) and test.func.attr.value == "is_complex" and not args \
                    and isinstance(test.func.value, cst.Name):
                return {test.func.value.value}
            if self.ctx.call_name(test) == "torch.is_complex" and len(args) == 1 and isinstance(args[0], cst.Name):
                return {args[0].value}
            return set()
        return self._complex_dtype_test(test, negated=False)

    def _complex_dtype_test(self, test: cst.BaseExpression, negated: bool) -> set:
        """``x.dtype in (torch.cfloat, torch.cdouble)`` / ``x.dtype == torch.cfloat`` (``not in`` /
        ``!=`` when ``negated``): the set {x} when the test's truth (its falsity, negated) proves x
        complex."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return set()
        left, target = test.left, test.comparisons[0]
        if not (isinstance(left, cst.Attribute) and left.attr.value == "dtype" and isinstance(left.value, cst.Name)):
            return set()
        op = target.operator
        wanted = (cst.NotIn, cst.NotEqual) if negated else (cst.In, cst.Equal)
        if not isinstance(op, wanted):
            return set()
        right = target.comparator
        items = [e.value for e in right.elements] if isinstance(right, (cst.Tuple, cst.List, cst.Set)) else [right]
        if items and all(self.ctx.qualname(i) in _COMPLEX_DTYPES for i in items):
            return {left.value.value}
        return set()

    def _from_callers(self, fn: cst.FunctionDef, name: str) -> Optional[DTypeFact]:
        """What the callers of ``fn`` pass for ``name``: float16 when one passes float16, UNKNOWN
        (not float16) when every one passes a value known not to be float16, None when they do not
        say (no callers seen, or some pass a value of unknown dtype)."""
        from .callers import passed_by_name, passed_values
        key = (self.ctx.path, self.ctx.order(fn), name)  # (the def, not its name: two classes' forward)
        if key in _ASKING:
            _CUTS[0] += 1
            return None  # mutual recursion through callers: nothing more to learn
        _ASKING.add(key)
        named: List[_Heard] = []
        try:
            facts = [self._heard(p) for p in passed_values(self, fn, name, elsewhere=False)]
            own = len(facts)
            facts.extend(self._heard_elsewhere(fn, name))
            method = fn.name.value
            # (also when the calls seen pass values of no known dtype and none float16: a metric's
            # ``update`` called by its subclasses' ``super().update(preds, target)`` only, and from
            # outside through ``metric_fn.update(...)`` over a dict of metric objects, T10-3)
            if (not facts or not any(h.fact.is_half or h.known for h in facts)) and method != "forward" \
                    and not (method.startswith("__") and method.endswith("__")) \
                    and self.ctx.enclosing_class(fn) is not None:
                named = [self._heard(p) for p in passed_by_name(self, fn, name) or ()]
        finally:
            _ASKING.discard(key)
        if named and all(h.known and not h.fact.is_half for h in named):
            # No call resolves to this method, but every call written with its name passes a value
            # known not to be float16 (ai-toolkit's trainer: ``self.sd.scale_loss(loss)`` after
            # ``loss = F.mse_loss(pred.float(), target.float(), reduction="none")``, on a model object
            # it is handed): those are the calls that run it. (They only clear the regime's guess:
            # a float16 value passed by a call of that name may be another class's.)
            return _widest_passed(named, name, fn, "by the calls of that name ({where})")
        weighed = facts
        dead = [h for h in facts if h.fact.is_half and h.fact.assumed and _dead(h)]
        if dead and len(dead) < len(facts):
            # a call in a method nothing in the project calls (``called_nowhere``) never runs: where what it
            # passes is float16 only by the regime's guess, the calls that do run say what the parameter
            # gets (alphafold3-pytorch's ``log(t)``: the uncalled ``c_noise(sigma)`` took ``sigma`` float16
            # from the regime, T21-5)
            weighed = [h for h in facts if not any(h is d for d in dead)]
        for h in weighed:
            fact = h.fact
            if fact.is_half:
                return DTypeFact(F16, LIKELY, f"`{name}` of `{fn.name.value}` is passed a float16 value at "
                                              f"{h.path}:{_line(h)} ({fact.why})".replace(" ()", ""), fact.evidence,
                                 assumed=fact.assumed)
        if weighed and all(h.known for h in weighed):
            # Every caller passes float32 / bfloat16 / a non-tensor. Say so with a dtype, so that a
            # helper this parameter is passed on to sees a known value, not an unknown one (which
            # would send it back to the regime: a method's fp32 argument taken as float16 one call
            # further down).
            return _widest_passed(weighed, name, fn, "by {where}")
        private = fn.name.value.startswith("_") and not fn.name.value.endswith("__")
        # (so is a public method of a class reached by a training entry point that only its class
        # calls, no other file calling anything of that name: ultralytics' ``calculate_angle_loss``
        # on the assigned ground-truth boxes; code outside the project calls into library code, which
        # the library policy judges under any float16 use, not into a training program's classes)
        regime = self.ctx.regime
        public = not fn.name.value.startswith("_") and fn.name.value != "forward" and regime is not None \
            and not regime.any_fp16_use and regime.override is None and self.ctx.enclosing_class(fn) is not None
        seen = self.seen_calls(fn, private_methods=True, public_methods=public) if facts and (private or public) else None
        if seen is not None and len(seen[0]) == own:
            # Every call of this private helper (module-level, or a method only its class calls) is
            # seen, and none passes float16;
            # what some pass is of a dtype nothing here tells (an extension kernel's scores, a
            # mapping's entry). The regime's guess is for arguments that come from where no call is
            # seen (``forward``'s inputs; a public helper, which code outside the project may call:
            # the library policy's "any float16 use"): a private helper's callers are all there is,
            # and they do not say float16.
            return UNKNOWN
        return None

    @staticmethod
    def _heard(p) -> _Heard:
        from .callers import in_method_called_nowhere
        """What the call ``p`` (a ``callers.Passed``) passes, weighed by its file's model."""
        if p.value is None:
            fact, known = UNKNOWN, False
        else:
            fact = p.model.passed_dtype(p.call, p.value)
            known = fact.dtype is not None or p.model.not_floating(p.value)
        ctx = p.model.ctx

        def where() -> str:
            caller = ctx.enclosing_function(p.call)  # named, not positioned: positions cost a pass
            return f"`{caller.name.value}`" if caller is not None else "module code"
        return _Heard(fact, known, p.path, lambda: ctx.line_of(p.call), where,
                      lambda: in_method_called_nowhere(ctx, p.call))

    def _heard_elsewhere(self, fn: cst.FunctionDef, name: str) -> List[_Heard]:
        """What the calls of ``fn`` in other project files pass for ``name``, worked out once per
        run and worker process (``callers.project_passed_once`` names them): every file whose analysis
        reaches this helper asks it again, and the callers' files are parsed for it. An answer is
        kept only when nothing was cut short while it was worked out (then it does not depend on
        which question led to it); the project facts read for it are kept with it and noted again
        for each file that uses it (the results cache's dependencies)."""
        from .callers import memoised_with_reads, project_passed_once
        ctx = self.ctx
        project = ctx.project
        if project is None or not ctx.imports.module_name:
            return []

        def heard() -> List[_Heard]:
            out = []
            for p in project_passed_once(self, fn, name):
                h = self._heard(p)
                out.append(_Heard(h.fact, h.known, h.path, _line(h) if h.fact.is_half else 0,
                                  _where(h) if h.fact.dtype is not None else "",
                                  h.fact.is_half and h.fact.assumed and _dead(h)))
            return out
        cuts = _CUTS[0]
        return memoised_with_reads(project, "heard_elsewhere", (ctx.path, ctx.order(fn), name), heard,
                                   keep=lambda: _CUTS[0] == cuts)

    def not_a_tensor(self, expr: cst.BaseExpression) -> bool:
        """A value that is no torch tensor: a number or string literal, a numpy array (``np.*``
        calls, directly or through a local name)."""
        for _ in range(4):
            if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) \
                    or self.ctx.number(expr) is not None:
                return True
            if isinstance(expr, cst.Call):
                name = self.ctx.call_name(expr) or ""
                return name.startswith(("numpy.", "np."))
            if isinstance(expr, cst.Name):
                value = self.value_of(expr)
                if value is None:
                    return False
                expr = value
                continue
            return False
        return False

    def not_floating(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A value that is no floating-point tensor: no tensor at all (``not_a_tensor``), or a boolean
        or integer one by how it is made: ``~mask`` (bitwise not raises on a floating tensor), a
        comparison (``lengths > 0``, ``x == pad``), ``.bool()`` / ``.long()`` / ``.int()``, ``.eq()``
        / ``.ne()`` / ``torch.logical_not(...)``, through local names (FastCorrect's duration predictor
        is passed ``src_masks = ~encoder_padding_mask``: its ``x_nonpadding.sum(1)`` is no float16 sum
        in a half model)."""
        if depth > 4:
            return False
        if self.not_a_tensor(expr):
            return True
        if isinstance(expr, cst.UnaryOperation):
            return isinstance(expr.operator, (cst.BitInvert, cst.Not))
        if isinstance(expr, cst.Comparison):
            return True
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            return value is not None and self.not_floating(value, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _NOT_FLOATING_METHODS:
                return True
            name = self.ctx.call_name(expr) or ""
            return name.startswith("torch.") and name.rsplit(".", 1)[-1] in _NOT_FLOATING_FUNCTIONS
        return False

    # ---- self.attributes ---------------------------------------------------------------------
    def init_attribute(self, node: cst.CSTNode, attr: str) -> Optional[cst.BaseExpression]:
        """The expression assigned to ``self.<attr>`` in the ``__init__`` of the class holding
        ``node`` (the last assignment wins; ``ctx.semantic.init_attribute``)."""
        return self.ctx.init_attribute(node, attr)

    # ---- expressions -------------------------------------------------------------------------
    def dtype_of(self, expr) -> DTypeFact:
        if not isinstance(expr, cst.CSTNode):
            return UNKNOWN
        if expr in self._memo:
            fact = self._memo[expr]
            if fact is _PENDING:
                _CUTS[0] += 1
                return UNKNOWN
            return fact
        tentative = self._tentative.get(expr)
        if tentative is not None:
            _CUTS[0] += 1  # (what is worked out from it is tentative too)
            return tentative
        if self._depth > 40:
            _CUTS[0] += 1
            return UNKNOWN
        self._memo[expr] = _PENDING  # cycles resolve to unknown
        self._depth += 1
        _OUTERMOST[0] += 1
        cuts = _CUTS[0]
        try:
            fact = self._dtype(expr)
        finally:
            self._depth -= 1
            _OUTERMOST[0] -= 1
            if _CUTS[0] != cuts:
                del self._memo[expr]
        if _CUTS[0] == cuts:
            self._memo[expr] = fact
        else:
            self._tentative[expr] = fact
            _TENTATIVE.append((self, expr))
        if not _OUTERMOST[0]:
            _flush()
        return fact

    def _value_dtype(self, value, at: cst.CSTNode) -> DTypeFact:
        if isinstance(value, tuple):
            if value[0] == "part":
                element = self._unpacked_return(value[1], value[2]) if len(value) > 2 else None
                return element if element is not None else self.dtype_of(value[1])
            if value[0] == "param" and len(value) == 3:  # a def's (a lambda's is ("param", binding))
                return self._param_dtype(value[1], value[2])
            if value[0] == "aug":
                aug: cst.AugAssign = value[1]
                before = self._name_before(aug.target, aug)
                if before.dtype in (F16, BF16, F32):
                    # ``scores -= torch.log(p.float() + eps)`` on a tensor is ``scores.sub_(...)``: an
                    # in-place op keeps its destination's dtype (Transformers4Rec's float16 logits,
                    # then filled with -1e37)
                    return before
                return _widest([before, self.dtype_of(aug.value)])
            if value[0] == "for" and value[1].value is not None:
                return self._loader_item(value[1].value)
            return UNKNOWN
        return self.dtype_of(value)

    def _loader_item(self, iterable: cst.CSTNode) -> DTypeFact:
        """What a loop over a data loader binds (``for x, y in loader:``, through ``enumerate`` /
        ``tqdm``): a batch of input data, float32 (or integer labels), which autocast does not cast;
        UNKNOWN for any other loop. A loader is a ``DataLoader(...)`` (directly, or the value of the
        name or ``self`` attribute looped over) or a name or attribute named for one
        (``train_loader``, ``dataloader``)."""
        for _ in range(3):
            if isinstance(iterable, cst.Call) and iterable.args and not iterable.args[0].star \
                    and (self.ctx.call_name(iterable) or "").rsplit(".", 1)[-1] in _LOOP_WRAPPERS:
                iterable = iterable.args[0].value
                continue
            break
        if not self._data_loader(iterable):
            return UNKNOWN
        return DTypeFact(F32, LIKELY, f"`{self.ctx.code(iterable)[:40]}` gives batches of input data, which autocast "
                                      "does not cast")

    def _data_loader(self, expr: cst.CSTNode) -> bool:
        if isinstance(expr, cst.Call):
            return (self.ctx.call_name(expr) or "") in _DATA_LOADERS
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            if isinstance(value, cst.Call) and (self.ctx.call_name(value) or "") in _DATA_LOADERS:
                return True
            return bool(_LOADER_NAME.search(expr.value))
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            value = self.init_attribute(expr, expr.attr.value)
            if isinstance(value, cst.Call) and (self.ctx.call_name(value) or "") in _DATA_LOADERS:
                return True
            return bool(_LOADER_NAME.search(expr.attr.value))
        return False

    def _name_before(self, name: cst.Name, stmt) -> DTypeFact:
        return self._lookup(name)

    def _lookup(self, name: cst.Name) -> DTypeFact:
        value = self._binding(name)
        if value is None:
            return UNKNOWN
        fact = self._value_dtype(value, name)
        if fact.is_half and fact.assumed and self._autocast_turned_off(name):
            # the regime's guess is that the arguments of code under fp16 autocast are its float16
            # activations; code that turns autocast off around its use of the argument (``with
            # autocast(enabled=False):`` without a cast, ``custom_fwd(cast_inputs=torch.float32)``)
            # is written for float32 inputs, which its callers do not contradict (FunASR's SOND
            # ``F.normalize(profile)`` of the speaker profiles from ``forward(**batch)``)
            return DTypeFact(None, LIKELY, f"`{name.value}` is used where autocast is turned off, and no caller "
                                           "passes it a float16 value")
        if fact.dtype != F16:
            # ``if use_sigmoid: p = x.sigmoid()`` / ``else: p = softmax(x)``: float16 on one branch
            # is float16 for the code after both (the hazard is on that path)
            for other in self._other_branch_values(name):
                branch = self._value_dtype(other, name)
                if branch.dtype == F16:
                    return branch
        return fact

    def _autocast_turned_off(self, node: cst.CSTNode) -> bool:
        """Does ``node`` lie in a region of its function that turns autocast off (``autocast(enabled=
        False)``, ``custom_fwd(cast_inputs=torch.float32)``), lexically?"""
        region = self.ctx.region_of(node)
        return region is not None and (not region.enabled or region.dtype == F32)

    def _other_branch_values(self, name: cst.Name) -> List[object]:
        """The values ``name`` holds after an ``if`` / ``else`` whose other branch binds it too, besides
        the one ``lookup`` sees (bindings on exclusive branches of one ``if``; an ``if`` that rebinds
        the name on one side only, ``if x.dtype == torch.float16: x = x.float()``, is not joined)."""
        reaching = self.ctx.semantic.reaching(name.value, name)
        if len(reaching) < 2:
            return []
        seen, out = reaching[0], []
        for b in reaching[1:]:
            if b.kind not in ("assign", "walrus") or b.value is None or not self._exclusive_branches(seen, b):
                continue
            out.append(("part", b.value) if b.part else b.value)
        return out

    def _exclusive_branches(self, a, b) -> bool:
        """Bindings ``a`` and ``b`` sit on the two sides of one ``if`` (its body and its ``else`` /
        ``elif``)."""
        ctx = self.ctx
        for node in ctx.ancestors(a.anchor):
            if isinstance(node, cst.If) and ctx.is_ancestor(node, b.anchor):
                return ctx.is_ancestor(node.body, a.anchor) != ctx.is_ancestor(node.body, b.anchor)
        return False

    def _dtype(self, e: cst.CSTNode) -> DTypeFact:
        if isinstance(e, cst.Name):
            return self._lookup(e)
        if isinstance(e, cst.Attribute):
            attr = e.attr.value
            if attr in _SCALAR_ATTRS:
                return UNKNOWN
            if attr in _VIEW_ATTRS:
                inner = self.dtype_of(e.value)
                regime = self.ctx.regime
                if attr == "grad" and inner.dtype is None and regime is not None and regime.half_params is not None:
                    # ``p.grad`` of a half model's parameter (pure fp16; with master weights the
                    # half model's own gradients, before they are copied to float32): float16
                    return DTypeFact(F16, LIKELY, "`.grad` of a half model's parameter", regime.half_params)
                if inner.dtype == COMPLEX and attr in _COMPLEX_TO_REAL:
                    return DTypeFact(F32, inner.confidence, f"`.{attr}` of a complex tensor is float32")
                return inner
            if isinstance(e.value, cst.Name) and e.value.value == "self":
                return self._self_attribute(e)
            if isinstance(e.value, cst.Name):
                field = self._returned_field(e.value, attr)
                if field is not None:
                    return field
            return UNKNOWN
        if isinstance(e, cst.Subscript):
            entry = self._entry_dtype(e) if _string_keyed(e) else None
            if entry is not None:
                return entry
            base = self.dtype_of(e.value)
            if base.assumed and _string_keyed(e) and not _PREDICTION_KEY.search(self.ctx.code(e.slice[0].slice.value)):
                # ``features["token_embeddings"]`` of an argument only assumed to be an activation:
                # a string key says the argument is a mapping (a batch, a features dict), whose
                # entries are masks, ids, data and outputs of layers (a LayerNorm's: float32 under
                # autocast) alike, not one float16 activation. A model's predictions
                # (``outputs["pred_logits"]``, scores: a final Linear's output) keep the regime's answer.
                return UNKNOWN
            return base
        if isinstance(e, cst.UnaryOperation):
            if isinstance(e.operator, (cst.BitInvert, cst.Not)):
                return UNKNOWN  # ``~mask``: a bool / integer tensor (bitwise not raises on a floating one)
            return self.dtype_of(e.expression)
        if isinstance(e, cst.IfExp):
            return _widest([self.dtype_of(e.body), self.dtype_of(e.orelse)])
        if isinstance(e, cst.BinaryOperation):
            return self._binary(e)
        if isinstance(e, cst.Call):
            return self._call(e)
        return UNKNOWN

    def _self_attribute(self, e: cst.Attribute) -> DTypeFact:
        value = self.init_attribute(e, e.attr.value)
        if value is None:
            return self._buffer(e)
        if isinstance(value, cst.Call):
            name = self.ctx.call_name(value) or ""
            if name.endswith("Parameter"):
                regime = self.ctx.regime
                if regime is not None and regime.half_params is not None:
                    return DTypeFact(F16, LIKELY, f"`self.{e.attr.value}` is a parameter of a pure-half model",
                                     regime.half_params)
                return DTypeFact(F32, LIKELY, f"`self.{e.attr.value}` is a float32 parameter")
            return UNKNOWN
        return UNKNOWN

    def _buffer(self, e: cst.Attribute) -> DTypeFact:
        """``self.bias`` registered by its class as ``self.register_buffer("bias", torch.tril(
        torch.ones(n, n)))``: a buffer of the dtype it was made with, float16 only when the model is
        half (``.half()`` casts buffers too; autocast does not). A float16 activation times such a
        float32 buffer is float32 (microsoft/LoRA's GPT-2 attention: ``w * b - 1e10 * (1 - b)``)."""
        cls = self.ctx.enclosing_class(e)
        if cls is None:
            return UNKNOWN
        buffers = self._buffers.get(cls)
        if buffers is None:
            buffers = self._buffers[cls] = {}
            for call in self.ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "register_buffer" \
                        and isinstance(func.value, cst.Name) and func.value.value == "self" and len(call.args) >= 2 \
                        and isinstance(call.args[0].value, cst.SimpleString) and self.ctx.enclosing_class(call) is cls:
                    name = call.args[0].value.evaluated_value
                    if isinstance(name, str):
                        buffers.setdefault(name, []).append(call.args[1].value)
        values = buffers.get(e.attr.value)
        if not values or len(values) != 1:
            return UNKNOWN
        fact = self.dtype_of(values[0])
        if fact.dtype != F32:
            return UNKNOWN
        regime = self.ctx.regime
        if regime is not None and regime.half_params is not None:
            return DTypeFact(F16, LIKELY, f"`self.{e.attr.value}` is a buffer of a pure-half model", regime.half_params)
        return DTypeFact(F32, LIKELY, f"`self.{e.attr.value}` is a float32 buffer")

    def _binary(self, e: cst.BinaryOperation) -> DTypeFact:
        op = e.operator
        if isinstance(op, cst.MatrixMultiply):
            return self._apply_policy("__matmul__", "`@`", e, [self.dtype_of(e.left), self.dtype_of(e.right)])
        left, right = self.dtype_of(e.left), self.dtype_of(e.right)
        if isinstance(op, cst.Power) and left.dtype is None and self._surely_tensor(e.left):
            # ``(out.sigmoid() * 2) ** 2``: a tensor's ``__pow__``, on autocast's float32 list whatever
            # its input's dtype (YOLOP's box regression in a loop over its predictions, set 22 T22-2)
            return self._apply_policy("__pow__", "`**`", e, [left, right])
        if isinstance(op, (cst.Power, cst.Divide)) and left.dtype is None and right.dtype is None:
            # ``head_dim ** -0.5``, ``1 / math.sqrt(d)``: most likely Python numbers; autocast's
            # float32 policy for ``__pow__`` / ``__rtruediv__`` applies to tensors only.
            return UNKNOWN
        if isinstance(op, cst.Power):
            return self._apply_policy("__pow__" if left.dtype else "__rpow__", "`**`", e, [left, right])
        if isinstance(op, cst.Divide) and left.dtype is None and self.ctx.number(e.left) is not None:
            # ``1 / x`` is Tensor.__rtruediv__ (reciprocal), on autocast's fp32 list.
            return self._apply_policy("__rtruediv__", "`c / x`", e, [right])
        # A Python number does not promote a tensor (``h + 1e-8`` keeps h's dtype), so it leaves
        # the tensor's fact as it is, certainty included.
        if left.dtype is not None and right.dtype is None and self.ctx.number(e.right) is not None:
            return left
        if right.dtype is not None and left.dtype is None and self.ctx.number(e.left) is not None:
            return right
        # Neither does a 0-dim tensor of the same category (``attn / torch.sqrt(torch.tensor(d))``
        # stays float16: torch.result_type ranks dimensioned tensors above 0-dim ones).
        left_0d, right_0d = self._zero_dim(e.left), self._zero_dim(e.right)
        if left.dtype is not None and right_0d and not left_0d:
            return left
        if right.dtype is not None and left_0d and not right_0d:
            return right
        # An argument only assumed float16 (``DTypeFact.assumed``) against a tensor of unknown dtype:
        # under autocast the data (ground-truth boxes, targets) is float32, and promotion takes the
        # wider, so the result is not known to be float16 (mmdet's YOLOX ``gt[:, 2:] / priors[:, 2:]``).
        for half, other, expr in ((left, right, e.right), (right, left, e.left)):
            if half.is_half and half.assumed and other.dtype is None and self._tensor_indexed(expr):
                return UNKNOWN
        return _widest([left, right])

    def _surely_tensor(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Is ``expr`` a tensor, not a Python number, by how it is made: a method only tensors have
        (``x.sigmoid()``, ``.exp()``, ``.float()``, an op of autocast's lists), a ``torch.*`` call, a
        tensor index (``x[:, 2:4]``), arithmetic with such a value, through local names."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            return value is not None and self._surely_tensor(value, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self._surely_tensor(expr.left, depth + 1) or self._surely_tensor(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self._surely_tensor(expr.expression, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self._tensor_indexed(expr)
        if isinstance(expr, cst.Call):
            func = expr.func
            name = self.ctx.call_name(expr) or ""
            if name.startswith("torch.") and not name.startswith(("torch.Size", "torch.finfo", "torch.iinfo")):
                return True
            if isinstance(func, cst.Attribute) and not name.startswith(("math.", "numpy.", "np.")):
                method = func.attr.value
                return method in _TENSOR_METHODS or method in _CASTS or autocast_ops.policy(method) != "keep"
        return False

    def _tensor_indexed(self, expr: cst.BaseExpression) -> bool:
        """``x[:, 2:]``, ``x[..., 0]``: an index only a tensor (or array) takes, so a tensor, not a
        Python number; through one local name."""
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            expr = value if value is not None else expr
        if not isinstance(expr, cst.Subscript):
            return False
        return len(expr.slice) > 1 or any(
            isinstance(s.slice, cst.Index) and isinstance(s.slice.value, cst.Ellipsis) for s in expr.slice)

    def _zero_dim(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Is ``expr`` a 0-dim tensor built from a number: ``torch.tensor(k.shape[-1])``, through
        casts, moves and elementwise functions (``torch.sqrt(...)``, ``.to(torch.float32)``), or a
        name bound to one?"""
        if depth > 8:
            return False
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            return value is not None and self._zero_dim(value, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        name = self.ctx.call_name(expr) or ""
        args = [a.value for a in expr.args if a.keyword is None and not a.star]
        if name in ("torch.tensor", "torch.as_tensor", "torch.scalar_tensor") and args:
            return not isinstance(args[0], (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)) \
                and self.dtype_of(args[0]).dtype is None  # a number, not a tensor copied
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _ZERO_DIM_ELEMENTWISE and args:
            return self._zero_dim(args[0], depth + 1)
        func = expr.func
        if isinstance(func, cst.Attribute) and (func.attr.value in _ZERO_DIM_ELEMENTWISE or func.attr.value in _CASTS
                                                or func.attr.value in ("to", "type", "cuda", "cpu")):
            return self._zero_dim(func.value, depth + 1)
        return False

    def _apply_policy(self, op: str, label: str, node: cst.CSTNode, inputs: List[DTypeFact]) -> DTypeFact:
        complex_input = next((i for i in inputs if i.dtype == COMPLEX), None)
        if complex_input is not None:
            # autocast casts floating-point tensors only: an op on a complex tensor stays complex
            if op in _COMPLEX_TO_REAL:
                return DTypeFact(F32, complex_input.confidence, f"{label} of a complex tensor is float32")
            return complex_input
        kind = autocast_ops.policy(op)
        state = self.autocast_at(node)
        if state.active:
            if kind == "lower":
                return DTypeFact(state.dtype, state.confidence,
                                 f"{label} runs in {state.dtype} under autocast", state.evidence)
            if kind in ("fp32", "banned"):
                return DTypeFact(F32, state.confidence, f"{label} runs in float32 under autocast", state.evidence)
            if kind == "promote":
                return _widest(inputs)
        known = [i for i in inputs if i.dtype is not None]
        if kind == "promote":
            return _widest(inputs)
        return known[0] if known else UNKNOWN

    def _sequence_dtypes(self, seq: cst.BaseExpression) -> List[DTypeFact]:
        """The dtypes of the tensors a list / tuple literal or a comprehension holds (what
        ``torch.stack`` / ``torch.cat`` joins): ``[torch.norm(p.grad) for p in params]``."""
        if isinstance(seq, (cst.List, cst.Tuple)):
            return [self.dtype_of(e.value) for e in seq.elements if isinstance(e, cst.Element)]
        if isinstance(seq, (cst.ListComp, cst.GeneratorExp)):
            return [self.dtype_of(seq.elt)]
        if isinstance(seq, cst.Name):
            # ``parts = [qkv]``, ``parts.append(op(qkv))``, then ``torch.cat(parts, dim=1)``
            # (efficientvit's multi-scale qkv): the list's elements and what the function appends
            value = self.value_of(seq)
            if not isinstance(value, cst.List):
                return []
            out = self._sequence_dtypes(value)
            fn = self.ctx.enclosing_function(seq)
            for call in self.ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "append" and isinstance(func.value, cst.Name) \
                        and func.value.value == seq.value and call.args and self.ctx.enclosing_function(call) is fn:
                    out.append(self.dtype_of(call.args[0].value))
            return out
        return []

    def _dtype_argument(self, call: cst.Call) -> Optional[DTypeFact]:
        """What a ``dtype=`` / positional dtype argument (``.to(torch.float32)``) says."""
        for a in call.args:
            if a.keyword is not None and a.keyword.value != "dtype":
                continue
            name = self.ctx.qualname(a.value)
            if name in _COMPLEX_DTYPES:
                return DTypeFact(COMPLEX, CERTAIN, "cast to a complex dtype")
            if name in FLOAT16_NAMES:
                return DTypeFact(F16, CERTAIN, "cast to float16")
            if name in BFLOAT16_NAMES:
                return DTypeFact(BF16, CERTAIN, "cast to bfloat16")
            if name in FLOAT32_NAMES:
                return DTypeFact(F32, CERTAIN, "cast to float32")
            if isinstance(a.value, cst.Attribute) and a.value.attr.value == "dtype":
                return self.dtype_of(a.value.value)
            chosen = self._chosen_dtype(a.value)
            if chosen is not None:
                return chosen
        return None

    def _chosen_dtype(self, expr: cst.BaseExpression) -> Optional[DTypeFact]:
        """A dtype picked by a condition, written in place or held by a local: ``dtype = torch.float16
        if self.use_fp16 else torch.float32`` then ``x.to(dtype)`` (StyleGAN's per-layer mixed
        precision by hand, M13-2). Float16 ("likely") when a branch is float16 and its condition is
        no literal False: the layers that take the flag run their activations in float16; the
        branches' one dtype when they agree; None when a branch is no dtype name."""
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            if not isinstance(value, cst.IfExp):
                return None
            expr = value
        if not isinstance(expr, cst.IfExp):
            return None
        # (the condition under which a leaf is picked, whether it is picked when that is false, dtype)
        leaves: List[Tuple[Optional[cst.BaseExpression], bool, str]] = []
        todo: List[Tuple[Optional[cst.BaseExpression], bool, cst.BaseExpression]] = [(None, False, expr)]
        while todo:
            test, negated, e = todo.pop()
            if isinstance(e, cst.IfExp):
                todo.append((e.test, False, e.body))
                todo.append((e.test, True, e.orelse))
                continue
            name = self.ctx.qualname(e)
            d = F16 if name in FLOAT16_NAMES else BF16 if name in BFLOAT16_NAMES else \
                F32 if name in FLOAT32_NAMES else None
            if d is None:
                return None
            leaves.append((test, negated, d))
        leaves = [(test, negated, d) for test, negated, d in leaves  # (a branch a literal condition never picks)
                  if not (isinstance(test, cst.Name) and test.value == ("True" if negated else "False"))]
        for test, negated, d in leaves:
            if d == F16 and test is not None:
                when = f"not `{self.ctx.code(test)}`" if negated else f"`{self.ctx.code(test)}`"
                return DTypeFact(F16, LIKELY, f"cast to float16 when {when} (a dtype picked per layer: "
                                              f"`{self.ctx.code(expr)}`)")
        kinds = {d for _, _, d in leaves}
        if len(kinds) == 1:
            d = kinds.pop()
            return DTypeFact(d, LIKELY, f"cast to {d}")
        return None

    def _mapped(self, call: cst.Call) -> Optional[DTypeFact]:
        """``map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))`` (unpacked into
        ``q, k, v``): each element keeps its dtype through a reshape, so the parts have the
        elements' dtype (all alike: the widest)."""
        func = call.func
        if not (isinstance(func, cst.Name) and func.value == "map" and not self.ctx.imports.binds("map")
                and len(call.args) == 2 and not any(a.keyword or a.star for a in call.args)):
            return None
        fn, seq = call.args[0].value, call.args[1].value
        if not (isinstance(fn, cst.Lambda) and len(fn.params.params) == 1 and not isinstance(fn.params.star_arg, cst.Param)
                and isinstance(seq, (cst.Tuple, cst.List)) and seq.elements):
            return None
        if not _reshapes(self.ctx, fn.body, fn.params.params[0].name.value):
            return None
        facts = [self.dtype_of(el.value) for el in seq.elements if isinstance(el, cst.Element)]
        if len(facts) != len(seq.elements) or any(f.dtype is None for f in facts):
            return None
        return _widest(facts)

    def _tensor_argument(self, arg: cst.BaseExpression) -> Optional[DTypeFact]:
        """The dtype ``x.to(other)`` takes from a tensor ``other``; None when ``other`` may be a
        device (a string, ``x.device``, a name that holds no known tensor)."""
        if isinstance(arg, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return None
        if isinstance(arg, cst.Attribute) and arg.attr.value in _SCALAR_ATTRS:
            return None
        fact = self.dtype_of(arg)
        if fact.dtype is None:
            return None
        return DTypeFact(fact.dtype, fact.confidence, f"`.to({self.ctx.code(arg)})` takes its dtype: {fact.why}",
                         fact.evidence)

    def _explicit_dtype(self, call: cst.Call) -> Optional[DTypeFact]:
        """``dtype=torch.float32`` (or a positional ``torch.float32``) given to an op that takes
        an output dtype (softmax, sum, ...): that dtype, whatever autocast would pick."""
        for a in call.args:
            if a.keyword is not None and a.keyword.value != "dtype":
                continue
            name = self.ctx.qualname(a.value)
            for names, d in ((FLOAT16_NAMES, F16), (BFLOAT16_NAMES, BF16), (FLOAT32_NAMES, F32)):
                if name in names:
                    return DTypeFact(d, CERTAIN, f"`dtype={name}` gives {d}")
        return None

    def module_class(self, func: cst.BaseExpression) -> Optional[str]:
        """The qualified class an object being called was built from (``self.crit`` with
        ``self.crit = nn.BCELoss()`` in ``__init__``, or a local ``crit = nn.BCELoss()``)."""
        return self._module_class(func)

    def _module_class(self, func: cst.BaseExpression) -> Optional[str]:
        """The class a called object was built from: ``self.fc`` with ``self.fc = nn.Linear(...)``."""
        value = self.module_built(func)
        return self.ctx.call_name(value) if value is not None else None

    def module_built(self, func: cst.BaseExpression) -> Optional[cst.Call]:
        """The call that built a called object (``nn.BatchNorm1d(d, affine=False)`` for ``self.bn``
        or a local ``bn``, through ``.to(device)`` / ``.cuda()``), with its arguments; None when
        it is not known."""
        value = None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            value = self.init_attribute(func, func.attr.value)
        elif isinstance(func, cst.Name):
            b = self._binding(func)
            value = b if isinstance(b, cst.BaseExpression) else None
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in _SAME_MODULE_METHODS:
            value = value.func.value  # ``Aligner(dim).cuda()``: the module built
        return value if isinstance(value, cst.Call) else None

    def _call(self, call: cst.Call) -> DTypeFact:
        ctx = self.ctx
        func = call.func
        mapped = self._mapped(call)
        if mapped is not None:
            return mapped
        name = ctx.call_name(call) or ""
        if (name in _EINOPS_RESHAPES or name in _SCATTERS) and args_positional(call):
            # ``rearrange(scores, "b 1 q k -> q b k")``: a view of its input, in its dtype; ``scatter(src,
            # index, ...)``: sums of ``src`` into bins, in its dtype
            return self.dtype_of(args_positional(call)[0])
        head = name.split(".", 1)[0]
        is_function = bool(name) and (head == "torch" or ctx.imports.binds(head)) and not (
            isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self")
        args = [a.value for a in call.args if not a.star]
        if isinstance(func, cst.Attribute) and not (is_function and head != func.value):
            method = func.attr.value
            receiver = func.value
        else:
            method, receiver = None, None
        if is_function:
            method, receiver = None, None
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            # self.fc(x): a submodule built in __init__, not a tensor method
            cls = self._module_class(func)
            if cls is not None:
                return self._module_call(cls, call, args)
            return self._returned(self._callee(call))
        if method is not None:
            drawn = self._distribution_method(receiver, method, call)
            if drawn is not None:
                return drawn
        if method in _NOT_FLOATING_METHODS and not is_function:
            return UNKNOWN  # ``mask.bool()``, ``x.eq(pad)``, ``scores.argmax(-1)``: no floating tensor
        # explicit casts
        if method in _CASTS and not args:
            d = _CASTS[method]
            return DTypeFact(d, CERTAIN, f"`.{method}()` gives {d}")
        if method in ("to", "type", "cuda"):
            d = self._dtype_argument(call)
            if d is None and method == "to" and args and call.args[0].keyword is None:
                d = self._tensor_argument(args[0])  # ``.to(q)``: q's dtype (and device)
            if d is not None:
                return d
            moved = self.dtype_of(receiver)
            if moved.assumed and method != "type" and (args or method == "cuda"):
                # ``noisy = noisy.to(self.device)``: activations are on the device already; what is
                # moved there is input data (a waveform, a batch), and autocast casts the inputs of
                # its ops, never the data: float32 under fp16 autocast.
                return DTypeFact(F32, LIKELY, f"`{self.ctx.code(receiver)}` is moved to a device: input data, "
                                              "which autocast does not cast")
            return moved
        if method in _CONJUGATES and not args:
            inner = self.dtype_of(receiver)
            if inner.dtype is None or inner.assumed:
                return DTypeFact(COMPLEX, LIKELY, f"`.{method}()` is taken of complex tensors (on a real one it does "
                                                  "nothing), which autocast does not cast")
            return inner
        if method == "type_as" and args:
            return self.dtype_of(args[0])
        if method in _SCALAR_METHODS:
            return UNKNOWN
        if method in _NEW:
            d = self._dtype_argument(call)
            return d if d is not None else self.dtype_of(receiver)
        if is_function and name.startswith("torch."):
            short = name.rsplit(".", 1)[-1]
            if short in _CONJUGATES and args:
                inner = self.dtype_of(args[0])
                if inner.dtype is None or inner.assumed:
                    return DTypeFact(COMPLEX, LIKELY, f"`{name}` is taken of complex tensors (on a real one it does "
                                                      "nothing), which autocast does not cast")
                return inner
            if short in _TO_COMPLEX and (name.startswith("torch.fft.") or short in ("view_as_complex", "complex", "polar")):
                return DTypeFact(COMPLEX, CERTAIN, f"`{name}` gives a complex tensor, which autocast does not cast")
            if short in _CONSTRUCTORS:
                d = self._dtype_argument(call)
                if d is not None:
                    return d
                return DTypeFact(F32, LIKELY, f"`{name}` creates a float32 tensor") if short != "tensor" else UNKNOWN
            if short in _LIKE:
                d = self._dtype_argument(call)
                return d if d is not None else (self.dtype_of(args[0]) if args else UNKNOWN)
            if short in _SPARSE_VALUES:
                d = self._dtype_argument(call)
                i = _SPARSE_VALUES[short]
                return d if d is not None else (self.dtype_of(args[i]) if len(args) > i else UNKNOWN)
            op = short
            if ".linalg." in name:
                op = "linalg_" + short
            if op in autocast_ops.OPT_DTYPE:
                d = self._explicit_dtype(call)
                if d is not None:
                    return d
            inputs = [self.dtype_of(a) for a in args]
            if op in ("stack", "cat", "concat", "concatenate", "hstack", "vstack") and args:
                inputs = self._sequence_dtypes(args[0]) or inputs
            elif op == "einsum" and len(args) == 2 and isinstance(args[1], (cst.List, cst.Tuple)):
                inputs = self._sequence_dtypes(args[1]) or inputs  # einsum(eq, [a, b]): the operands' list form
            return self._apply_policy(op, f"`{name}`", call, inputs)
        if method is not None and method in autocast_ops.OPT_DTYPE:
            d = self._explicit_dtype(call)
            if d is not None:
                return d
        if method is not None:
            inputs = [self.dtype_of(receiver), *[self.dtype_of(a) for a in args]]
            if inputs[0].dtype is None and autocast_ops.policy(method) == "keep":
                # x.something() on a receiver of unknown dtype: nothing to say, unless it is a module
                cls = self._module_class(func)
                if cls is not None:
                    return self._module_call(cls, call, args)
                if isinstance(receiver, cst.Name) and receiver.value == "self":
                    return UNKNOWN
                return UNKNOWN
            if autocast_ops.policy(method) == "keep":
                return inputs[0] if inputs[0].dtype is not None else UNKNOWN
            return self._apply_policy(method, f"`.{method}()`", call, inputs)
        cls = self._module_class(func)
        if cls is not None:
            return self._module_call(cls, call, args)
        if isinstance(func, cst.Name) and _looks_like_model(func.value) and not ctx.imports.binds(func.value):
            # model(x): an nn.Module call (of the class its parameter's annotation names, when that is
            # a Hugging Face model: ``transformer: PreTrainedModel``)
            return self._module_call(self._annotated_model(func) or func.value, call, args)
        return self._returned(self._callee(call))

    def _callee(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """The function of this file a call runs: ``f(...)`` for a module-level ``def f`` (not
        rebound locally), ``self.m(...)`` for a method of the enclosing class, or for a function
        ``__init__`` stored as ``self.m = f``."""
        func = call.func
        defs = self.ctx._cache.get("module_functions")
        if defs is None:
            defs = {s.name.value: s for s in self.ctx.module.body if isinstance(s, cst.FunctionDef)}
            self.ctx._cache["module_functions"] = defs
        if isinstance(func, cst.Name):
            bound = self._binding(func)
            if self.ctx.imports.binds(func.value) or not (bound is None or isinstance(bound, tuple) and bound[0] == "def"
                                                                    and isinstance(bound[1].scope.node, cst.Module)):
                return None  # rebound to something else than the module's def
            return defs.get(func.value)  # type: ignore[union-attr]
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            cls = self.ctx.enclosing_class(call)
            if cls is None:
                return None
            for stmt in cls.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == func.attr.value:
                    return stmt
            alias = self.init_attribute(call, func.attr.value)
            if isinstance(alias, cst.Name):
                return defs.get(alias.value)  # type: ignore[union-attr]
        return None

    def returned_values(self, call: cst.Call) -> List[cst.BaseExpression]:
        """The values the ``return`` statements of the function of this file that ``call`` runs
        give back (``_callee``); empty when the callee is not known."""
        fn = self._callee(call)
        if fn is None:
            return []
        return [r.value for r in self.ctx.nodes(cst.Return)
                if r.value is not None and self.ctx.enclosing_function(r) is fn]

    def _unpacked_return(self, value: cst.CSTNode, target: cst.CSTNode) -> Optional[DTypeFact]:
        """``rays_o, rays_d = get_rays(poses)`` with every ``return`` of the project function a tuple
        literal of that length: the dtype of the element ``target`` unpacks, when every return says
        and none is float16 (as ``_returned``: read once for all callers). None otherwise. The call may
        be bound to a name first (``y_pred = model(x)``, then ``mel, ..., attn_soft, _ = y_pred``)."""
        if isinstance(value, cst.Name):
            value = self.value_of(value)
        if not isinstance(value, cst.Call):
            return None
        element, unpacked = self.ctx.parent(target), None
        if isinstance(element, cst.Element):
            unpacked = self.ctx.parent(element)
        if not isinstance(unpacked, (cst.Tuple, cst.List)) or not isinstance(self.ctx.parent(unpacked), cst.AssignTarget) \
                or any(isinstance(e, cst.StarredElement) for e in unpacked.elements):
            return None
        index = next(i for i, e in enumerate(unpacked.elements) if e is element)
        # (also a module-level function another project file defines: radtts' inference program unpacks
        # ``parse_data_from_batch(batch)`` imported from train.py, T18-4)
        callee = self._callee_returns(value)
        if callee is None:
            return None
        model, fn, returns = callee
        if not returns or not all(isinstance(r, cst.Tuple) and len(r.elements) == len(unpacked.elements)
                                  and not any(isinstance(e, cst.StarredElement) for e in r.elements) for r in returns):
            return None
        elements = [r.elements[index].value for r in returns]
        widest = self._returned_dtype(value, model, elements)
        if widest is None:
            return None
        return DTypeFact(widest.dtype, LIKELY, f"`{fn.name.value}` returns {widest.dtype} as element {index + 1} "
                                               f"of its tuple", widest.evidence)

    def _returned_dtype(self, value: cst.Call, model: "PrecisionModel",
                        elements: List[cst.BaseExpression]) -> Optional[DTypeFact]:
        """The widest dtype of what a callee returns at ``value`` (tuple elements, an output record's field),
        when every one is known, none is float16 and it holds where ``value`` is called."""
        facts = [model.dtype_of(e) for e in elements]
        if not all(f.dtype is not None for f in facts):
            return None
        widest = _widest(facts)
        if widest.dtype == F16 or not self._holds_at(value, model, elements):
            return None
        return widest

    def _callee_returns(self, call: cst.Call) -> Optional[Tuple["PrecisionModel", cst.FunctionDef,
                                                                 List[cst.BaseExpression]]]:
        """(the callee's precision model, its def, the values its ``return`` statements give) for a
        call of a function of this file, a project module's ``forward`` (any file) or a module-level
        function another project file defines; None when the callee is not known."""
        fn = self._callee(call)
        if fn is not None:
            return self, fn, self.returned_values(call)
        forward = self._called_forward(call)
        if forward is None:
            imported = _imported_function(self.ctx, call)
            if imported is None:
                return None
            forward = (self.model_for(imported[0]), imported[1])
        model, fn = forward
        return model, fn, model.return_values(fn)

    def _returned_field(self, base: cst.Name, field: str, depth: int = 0) -> Optional[DTypeFact]:
        """``out.fft_softmax_preds`` after ``out = self.head(x)`` whose ``forward`` returns
        ``HeadOutput(reconstruction=..., fft_softmax_preds=torch.softmax(...))``: the dtype of what
        the callee stored in that field of the output dataclass / NamedTuple / ``ModelOutput`` it
        builds (a keyword, or a positional argument by the class's annotated fields), also through a
        local the callee returns (``output = HeadOutput(...)``; ``return output``). As
        ``_unpacked_return``: when every return that builds an object says and none is float16. A
        return of a tuple has no such attribute (the attribute read never sees it), and the caller's
        ``if isinstance(out, tuple): out = HeadOutput(*out)`` re-wraps the same fields, so the read
        looks through it to the call (granite-tsfm's TSPulse decoder head, set 21 T21-4). None when
        it is not known."""
        if depth > 2:
            return None
        value = self.value_of(base)
        if isinstance(value, cst.Call) and len(value.args) == 1 and value.args[0].star == "*" \
                and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == base.value:
            return self._returned_field(value.args[0].value, field, depth + 1)  # ``out = Output(*out)``
        if not isinstance(value, cst.Call):
            return None
        found = self._callee_returns(value)
        if found is None:
            return None
        model, fn, returns = found
        elements = []
        for r in returns:
            if isinstance(r, cst.Name):
                bound = model.value_of(r)
                r = bound if bound is not None else r
            if isinstance(r, (cst.Tuple, cst.List)) or (isinstance(r, cst.Call) and isinstance(r.func, cst.Name)
                                                        and r.func.value in ("tuple", "list")):
                continue  # a tuple has no attribute ``field``: not what the read sees
            if not isinstance(r, cst.Call):
                return None
            element = _field_argument(model.ctx, r, field)
            if element is None:
                return None
            elements.append(element)
        if not elements:
            return None
        widest = self._returned_dtype(value, model, elements)
        if widest is None:
            return None
        if not all(model.autocast_at(e).active or model._float32_whatever_autocast(e) for e in elements):
            # read with autocast off (library code: the users' autocast is out of sight), a layer's
            # output is float32 only because its input is: under their fp16 autocast it is float16
            return None
        return DTypeFact(widest.dtype, LIKELY, f"`{fn.name.value}` returns {widest.dtype} in the field `{field}` "
                                               f"({widest.why})".replace(" ()", ""), widest.evidence)

    def _float32_whatever_autocast(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Is ``expr`` float32 with autocast on or off: an op on autocast's float32 list
        (``torch.softmax(...)``, ``x.log_softmax(-1)``), a cast to float32 (``.float()``), a factory
        with no dtype (``torch.zeros(1)``), moved (``.to(device)``); through every binding of a local
        that may reach it."""
        if depth > 6:
            return False
        ctx = self.ctx
        if isinstance(expr, cst.Name):
            reaching = ctx.semantic.reaching(expr.value, expr)
            return bool(reaching) and all(b.kind == "assign" and not b.part and isinstance(b.value, cst.BaseExpression)
                                          and self._float32_whatever_autocast(b.value, depth + 1) for b in reaching)
        if not isinstance(expr, cst.Call):
            return False
        name = ctx.call_name(expr) or ""
        func = expr.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method in _CASTS:
            return _CASTS[method] == F32 and not expr.args
        if method in ("to", "cuda", "cpu", "contiguous", "detach", "clone"):
            d = self._dtype_argument(expr)
            if d is not None:
                return d.dtype == F32
            if method == "to" and expr.args and expr.args[0].keyword is None \
                    and self.dtype_of(expr.args[0].value).dtype is not None:
                return False  # ``.to(q)``: q's dtype
            return self._float32_whatever_autocast(func.value, depth + 1)  # a move keeps the dtype
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _CONSTRUCTORS and name.rsplit(".", 1)[-1] != "tensor":
            d = self._dtype_argument(expr)
            return d is None or d.dtype == F32
        op = method if method is not None and not name.startswith("torch.") else name.rsplit(".", 1)[-1]
        return bool(op) and autocast_ops.policy(op) == "fp32"

    def _holds_at(self, call: cst.Call, model: "PrecisionModel", values) -> bool:
        """Do the dtypes the callee's returns have in its own body hold for ``call``? Under autocast at
        the call, only where the callee's body is read under autocast too: a matmul of float32
        inputs read with autocast off is float16 under the caller's autocast."""
        if not self.autocast_at(call).active:
            return True
        return all(model.autocast_at(v).active for v in values)

    def return_values(self, fn: cst.FunctionDef) -> List[cst.BaseExpression]:
        """The values the ``return`` statements of this file's function ``fn`` give back."""
        return [r.value for r in self.ctx.nodes(cst.Return)
                if r.value is not None and self.ctx.enclosing_function(r) is fn]

    def _called_forward(self, call: cst.Call) -> Optional[Tuple["PrecisionModel", cst.FunctionDef]]:
        """The ``forward`` a call of a project module object runs (``soft = aligner(mel, text)`` after
        ``aligner = Aligner(dim).cuda()``, ``self.attention(...)`` after ``self.attention =
        ConvAttention(...)``), with the precision model of its file; None for other calls."""
        cls = self._module_class(call.func)
        if cls is None or cls.startswith("torch."):
            return None
        return self._module_forward(cls)

    def _module_forward(self, cls: str) -> Optional[Tuple["PrecisionModel", cst.FunctionDef]]:
        """The ``forward`` of the project class named ``cls`` here (its own or an inherited one): a
        class of this file, or one the project index resolves in another file."""
        key = ("module_forward", cls)
        cache = self.ctx._cache
        if key in cache:
            return cache[key]  # type: ignore[return-value]
        cache[key] = None  # recursion ends here
        ctx = self.ctx
        found = None
        local = None if "." in cls else next(
            (s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls), None)
        if local is not None:
            found = self._forward_in(ctx, local.name.value)
            if found is not None:
                found = (self, found)
        index = ctx.project_index
        if found is None and index is not None and ctx.imports.module_name:
            dotted = f"{ctx.imports.module_name}.{cls}" if local is not None else cls
            sym = index.resolve(f"{dotted}.forward", ctx.imports.module_name)
            opened = definition_of(ctx, sym) if sym is not None and sym.kind == "function" \
                and sym.qualname.count(".") == 1 else None
            if opened is not None:
                found = (self.model_for(opened[0]), opened[1])
        cache[key] = found
        return found

    @staticmethod
    def _forward_in(ctx: FileContext, cls: str) -> Optional[cst.FunctionDef]:
        owner = next((s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls), None)
        if owner is None or not isinstance(owner.body, cst.IndentedBlock):
            return None
        return next((s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None)

    def _forward_returned(self, call: cst.Call) -> Optional[DTypeFact]:
        """What a project module's ``forward`` returns, when every ``return`` says and none is
        float16 (``return self.softmax(attn)``: float32 under autocast), for a call of the module
        under autocast. None when it does not say."""
        forward = self._called_forward(call)
        if forward is None:
            return None
        model, fn = forward
        values = model.return_values(fn)
        facts = [model.dtype_of(v) for v in values]
        if not values or any(f.dtype in (None, F16) for f in facts) or not self._holds_at(call, model, values):
            return None
        widest = _widest(facts)
        owner = model.ctx.enclosing_class(fn)
        return DTypeFact(widest.dtype, LIKELY, f"`{owner.name.value if owner else ''}.forward` returns {widest.dtype}"
                                               f" ({widest.why})".replace(" ()", ""), widest.evidence)

    def _returned(self, fn: Optional[cst.FunctionDef]) -> DTypeFact:
        """What a project function returns, when every ``return`` says and none is float16: a
        helper that returns ``torch.rand(...).float()`` gives float32 to its caller. (A float16
        result is not taken from here: the returns are read once for all callers, and a helper that
        passes its argument through would make every caller's value float16 for one float16 caller.)"""
        if fn is None:
            return UNKNOWN
        return _guarded(self.ctx._cache, ("returns", fn), UNKNOWN, lambda: self._returns(fn))  # (recursion: unknown)

    def _returns(self, fn: cst.FunctionDef) -> DTypeFact:
        values = [r.value for r in self.ctx.nodes(cst.Return)
                  if r.value is not None and self.ctx.enclosing_function(r) is fn]
        facts = [self.dtype_of(v) for v in values]
        if facts and all(f.dtype is not None for f in facts):
            widest = _widest(facts)
            if widest.dtype != F16:
                return DTypeFact(widest.dtype, LIKELY, f"`{fn.name.value}` returns {widest.dtype}", widest.evidence)
        return UNKNOWN

    def _half_weights(self, call: cst.Call, short: str) -> Optional[DTypeFact]:
        """Under half weights (pure fp16, or a half model with fp32 master weights: DeepSpeed fp16),
        a layer with weights computes in its weights' dtype whatever its input says (token ids into
        an ``nn.Embedding``, then an ``nn.Linear``): float16."""
        regime = self.ctx.regime
        if regime is None or regime.half_params is None or not _WEIGHTED_LAYER.match(short):
            return None
        if not self.model_code(self.ctx.enclosing_function(call)):
            return None
        return DTypeFact(F16, LIKELY, f"`nn.{short}` has float16 weights in a half model", regime.half_params)

    def _module_call(self, cls: str, call: cst.Call, args) -> DTypeFact:
        short = cls.rsplit(".", 1)[-1]
        inputs = [self.dtype_of(a) for a in args]
        if cls.startswith("torch.nn.") or short in autocast_ops.MODULE_OPS:
            op = autocast_ops.MODULE_OPS.get(short)
            if op is None:
                return inputs[0] if inputs and inputs[0].dtype else UNKNOWN  # Dropout, ReLU, ...
            half = self._half_weights(call, short)
            if half is not None and not self.autocast_at(call).active:
                return half
            return self._apply_policy(op, f"`nn.{short}`", call, inputs)
        # A user nn.Module: under autocast its output is (likely) the autocast dtype, unless its
        # forward says otherwise (a Softmax / log_softmax / ``.float()`` output is float32).
        state = self.autocast_at(call)
        if state.active and hf_models.hidden_states_not_half(self._outside_name(cls)):
            # a Hugging Face base model: its hidden states come out of a LayerNorm, float32 under
            # autocast (HanLP's ``cls_hidden[~cls_mask] = -1e20`` on BERT's output, unseen set 17 T17-3);
            # a pooler's tanh(Linear) is float16: which output is read decides, so nothing is said
            return DTypeFact(None, LIKELY, f"`{short}` is a Hugging Face base model: under autocast its hidden "
                                           "states are LayerNorm outputs (float32)")
        if state.active:
            returned = self._forward_returned(call)
            if returned is not None:
                return returned
            if self._holds_no_layers(cls):
                # a module with no layers, parameters or buffers (ultralytics' TaskAlignedAssigner:
                # hyper-parameters only) makes no activation of its own: what it returns is what its
                # ops make of its inputs (gathered ground-truth boxes), and its forward did not say
                return DTypeFact(None, LIKELY, f"`{short}` holds no layers: its output is no activation")
            return DTypeFact(state.dtype, LIKELY, f"`{short}` module output under autocast", state.evidence)
        regime = self.ctx.regime
        if inputs and inputs[0].dtype == F32 and regime is not None and (
                regime.half_params is not None or regime.launcher is not None or regime.any_fp16_use):
            # float32 input data into a model whose weights may be half, or under an autocast out of
            # sight (a launcher's): what it computes is not its input's dtype
            return UNKNOWN
        return inputs[0] if inputs and inputs[0].dtype else UNKNOWN

    def _distribution_method(self, receiver: cst.BaseExpression, method: str, call: cst.Call) -> Optional[DTypeFact]:
        """``normal.cdf(z)`` with ``normal = Normal(loc, scale)``: a torch.distributions method whose
        source ends in an op on autocast's float32 list (``torch_api.distributions``) is float32 under
        autocast, whatever its parameters' dtype (botorch's ``normal.cdf(z).clamp_min(1e-8)``, unseen
        set 18 T18-3); None otherwise, and outside autocast (pure half keeps the parameters' dtype)."""
        built = receiver if isinstance(receiver, cst.Call) else (
            self.value_of(receiver) if isinstance(receiver, cst.Name) else None)
        if not isinstance(built, cst.Call):
            return None
        found = torch_distributions.float32_method(self.ctx.call_name(built), method)
        if found is None:
            return None
        state = self.autocast_at(call)
        if not state.active:
            return None
        cls, op = found
        return DTypeFact(F32, state.confidence, f"`{cls}.{method}` ends in `{op}`, which runs in float32 under "
                                                f"autocast", state.evidence)

    def _outside_name(self, cls: str) -> Optional[str]:
        """``cls`` (a class or builder as this file names it) as named outside the project, through
        project modules re-exporting it; ``cls`` itself where no project index knows."""
        index = self.ctx.project_index
        return index.outside_name(cls) if index is not None and "." in cls else cls

    def _annotated_model(self, name: cst.Name) -> Optional[str]:
        """The Hugging Face model class a parameter's annotation names (``transformer: PreTrainedModel``),
        as this file names it; None for anything else."""
        b = self._binding(name)
        if not (isinstance(b, tuple) and b[0] == "param" and isinstance(b[2], cst.Param) and b[2].annotation):
            return None
        annotation = b[2].annotation.annotation
        cls = self.ctx.qualname(annotation) if isinstance(annotation, (cst.Name, cst.Attribute)) else None
        return cls if cls is not None and hf_models.model_class(self._outside_name(cls)) else None

    def _holds_no_layers(self, cls: str) -> bool:
        """Is the project class ``cls`` (as this file names it), and the class its ``forward`` is
        defined in, an ``nn.Module`` holding nothing but plain values: every ``self.x = ...`` of its
        methods a literal, a name or arithmetic on them (no call but of a builtin), nothing registered
        (``register_buffer``, ``add_module``, ...), its bases ``nn.Module`` or such classes?"""
        key = ("no_layers", cls)
        cache = self.ctx._cache
        if key not in cache:
            cache[key] = False  # recursion ends here
            forward = self._module_forward(cls)
            found = self._class_def(cls)
            cache[key] = forward is not None and found is not None and all(
                model._plain_class(c, 0) for model, c in
                (found, (forward[0], forward[0].ctx.enclosing_class(forward[1]))))
        return cache[key]  # type: ignore[return-value]

    def _class_def(self, cls: str) -> Optional[Tuple["PrecisionModel", cst.ClassDef]]:
        """The definition of the project class named ``cls`` here, with its file's model."""
        ctx = self.ctx
        if "." not in cls:
            local = next((s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls), None)
            if local is not None:
                return self, local
        index = ctx.project_index
        if index is None or not ctx.imports.module_name:
            return None
        sym = index.resolve(cls, ctx.imports.module_name)
        if sym is None or sym.kind != "class" or "." in sym.qualname:
            return None
        opened = definition_of(ctx, sym)
        return (self.model_for(opened[0]), opened[1]) if opened is not None else None

    def _plain_class(self, cls: Optional[cst.ClassDef], depth: int) -> bool:
        ctx = self.ctx
        if cls is None or depth > 3:
            return False
        for base in cls.bases:
            name = ctx.qualname(base.value) or ""
            if name in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                continue
            found = self._class_def(ctx.code(base.value)) if isinstance(base.value, (cst.Name, cst.Attribute)) else None
            if found is None or not found[0]._plain_class(found[1], depth + 1):
                return False
        called = {call.func.attr.value for call in ctx.nodes(cst.Call)
                  if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)
                  and call.func.value.value == "self" and ctx.is_ancestor(cls, call)}
        for b in ctx.semantic.attributes_of(cls):
            if b.value is None or not _plain_value(b.value):
                return False
            if b.name in called and not _plain_literal(b.value):
                # ``self._module = module`` then ``self._module(reshaped)``: a module handed in and run (allennlp's
                # TimeDistributed, B14-4), whatever its value looks like
                return False
        for call in ctx.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _REGISTERS \
                    and ctx.is_ancestor(cls, call):
                return False
        return True


# Calls that give a module something it holds (a buffer, a parameter, a submodule).
_REGISTERS = {"register_buffer", "register_parameter", "add_module", "register_module"}
_PLAIN_CALLS = {"int", "float", "bool", "str", "list", "tuple", "dict", "set", "len", "max", "min", "abs", "round",
                "sorted", "range"}


def _plain_literal(expr: cst.CSTNode) -> bool:
    """A number, string or ``None`` / ``True`` / ``False`` written out: nothing that can be called."""
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)) or \
        isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")


def _plain_value(expr: cst.CSTNode) -> bool:
    """A value with no call but of a builtin (``stride if stride is not None else [8, 16, 32]``)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and not (isinstance(node.func, cst.Name) and node.func.value in _PLAIN_CALLS):
            return False
        if isinstance(node, (cst.Lambda, cst.FunctionDef)):
            return False
        stack.extend(node.children)
    return True


_DATASET_BASES = ("torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torch.utils.data.dataset.Dataset",
                  "torch.utils.data.dataset.IterableDataset")


def _handed_to(ctx: FileContext, built: cst.Call) -> Optional[List[cst.Call]]:
    """The calls the object ``built`` makes is handed to, as an argument (``AudioDataset(
    WhisperFrontend())``) or through a local name every use of which is one; None when it goes
    anywhere else."""
    def receiver(node: cst.CSTNode) -> Optional[cst.Call]:
        arg = ctx.parent(node)
        outer = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        return outer if isinstance(outer, cst.Call) and outer.func is not node else None

    direct = receiver(built)
    if direct is not None:
        return [direct]
    parent = ctx.parent(built)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return None
    binding = ctx.semantic.binding_of(parent.targets[0].target)
    uses = ctx.semantic.uses(binding) if binding is not None else []
    calls = [receiver(u) for u in uses]
    return calls if calls and all(c is not None for c in calls) else None  # type: ignore[return-value]


def precision_model(ctx: FileContext) -> PrecisionModel:
    model = ctx._cache.get("precision")
    if model is None:
        model = ctx._cache["precision"] = PrecisionModel(ctx)
    return model  # type: ignore[return-value]


def _unpacked_index(ctx, target: cst.CSTNode) -> Optional[int]:
    """The position of ``target`` in the tuple it is unpacked into (``model, opt, it = f(...)``), or None."""
    element = ctx.parent(target)
    tup = ctx.parent(element) if isinstance(element, cst.Element) else None
    if not isinstance(tup, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in tup.elements):
        return None
    return next((i for i, e in enumerate(tup.elements) if e is element), None)


def _returned_argument(ctx, call: cst.Call, index: Optional[int]) -> Optional[cst.BaseExpression]:
    """What ``call`` passes for the parameter its function returns as handed in (element ``index`` of the
    tuple it returns), when the function is a module-level function of this file or one it imports from the
    project, every ``return`` of it returns that parameter there and it never rebinds it; else None."""
    if not isinstance(call.func, cst.Name):
        return None
    if ctx.imports.binds(call.func.value):
        found = _imported_function(ctx, call)
        if found is None:
            return None
        fn_ctx, fn = found
    else:
        fn_ctx = ctx
        fn = next((s for s in ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == call.func.value), None)
    if fn is None:
        return None
    returned, scope = None, None
    for ret in fn_ctx.nodes(cst.Return):
        if fn_ctx.enclosing_function(ret) is not fn:
            continue
        scope = fn_ctx.semantic.scope_of(ret)
        value = ret.value
        if index is not None:
            if not isinstance(value, cst.Tuple) or index >= len(value.elements) \
                    or isinstance(value.elements[index], cst.StarredElement):
                return None
            value = value.elements[index].value
        if not isinstance(value, cst.Name) or returned not in (None, value.value):
            return None
        returned = value.value
    params = [p.name.value for p in fn.params.params]
    if returned is None or returned not in params:
        return None
    if scope is None or any(b.kind != "param" for b in fn_ctx.semantic.bindings(returned, scope)):
        return None  # rebound inside: ``model = model.module``
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == returned:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    i = params.index(returned)
    if any(a.star for a in positional[:i + 1]):
        return None
    return positional[i].value if i < len(positional) else None


def _field_argument(ctx, built: cst.Call, field: str) -> Optional[cst.BaseExpression]:
    """What the construction ``built`` of a record class (a dataclass, NamedTuple, ``ModelOutput``)
    stores in ``field``: its keyword argument of that name, or the positional argument in the place
    of that field among the class's annotated fields (a class of the same file). None when it does
    not say (no such argument, ``*`` / ``**`` arguments, a class not found)."""
    func = built.func
    last = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    if not last[:1].isupper() or any(a.star for a in built.args):
        return None  # a class is named in CamelCase; a function's keyword is no field
    for a in built.args:
        if a.keyword is not None and a.keyword.value == field:
            return a.value
    positional = [a.value for a in built.args if a.keyword is None]
    if not positional or not isinstance(built.func, cst.Name):
        return None
    cls = next((s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == built.func.value), None)
    if cls is None or not isinstance(cls.body, cst.IndentedBlock):
        return None
    fields = [st.body[0].target.value for st in cls.body.body
              if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.AnnAssign)
              and isinstance(st.body[0].target, cst.Name)]
    if field not in fields or fields.index(field) >= len(positional):
        return None
    return positional[fields.index(field)]


def _imported_function(ctx, call: cst.Call) -> Optional[Tuple[FileContext, cst.FunctionDef]]:
    """(its file's context, the def) of the module-level function of another project file that ``call``
    (``f(...)`` of a name the file imports) runs; None otherwise."""
    if not isinstance(call.func, cst.Name) or not ctx.imports.binds(call.func.value):
        return None
    project = ctx.project
    index = getattr(project, "index", None) if project is not None else None
    target = ctx.imports.resolve(call.func.value)
    sym = index.resolve(target, ctx.imports.module_name or "") if index is not None and target else None
    if sym is None or sym.kind != "function" or "." in sym.qualname:
        return None
    return definition_of(ctx, sym)
