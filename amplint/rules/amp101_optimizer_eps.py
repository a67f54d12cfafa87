"""AMP101 optimizer-eps-underflow."""
from __future__ import annotations

import re
from typing import Dict, Iterable, Optional

import libcst as cst

from ..context.conditions import never_run_by_callers
from ..context.options import evaluated_names, option_default
from ..edits import append_arg, find_arg, is_number_literal, keyword, number_node
from ..findings import Confidence, Fix, Violation
from ..fp16 import FLOAT16, Representation, describe_in_half, fmt
from ..torch_api.optimizers import OPTIMIZERS
from ..prefilter import words
from .base import Rule, cited



# Hugging Face argument classes whose ``adam_epsilon`` (default 1e-8, transformers/training_args.py)
# is the eps of the AdamW the Trainer builds.
TRAINING_ARGUMENTS = {"TrainingArguments", "Seq2SeqTrainingArguments"}
HF_ADAM_EPSILON = 1e-8
# How a project's subclass of them is named (TimeMoETrainingArguments, LLM-Dojo's TrainArgument, MyArgs):
# only such a call is looked up in the class hierarchy, and the rule's ``needs`` says the same.
_ARGUMENTS_CLASS = re.compile(r"(?:Arguments?|Args)\b")
# ``optim=`` values whose optimizer takes no adam_epsilon (Adafactor, SGD, Lion, ...).
_HF_ADAM = ("adamw", "adam")


def optimizer_class(qualname) -> str:
    """``torch.optim.AdamW`` / ``torch.optim.adamw.AdamW`` -> ``AdamW``; '' otherwise."""
    if not qualname or not qualname.startswith("torch.optim."):
        return ""
    last = qualname.rsplit(".", 1)[-1]
    return last if last in OPTIMIZERS and qualname.count(".") <= 3 else ""


