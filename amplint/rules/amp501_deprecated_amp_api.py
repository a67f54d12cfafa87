"""AMP501 deprecated-amp-api."""
from __future__ import annotations

from typing import Iterable

import libcst as cst

from ..findings import Confidence, Violation
from .base import Rule

# deprecated name -> its replacement, as documented in torch/cuda/amp/*.py deprecation warnings
DEPRECATED = {
    "torch.cuda.amp.autocast": 'torch.amp.autocast("cuda", ...)',
    "torch.cuda.amp.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
    "torch.cuda.amp.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda", ...)',
    "torch.cuda.amp.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
    "torch.cpu.amp.autocast": 'torch.amp.autocast("cpu", ...)',
    "torch.cpu.amp.GradScaler": 'torch.amp.GradScaler("cpu", ...)',
    "torch.cuda.amp.autocast_mode.autocast": 'torch.amp.autocast("cuda", ...)',
    "torch.cuda.amp.grad_scaler.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
}


class DeprecatedAmpApi(Rule):
    code = "AMP501"
    name = "deprecated-amp-api"
    summary = "Deprecated torch.cuda.amp / torch.cpu.amp API"
    fix_safety = "safe"
    applies_under = "any precision"

    def check(self, ctx) -> Iterable[Violation]:
        for node in (*ctx.nodes(cst.Attribute), *ctx.nodes(cst.Name)):
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
                continue  # only the outermost name of a chain
            if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.Import)):
                continue  # the uses are reported, and fixed, not the import line
            if isinstance(node, cst.Name) and not ctx.imports.binds(node.value):
                continue
            if getattr(parent, "keyword", None) is node or getattr(parent, "name", None) is node \
                    or isinstance(parent, cst.AssignTarget):
                continue  # a keyword, a definition's name or an assignment target is not a use
            name = ctx.qualname(node)
            replacement = DEPRECATED.get(name or "")
            if replacement is None:
                continue
            yield Violation(node, f"`{name}` is deprecated since PyTorch 2.4: use `{replacement}`",
                            Confidence.CERTAIN)
