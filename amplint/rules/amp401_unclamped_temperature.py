"""AMP401 unclamped-learnable-temperature."""
from __future__ import annotations

import math
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from ..config import ConfigError, logit_scale_max_text
from ..context import products as P
from ..context.instances import frozen_everywhere, parts_taken_everywhere
from ..context.precision import F32, precision_model
from ..context.project_text import grep, strip_comment
from ..context.training import is_test_file
from ..findings import Applicability, Confidence, Fix, Violation
from ..fp16 import FLOAT16, fmt
from ..prefilter import words
from .base import Rule, cited

PARAMETER_NAMES = {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
CLAMPS = {"clamp", "clip", "clamp_", "clip_", "clamp_max", "clamp_min", "clamp_max_", "clamp_min_"}
CLAMP_FUNCTIONS = {"torch.clamp", "torch.clip", "torch.clamp_max", "torch.clamp_min", "min", "max",
                   "torch.minimum", "torch.maximum"}
EXPS = {"torch.exp", "math.exp", "numpy.exp"}
# Names that say "this parameter scales logits": CLIP's logit_scale, a temperature / tau.
SCALE_NAME = re.compile(r"logit_?scale|temp|tau", re.I)
# What the other operand of ``scale * x`` / ``x / tau`` looks like when it is logits.
LOGITS_NAME = re.compile(r"logit|sim|score|cos|dot|@|matmul|einsum|\bmm\b|bmm", re.I)
CLAMP_CALL = r"\b(clamp|clip)(_max|_min)?_?\s*\("

DEFAULT_LOGIT_SCALE_MAX = "math.log(100)"
DEFAULT_TEMPERATURE_MIN = 0.01


def _parameters(ctx) -> Dict[cst.ClassDef, Dict[str, cst.Call]]:
    """class -> {attribute: the nn.Parameter(...) call} for ``self.x = nn.Parameter(...)``, skipping
    ``requires_grad=False`` (not learnable)."""
    out: Dict[cst.ClassDef, Dict[str, cst.Call]] = {}
    for call in ctx.nodes(cst.Call):
        if ctx.call_name(call) not in PARAMETER_NAMES:
            continue
        if any(a.keyword is not None and a.keyword.value == "requires_grad" and isinstance(a.value, cst.Name)
               and a.value.value == "False" for a in call.args):
            continue
        parent = ctx.parent(call)
        targets = []
        if isinstance(parent, cst.Assign):
            targets = [t.target for t in parent.targets]
        elif isinstance(parent, cst.AnnAssign):
            targets = [parent.target]
        cls = ctx.enclosing_class(call)
        if cls is None:
            continue
        for t in targets:
            if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                out.setdefault(cls, {})[t.attr.value] = call
    return out


def _is_clamp(ctx, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in CLAMPS:
        return True
    return ctx.call_name(node) in CLAMP_FUNCTIONS


def _clamped_on_the_way(ctx, node: cst.CSTNode) -> bool:
    """A clamp / clip / min / max between ``node`` and its statement (``x.clamp(max=m).exp()``,
    ``torch.clamp(x.exp(), max=100)``)."""
    for a in ctx.ancestors(node):
        if isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
        if _is_clamp(ctx, a):
            return True
    return False


def _exp_of(ctx, attr: cst.Attribute) -> Optional[cst.Call]:
    """``self.p.exp()`` or ``torch.exp(self.p)`` around ``attr``."""
    parent = ctx.parent(attr)
    if isinstance(parent, cst.Attribute) and parent.value is attr and parent.attr.value == "exp":
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent and not call.args:
            return call
    if isinstance(parent, cst.Arg) and parent.value is attr:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and ctx.call_name(call) in EXPS:
            return call
    return None


def _binary_use(ctx, node: cst.CSTNode) -> Tuple[Optional[str], Optional[cst.CSTNode]]:
    """('mul', other operand) when ``node`` multiplies something, ('div', numerator) when it is a
    divisor; else (None, None)."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.BinaryOperation):
        if isinstance(parent.operator, cst.Multiply):
            return "mul", parent.right if parent.left is node else parent.left
        if isinstance(parent.operator, cst.Divide) and parent.right is node:
            return "div", parent.left
    return None, None


def _local_alias(ctx, node: cst.CSTNode, fn: Optional[cst.FunctionDef]) -> Optional[str]:
    """``s`` when ``node`` is the whole value of ``s = <node>``."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1 \
            and isinstance(parent.targets[0].target, cst.Name):
        return parent.targets[0].target.value
    return None


_PICKS = frozenset({"max", "amax", "min", "amin", "mean", "squeeze", "unsqueeze", "diag", "diagonal", "t"})


def _similarities(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Similarities of unit vectors (``F.normalize(q) @ k.T``, picked by max / mean / views, through
    local names) or values bounded by 1: divided by a temperature t they reach at most about 1 / t,
    float16's max only for t < 1 / 65504, thousands of times below where training takes a
    temperature that starts at 0.07 (BLIP-2's ``sim_i2t / self.temp``)."""
    pm = precision_model(ctx)
    if depth > 8:
        return False
    if P.bounded(ctx, pm, expr):
        return True
    expr = P.through_views(ctx, pm, expr)
    if isinstance(expr, cst.Name):
        value = pm.value_of(expr)
        return value is not None and _similarities(ctx, value, depth + 1)
    if P.op_of(ctx, pm, expr) in P.PRODUCTS:
        return P.bounded_product(ctx, pm, expr)
    if isinstance(expr, cst.Call):
        op, is_method = P.call_op(ctx, pm, expr)
        if is_method and op in _PICKS:
            return _similarities(ctx, expr.func.value, depth + 1)  # type: ignore[attr-defined]
    return False


def _attribute_name(ctx, name: cst.Name) -> bool:
    """``x`` of ``self.x``: an attribute's name, not a use of the local ``x``."""
    parent = ctx.parent(name)
    return isinstance(parent, cst.Attribute) and parent.attr is name


def _held_in_float32_tensors(ctx, value: cst.CSTNode, alias: Optional[str], fn) -> bool:
    """Every use of the exponentiated scale (``value``, or the local ``alias`` holding it) is written
    into a float32 tensor with more than no dimensions: ``logit_scale_mat = torch.ones((n, n))`` then
    ``logit_scale_mat[mask == 0] = scale`` (also inside an expression: ``torch.sqrt(scale * other)``).
    The scale then lives only in that float32 matrix, and ``logit_scale_mat * (a @ b.T)`` is float32
    (a dimensioned float32 tensor promotes the float16 product), so nothing it scales overflows
    float16 (LaViLa's pseudo-narration scale, set 21 T21-2). Every read of the matrix must be float32
    too (not cast to half later). A scale multiplied straight into the float16 product stays float16
    (a 0-dim float32 tensor does not promote it) and keeps its finding."""
    if fn is None:
        return False
    uses = [n for n in ctx.nodes(cst.Name) if n.value == alias and ctx.enclosing_function(n) is fn] \
        if alias is not None else [value]
    uses = [n for n in uses if not isinstance(ctx.parent(n), cst.AssignTarget) and not _attribute_name(ctx, n)]
    if not uses:
        return False
    pm = precision_model(ctx)
    matrices: Set[str] = set()
    for use in uses:
        stmt = ctx.statement_of(use)
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return False
        assign = stmt.body[0]
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Subscript)
                and isinstance(assign.targets[0].target.value, cst.Name)
                and (assign.value is use or ctx.is_ancestor(assign.value, use))):
            return False
        matrices.add(assign.targets[0].target.value.value)
    for name in matrices:
        reads = [n for n in ctx.nodes(cst.Name) if n.value == name and ctx.enclosing_function(n) is fn
                 and not isinstance(ctx.parent(n), cst.AssignTarget) and not _attribute_name(ctx, n)]
        if not reads or any(pm.dtype_of(n).dtype != F32 for n in reads):
            return False
    return True


class UnclampedLearnableTemperature(Rule):
    code = "AMP401"
    name = "unclamped-learnable-temperature"
    summary = "Learnable logit scale or temperature with no clamp, under float16"
    fix_safety = "unsafe"
    applies_under = "fp16"
    needs = words(PARAMETER_NAMES)  # the ``nn.Parameter(...)`` whose uses are reported

    def check(self, ctx) -> Iterable[Violation]:
        if is_test_file(ctx):
            return  # models in tests are fixtures, not trained
        regime = ctx.regime
        evidence = (regime.fp16_autocast or regime.fp16) if regime is not None else None
        if evidence is None:
            return  # bf16 and fp32 have float32's range: a large logit scale does not overflow
        params = _parameters(ctx)
        if not params:
            return
        wanted: Set[str] = {name for names in params.values() for name in names}
        uses: List[Tuple[cst.Attribute, cst.ClassDef]] = []
        for attr in ctx.nodes(cst.Attribute):
            if attr.attr.value in wanted and isinstance(attr.value, cst.Name) and attr.value.value == "self":
                cls = ctx.enclosing_class(attr)
                if cls is not None and attr.attr.value in params.get(cls, {}):
                    uses.append((attr, cls))
        clamped_names: Dict[Tuple[str, cst.ClassDef], bool] = {}
        frozen: Dict[cst.ClassDef, bool] = {}
        parts_only: Dict[cst.ClassDef, bool] = {}
        for attr, cls in uses:
            name = attr.attr.value
            target = ctx.parent(attr)
            if isinstance(target, cst.AssignTarget) or (isinstance(ctx.parent(attr), cst.AnnAssign)
                                                         and ctx.parent(attr).target is attr):
                continue  # the definition itself
            found = self._use(ctx, attr, name)
            if found is None:
                continue
            kind, site, fix_at = found
            key = (name, cls)
            if key not in clamped_names:
                clamped_names[key] = self._clamped_in_class(ctx, name, [a for a, c in uses if c is cls]) \
                    or self._clamped_anywhere(ctx, name)
            if clamped_names[key]:
                continue
            if cls not in frozen:
                frozen[cls] = frozen_everywhere(ctx, cls) is not None
            if frozen[cls]:
                continue  # every instance the project builds is frozen (a distillation teacher): nothing grows it
            fn = ctx.enclosing_function(attr)
            if fn is not None and fn.name.value == "forward" and ctx.enclosing_class(fn) is cls:
                if cls not in parts_only:
                    parts_only[cls] = parts_taken_everywhere(ctx, cls) is not None
                if parts_only[cls]:
                    continue  # every instance only hands out its parts (CLIP's text tower): its forward never runs
            yield self._violation(ctx, kind, attr, site, fix_at, evidence)

    # ---- what a use is -----------------------------------------------------------------------------
    def _use(self, ctx, attr: cst.Attribute, name: str):
        """(kind, reported node, node to clamp) for a logit-scale or temperature use, or None."""
        fn = ctx.enclosing_function(attr)
        named = bool(SCALE_NAME.search(name))
        if _clamped_on_the_way(ctx, attr):
            return None
        exp = _exp_of(ctx, attr)
        value = exp if exp is not None else attr
        op, other = _binary_use(ctx, value)
        divisor: cst.CSTNode = value
        alias = None
        if op is None:
            alias = _local_alias(ctx, value, fn)
            if alias is not None:
                if self._alias_clamped(ctx, alias, fn):
                    return None
                op, other, divisor = self._alias_use(ctx, alias, fn)
        logits = other is not None and bool(LOGITS_NAME.search(ctx.code(other)))
        if op is not None and self._result_clamped(ctx, divisor, fn):
            return None
        if op == "div" and (named or logits):
            if other is not None and _similarities(ctx, other):
                return None  # cosine similarities / t pass 65504 only for t < 1.5e-5 (BLIP-2: t = 0.07)
            return "temperature", divisor, divisor
        if exp is not None and (named or (op == "mul" and logits)):
            if _held_in_float32_tensors(ctx, exp, alias, fn):
                return None
            return "logit_scale", exp, attr
        return None

    def _result_clamped(self, ctx, node: cst.CSTNode, fn) -> bool:
        """The scaled logits are clamped to float16's range before anything else reads them
        (GLIP / mmdet's ATSS-VLFusion head: ``logits = sim / self.log_scale.exp()`` then
        ``logits = torch.clamp(logits, max=MAX_CLAMP_VALUE)`` with 50000): an inf becomes the
        bound. A bound beyond 65504 is inf itself in float16 and clamps nothing."""
        stmt = ctx.statement_of(node)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or fn is None:
            return False
        assign = stmt.body[0]
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)):
            return False
        name = assign.targets[0].target.value
        later = [n for n in ctx.semantic.references(name)
                 if ctx.enclosing_function(n) is fn and ctx.order(n) > ctx.order(stmt)]
        if not later:
            return False
        first = min(later, key=ctx.order)
        parent = ctx.parent(first)
        call = None
        if isinstance(parent, cst.Attribute) and parent.value is first and parent.attr.value in CLAMPS:
            call = ctx.parent(parent)
        elif isinstance(parent, cst.Arg) and _is_clamp(ctx, ctx.parent(parent)) \
                and ctx.call_name(ctx.parent(parent)) not in ("min", "max"):
            call = ctx.parent(parent)
        if not isinstance(call, cst.Call):
            return False
        bounds = [a.value for a in call.args if a.value is not first]
        values = [ctx.number(b) for b in bounds]
        return bool(bounds) and all(v is None or abs(v) <= FLOAT16.max for v in values)

    def _alias_uses(self, ctx, alias: str, fn) -> List[cst.Name]:
        if fn is None:
            return []
        return [n for n in ctx.nodes(cst.Name) if n.value == alias and ctx.enclosing_function(n) is fn]

    def _alias_clamped(self, ctx, alias: str, fn) -> bool:
        for n in self._alias_uses(ctx, alias, fn):
            parent = ctx.parent(n)
            if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in CLAMPS:
                return True
            if isinstance(parent, cst.Arg) and _is_clamp(ctx, ctx.parent(parent)):
                return True
        return False

    def _alias_use(self, ctx, alias: str, fn):
        """How the local alias is used: (op, other operand, the alias node there)."""
        for n in self._alias_uses(ctx, alias, fn):
            op, other = _binary_use(ctx, n)
            if op is not None:
                return op, other, n
        return None, None, None

    def _clamped_in_class(self, ctx, name: str, uses: List[cst.Attribute]) -> bool:
        """The class clamps its own parameter in place (``self.logit_scale.data.clamp_(...)``,
        ``self.logit_scale.clamp_(...)``) or assigns it a clamped value
        (``self.tau.data = self.tau.data.clamp(min=0.01)``)."""
        for use in uses:
            node: cst.CSTNode = use
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "data":
                node, parent = parent, ctx.parent(parent)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in CLAMPS \
                    and parent.attr.value.endswith("_"):
                return True
            if isinstance(parent, cst.Arg) and ctx.call_name(ctx.parent(parent)) in ("torch.clamp_", "torch.clip_"):
                return True
            if isinstance(parent, cst.AssignTarget):
                assign = ctx.parent(parent)
                if isinstance(assign, cst.Assign) and re.search(CLAMP_CALL, ctx.code(assign.value)):
                    return True
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "copy_":
                call = ctx.parent(parent)
                if isinstance(call, cst.Call) and re.search(CLAMP_CALL, ctx.code(call)):
                    return True
        return False

    def _clamped_anywhere(self, ctx, name: str) -> bool:
        """A line of the project that clamps this attribute from outside the class
        (``model.logit_scale.clamp_(0, math.log(100))`` in the training loop, a loss that clamps
        the ``logit_scale`` it is given). ``self.<name>`` on such a line is some class's own
        parameter, which says nothing about this class's."""
        n = re.escape(name)
        method = re.compile(rf"(?<![\w.])([\w.]*\b{n})\s*(\.\s*data\s*)?\.\s*(clamp|clip)\w*\s*\(")
        function = re.compile(rf"\b(clamp|clip)\w*\s*\(\s*([\w.]*\b{n})\b")
        for _, _, line in grep(ctx, CLAMP_CALL):
            code = strip_comment(line)
            for m in method.finditer(code):
                if not m.group(1).startswith("self."):
                    return True
            for m in function.finditer(code):
                if not m.group(2).startswith("self."):
                    return True
        return False

    # ---- the finding -------------------------------------------------------------------------------
    def _violation(self, ctx, kind: str, attr: cst.Attribute, site: cst.CSTNode, fix_at: cst.CSTNode,
                   evidence) -> Violation:
        settings = getattr(ctx, "settings", None)
        try:  # re-formatted: settings built in code (the API) never paste text into the fix either
            scale_max = logit_scale_max_text(getattr(settings, "logit_scale_max", None) or DEFAULT_LOGIT_SCALE_MAX)
        except ConfigError:
            scale_max = DEFAULT_LOGIT_SCALE_MAX
        temp_min = getattr(settings, "temperature_min", None) or DEFAULT_TEMPERATURE_MIN
        if not (isinstance(temp_min, (int, float)) and math.isfinite(temp_min) and temp_min > 0):
            temp_min = DEFAULT_TEMPERATURE_MIN
        text = ctx.code(attr)
        overflow_at = math.log(FLOAT16.max)
        if kind == "logit_scale":
            bound = cst.parse_expression(str(scale_max))
            new = cst.Call(func=cst.Attribute(value=fix_at.deep_clone(), attr=cst.Name("clamp")),
                           args=[_keyword("max", bound)])
            imports = ["import math"] if re.search(r"\bmath\.", str(scale_max)) else []
            message = (f"learnable logit scale `{text}` is exponentiated with no clamp: training grows it, and "
                       f"past ln({fmt(FLOAT16.max)}) ≈ {overflow_at:.1f} the scaled logits overflow float16 to inf")
            help = f"clamp it (`{text}.clamp(max={scale_max})`, as CLIP does)"
            description = f"Clamp the logit scale: `{text}.clamp(max={scale_max})` before `exp()`"
        else:
            bound = cst.parse_expression(repr(float(temp_min)))
            divisor = fix_at
            base = divisor if isinstance(divisor, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) \
                else divisor.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            new = cst.Call(func=cst.Attribute(value=base.deep_clone(), attr=cst.Name("clamp")),
                           args=[_keyword("min", bound)])
            imports = []
            d = ctx.code(divisor)
            shown = f"`{d}`" if d == text else f"`{d}` (= `{text}`)"
            message = (f"learnable temperature {shown} divides logits with no clamp: training shrinks it, and "
                       f"logits / temperature pass float16's max {fmt(FLOAT16.max)} and become inf")
            help = f"clamp it (`.clamp(min={temp_min})`)"
            description = f"Clamp the temperature: `.clamp(min={temp_min})` on the divisor"
        fix = Fix(description, Applicability.UNSAFE, replacements=[(fix_at, new)], imports=imports)
        return Violation(site, message, Confidence.LIKELY, fix=fix, help=help,
                         evidence=cited(evidence, "float16 training"))


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                         whitespace_after=cst.SimpleWhitespace("")))