class OptimizerEpsUnderflow(Rule):
    code = "AMP101"
    name = "optimizer-eps-underflow"
    summary = "Optimizer eps that rounds to zero or a subnormal in float16, on half parameters"
    fix_safety = "safe"
    applies_under = "fp16 (pure half parameters)"
    # the optimizer's class, or the Hugging Face arguments class (or a project's subclass of it,
    # ``TimeMoETrainingArguments``), in the call or its import
    needs = words(OPTIMIZERS) + r"|\w*" + _ARGUMENTS_CLASS.pattern

    def check(self, ctx) -> Iterable[Violation]:
        regime = ctx.regime
        # (a half cast taken only in some runs, beside a mixed-precision option, is asked about too: in those
        # runs the optimizer steps float16 parameters)
        evidence = regime.half_optimizer_in_some_run if regime is not None else None
        if evidence is None:
            # Under mixed precision the parameters and optimizer state are float32: eps is fine.
            return
        for call in ctx.nodes(cst.Call):
            name = ctx.call_name(call) or ""
            cls = optimizer_class(name)
            if name.rsplit(".", 1)[-1] == "HfArgumentParser":
                v = self._parsed_arguments(ctx, call, evidence)
                if v is not None:
                    yield v
                continue
            hf = _hf_arguments_class(ctx, name)
            if hf is not None:
                last = name.rsplit(".", 1)[-1]
                v = self._hf_arguments(ctx, call, hf if last == hf else f"{last} (a {hf})", evidence)
                if v is not None:
                    yield v
                continue
            if not cls and isinstance(call.func, cst.Name):
                # ``optimizer_class = torch.optim.AdamW`` (or bitsandbytes' AdamW8bit under ``if args.use_8bit_adam:``,
                # the diffusers scripts) then ``optimizer_class(params, ..., eps=args.adam_epsilon)``
                cls = _class_held_in(ctx, call)
            if not cls and isinstance(call.func, cst.Call):
                # ``eval('torch.optim.' + optims[args.optim.lower()])(model.parameters(), ...)``: the optimizers the
                # string may name; one of them taking an eps is asked about (M17-1, sentiment-discovery)
                cls = next((c for c in map(optimizer_class, evaluated_names(ctx, call)) if c), "")
            if not cls:
                continue
            default, position = OPTIMIZERS[cls]
            model = _optimized_model(call)
            here = regime.half_optimizer_of(model, ctx.path, some_run=True)
            if here is None and model is None:
                # ``AdamW(params_to_optimize)``: a list the function fills with parameters of some models
                # (ControlNeXt: the U-Net's ``to_out`` parameters, which ``unet.to(dtype=weight_dtype)`` makes half)
                for listed in _listed_models(ctx, call):
                    here = regime.half_optimizer_of(listed, ctx.path, some_run=True)
                    if here is not None:
                        model = listed
                        break
            if here is None:
                continue  # this file casts other objects to half (a frozen VAE), not what this optimizer trains
            if model and ctx.project is not None and ctx.file is not None \
                    and ctx.project.own_model_dtype(ctx.file, model) not in (None, "float16"):
                continue  # this file loads the model it optimizes in bfloat16 / float32 itself
            arg = find_arg(call, "eps", position)
            if arg is None and any(a.star for a in call.args):
                continue  # ``*args`` / ``**kwargs`` may well pass an eps
            eps = default if arg is None else ctx.number(arg.value)
            if eps is None and model and isinstance(arg.value, cst.Attribute):
                # ``eps=args.adam_epsilon``: the option's default in this file (``add_argument("--adam_epsilon",
                # type=float, default=1e-08)``), what the run has unless its command line says otherwise; asked
                # only of an optimizer whose model is known to be half (not of ``[{"params": p}]`` beside another
                # object's half cast)
                given = option_default(ctx, arg.value.attr.value)
                eps = ctx.number(given) if given is not None else None
            if eps is None:
                continue
            kind = FLOAT16.classify(eps)
            if kind not in (Representation.ZERO, Representation.SUBNORMAL):
                continue
            where = "eps" if arg is not None else "default eps"
            message = (f"{cls} {where}={fmt(eps)} on float16 parameters: {describe_in_half(eps)}, so "
                       f"updates divide by ~0 and parameters become inf/NaN")
            yield Violation(arg.value if arg is not None else call.func, message, Confidence.CERTAIN,
                            self._fix(ctx, call, arg),
                            help=f"use eps >= {fmt(FLOAT16.smallest_normal)} (e.g. {ctx.code(number_node(ctx.settings.safe_eps))})",
                            evidence=cited(here, "parameters are float16"))

    def _hf_arguments(self, ctx, call: cst.Call, cls: str, evidence):
        """``TrainingArguments(...)`` on half parameters: the Trainer's AdamW gets ``adam_epsilon``,
        1e-8 unless given. Not on a branch no caller takes (``if args is None: args =
        TrainingArguments(...)`` in a trainer every caller hands its arguments)."""
        if never_run_by_callers(ctx, call):
            return None
        for a in call.args:
            if a.star == "*":
                return None
            if a.star == "**":
                keys = ctx.splat_keys(a.value)
                if keys is None or keys & {"adam_epsilon", "optim"}:
                    return None  # ``**kwargs`` may well set them
        fields = _own_defaults(ctx, call)
        if fields is None:
            return None  # a subclass whose own defaults are not literals: not known here
        optim = find_arg(call, "optim", None) or fields.get("optim")
        if optim is not None:
            value = optim.value
            if isinstance(value, cst.Attribute) and value.attr.value == "optim":
                # ``optim=args.optim``: the option's default in this file (a dataclass field, an argparse default)
                value = option_default(ctx, "optim") or value
            name = _string_or_default(value)
            if name is None or not name.lower().startswith(_HF_ADAM):
                return None  # adafactor, sgd, or not known here
        arg = find_arg(call, "adam_epsilon", None)
        own_eps = fields.get("adam_epsilon") if arg is None else None
        eps = ctx.number(own_eps.value) if own_eps is not None else \
            HF_ADAM_EPSILON if arg is None else ctx.number(arg.value)
        if eps is None or FLOAT16.classify(eps) not in (Representation.ZERO, Representation.SUBNORMAL):
            return None
        where = "adam_epsilon" if arg is not None else "the default adam_epsilon"
        message = (f"{cls} with {where}={fmt(eps)}: the Trainer's AdamW uses it as eps on float16 "
                   f"parameters, where {describe_in_half(eps)}, so updates divide by ~0 and parameters become "
                   f"inf/NaN; pass adam_epsilon >= {fmt(FLOAT16.smallest_normal)} (e.g. 1e-4). Parameters are "
                   f"float16 because of {evidence}")
        literal = number_node(ctx.settings.safe_eps)
        if arg is None:
            fix = Fix(f"Pass `adam_epsilon={ctx.code(literal)}`",
                      replacements=[(call, append_arg(call, keyword("adam_epsilon", literal)))])
        elif is_number_literal(arg.value):
            fix = Fix(f"Set `adam_epsilon={ctx.code(literal)}`", replacements=[(arg.value, literal)])
        else:
            fix = None
        return Violation(arg.value if arg is not None else call.func, message, Confidence.LIKELY, fix)

    def _parsed_arguments(self, ctx, call: cst.Call, evidence):
        """``HfArgumentParser((ModelArguments, TrainingArguments))`` on half parameters: the arguments come from the
        command line, where ``adam_epsilon`` is 1e-8 unless given; the launcher scripts that run the program are
        read for ``--adam_epsilon`` / ``--optim`` (ChatGLM-Efficient-Tuning's LoRA adapters made half by
        ``model.half()``, B51)."""
        if not call.args or _arguments_only_read(ctx, call):
            return None
        given = call.args[0].value
        elements = [e.value for e in given.elements] if isinstance(given, (cst.Tuple, cst.List)) else [given]
        for element in elements:
            hf = _hf_arguments_class(ctx, ctx.qualname(element) or "")
            if hf is None:
                continue
            project, path = ctx.project, ctx.file
            if project is not None and path is not None:
                if any(not v.lower().startswith(_HF_ADAM) for v in project.launcher_options(path, "optim")):
                    return None  # adafactor, sgd, ... in the program's runs
                passed = [FLOAT16.classify(float(v)) for v in project.launcher_options(path, "adam_epsilon")
                          if re.fullmatch(r"[0-9.eE+-]+", v)]
                if any(kind not in (Representation.ZERO, Representation.SUBNORMAL) for kind in passed):
                    return None  # the launcher passes a float16-normal eps
            last = ctx.code(element).rsplit(".", 1)[-1]
            cls = hf if last == hf else f"{last} (a {hf})"
            message = (f"{cls} parsed from the command line leaves adam_epsilon at its default 1e-8 unless "
                       f"--adam_epsilon is given: the Trainer's AdamW uses it as eps on float16 parameters, where "
                       f"{describe_in_half(HF_ADAM_EPSILON)}, so updates divide by ~0 and parameters become inf/NaN; "
                       f"pass --adam_epsilon >= {fmt(FLOAT16.smallest_normal)} (e.g. 1e-4). Parameters are float16 "
                       f"because of {evidence}")
            return Violation(element, message, Confidence.LIKELY, None)
        return None

    @staticmethod
    def _fix(ctx, call: cst.Call, arg) -> Fix:
        """``eps=`` set to ``safe-eps`` (1e-4 unless configured): a literal is replaced; a name
        (a module constant, a parameter's default, ``self.eps``) becomes ``max(<name>, 1e-4)`` so
        that a caller passing a larger eps keeps it."""
        safe = ctx.settings.safe_eps
        literal = number_node(safe)
        if arg is None:
            return Fix(f"Pass `eps={ctx.code(literal)}`", replacements=[(call, append_arg(call, keyword("eps", literal)))])
        value = arg.value
        if is_number_literal(value):
            return Fix(f"Set `eps={ctx.code(literal)}`", replacements=[(value, literal)])
        bounded = cst.Call(func=cst.Name("max"), args=[cst.Arg(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                                                       cst.Arg(literal)])
        return Fix(f"Raise eps to at least {ctx.code(literal)}: `eps=max(..., {ctx.code(literal)})`",
                   replacements=[(value, bounded)])


def _own_defaults(ctx, call: cst.Call) -> Optional[Dict[str, cst.Arg]]:
    """The ``adam_epsilon`` / ``optim`` defaults that the called arguments class of this file sets
    itself (``@dataclass class TrainArgument(TrainingArguments): optim: str = field(default=...)``),
    as arguments; {} for a class of another file or transformers' own; None when such a default is
    not a literal."""
    if not isinstance(call.func, cst.Name):
        return {}
    cls = next((c for c in ctx.module.body if isinstance(c, cst.ClassDef) and c.name.value == call.func.value), None)
    if cls is None or not isinstance(cls.body, cst.IndentedBlock):
        return {}
    out: Dict[str, cst.Arg] = {}
    for stmt in cls.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            target = small.target if isinstance(small, cst.AnnAssign) else \
                small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
            if not (isinstance(target, cst.Name) and target.value in ("adam_epsilon", "optim")) or small.value is None:
                continue
            value = small.value
            if isinstance(value, cst.Call) and (ctx.call_name(value) or "").endswith("field"):
                value = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "default"), None)
            if not isinstance(value, (cst.SimpleString, cst.Float, cst.Integer)):
                return None
            out[target.value] = cst.Arg(value=value)
    return out


def _string_or_default(value: cst.BaseExpression) -> Optional[str]:
    """A string literal, or the literal default of a config read (Time-MoE's ``optim=train_config.get('optim',
    'adamw_torch')``, ``getattr(args, 'optim', 'adamw_torch')``): what runs unless the config says otherwise."""
    if isinstance(value, cst.Call) and len(value.args) in (2, 3) and (
            isinstance(value.func, cst.Attribute) and value.func.attr.value == "get" and len(value.args) == 2
            or isinstance(value.func, cst.Name) and value.func.value == "getattr" and len(value.args) == 3):
        value = value.args[-1].value
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value
    return None


def _arguments_only_read(ctx, parser: cst.Call) -> bool:
    """The program parses Hugging Face training arguments only to read their fields (``training_args.fp16``
    to pick a load dtype, ``.output_dir``, ``.per_device_eval_batch_size``) and builds no trainer: each name
    ``parser.parse_*(...)`` binds to the arguments class is used only as ``name.<field>``, and no ``*Trainer``
    class is called in the file (tevatron's encode / rerank drivers, unseen set 19, T19-2: inference under
    no_grad, no optimizer, so no ``adam_epsilon``). Training arguments handed on whole (``Trainer(args=
    training_args)``, ``train(training_args)``) or taken from the parsed tuple by index keep the finding."""
    statement = ctx.parent(parser)
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 \
            or not isinstance(statement.targets[0].target, cst.Name) or not parser.args:
        return False
    given = parser.args[0].value
    classes = [e.value for e in given.elements] if isinstance(given, (cst.Tuple, cst.List)) else [given]
    at = next((i for i, e in enumerate(classes) if _hf_arguments_class(ctx, ctx.qualname(e) or "")), None)
    if at is None or any("Trainer" in (ctx.call_name(c) or "").rsplit(".", 1)[-1] for c in ctx.nodes(cst.Call)):
        return False
    name = statement.targets[0].target.value
    parses = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value.startswith("parse")
              and isinstance(c.func.value, cst.Name) and c.func.value.value == name]
    targets = []
    for c in parses:
        assign = ctx.parent(c)
        target = assign.targets[0].target if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(classes) \
                or not isinstance(target.elements[at].value, cst.Name):
            return False
        targets.append(target.elements[at].value)
    for target in targets:
        for ref in ctx.semantic.references(target.value):
            up = ctx.parent(ref)
            if ref is target or ref in targets or isinstance(up, cst.AnnAssign) and up.value is None:
                continue  # the binding itself, or ``training_args: TrainingArguments``
            if not (isinstance(up, cst.Attribute) and up.value is ref):
                return False
    return bool(targets)


def _hf_arguments_class(ctx, name: str) -> Optional[str]:
    """The Hugging Face arguments class that ``name`` (a called class, as the file resolves it) is
    or derives from: a project's ``@dataclass class TimeMoETrainingArguments(TrainingArguments)``
    gives the Trainer its ``adam_epsilon`` the same way."""
    last = name.rsplit(".", 1)[-1]
    if name.startswith("transformers.") and last in TRAINING_ARGUMENTS:
        return last
    if not _ARGUMENTS_CLASS.search(last):
        return None  # (the index is asked only of a class named for arguments: TrainArgument, MyArgs)
    index = ctx.project_index  # built from every summary: asked only for a candidate class
    if index is None:
        return None
    own = index.resolve(name, ctx.imports.module_name)
    if own is None and "." not in name and ctx.imports.module_name:
        own = index.symbol(f"{ctx.imports.module_name}.{name}")  # a class of this file, called by its name
    if own is None or own.kind != "class":
        return None
    for cls in sorted(TRAINING_ARGUMENTS):
        for base in (f"transformers.{cls}", f"transformers.training_args.{cls}",
                     f"transformers.training_args_seq2seq.{cls}"):
            if any(s.name == own.name for s in ctx.project.subclasses(base)):
                return cls
    return None


def _optimized_model(call: cst.Call) -> Optional[str]:
    """``unet`` in ``AdamW(unet.parameters())`` / ``AdamW(self.unet.parameters(), ...)``."""
    if not call.args or call.args[0].keyword is not None:
        return None
    value = call.args[0].value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in ("parameters", "named_parameters"):
        obj = value.func.value
        if isinstance(obj, cst.Attribute):
            return obj.attr.value
        if isinstance(obj, cst.Name):
            return obj.value
    return None


def _parameter_owners(ctx, node: cst.CSTNode) -> set:
    """Models whose parameters ``node`` holds: ``m.parameters()`` / ``m.named_parameters()`` inside it, or a
    loop over them around it (``for name, p in unet.named_parameters(): params.append(p)``)."""
    out = set()
    for inner in (*_calls_in(node), *(a.iter for a in ctx.ancestors(node) if isinstance(a, cst.For))):
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) \
                and inner.func.attr.value in ("parameters", "named_parameters"):
            obj = inner.func.value
            if isinstance(obj, (cst.Name, cst.Attribute)):
                out.add(obj.value if isinstance(obj, cst.Name) else obj.attr.value)
    return out


def _calls_in(node: cst.CSTNode):
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, cst.Call):
            yield n
        todo.extend(n.children)


def _listed_models(ctx, call: cst.Call) -> list:
    """The models whose parameters the optimizer's first argument, a name, holds: what the enclosing function
    assigns to it, appends / extends / adds to it before the call (``params_to_optimize = [{"params":
    controlnext.parameters()}]``, then ``params_to_optimize.append({"params": para})`` in a loop over
    ``unet.named_parameters()``)."""
    if not call.args or call.args[0].keyword is not None or not isinstance(call.args[0].value, cst.Name):
        return []
    name, fn, at = call.args[0].value.value, ctx.enclosing_function(call), ctx.order(call)
    found: set = set()
    for stmt in ctx.nodes(cst.SimpleStatementLine):
        if ctx.order(stmt) >= at or (fn is not None and not ctx.is_ancestor(fn, stmt)) \
                or ctx.enclosing_function(stmt) is not fn:
            continue
        for small in stmt.body:
            fills = isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets) \
                or isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and small.target.value == name \
                or isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value in ("append", "extend") \
                and isinstance(small.value.func.value, cst.Name) and small.value.func.value.value == name
            if fills:
                found |= _parameter_owners(ctx, small)
    return sorted(found)


def _class_held_in(ctx, call: cst.Call) -> str:
    """The torch optimizer class a name called as ``call``'s function is assigned in the enclosing function
    (``optimizer_class = torch.optim.AdamW``); '' when none."""
    name, fn = call.func.value, ctx.enclosing_function(call)
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) \
                and assign.targets[0].target.value == name and ctx.enclosing_function(assign) is fn:
            cls = optimizer_class(ctx.qualname(assign.value))
            if cls:
                return cls
    return ""
