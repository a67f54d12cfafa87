"""Property test: generated and mutated programs go through check and fix.

Programs are built from the hazard shapes of the rule pages and of the fixable rules (optimizer
eps, overflowing fills, the deprecated AMP API) with random names, torch aliases, nesting in
functions, classes, with / if / for blocks, random indentation, comments, blank lines and line
endings; some are then mutated (lines dropped, duplicated, swapped, re-indented), which often
makes them invalid. Whatever comes in: nothing crashes; a file that parses still parses after
fixing, keeps its line endings, and a second fix changes nothing; a file that does not parse is
left as it was; the other files of the project are never written.
"""
import ast
import keyword
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplint.api import lint_paths
from amplint.config import Settings
from amplint.docs import examples, read_page
from amplint.fixes import fix_paths
from amplint.rules import all_rules

RESERVED = {"torch", "th", "amp", "nn", "F", "math", "autocast", "GradScaler", "self"}
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s not in RESERVED)

# {T}: the torch alias; {a}, {b}: random names
STATEMENTS = [
    "{a} = {T}.optim.AdamW({b}.parameters(), lr=1e-3, eps=1e-8)",
    "{a} = {T}.optim.Adam({b}.parameters())",
    "{a} = {T}.optim.RMSprop({b}, 0.01, 0.99, 1e-8)",
    "{a} = {T}.optim.Adam(\n    {b},\n    lr=1e-3,\n)",
    "{b} = Net().cuda().half()",
    "{a} = {T}.cuda.amp.GradScaler()",
    "{a} = GradScaler(enabled={b})",
    "{a} = amp.GradScaler()",
    "{a} = {b} @ {b}.T",
    "{a} = {a}.masked_fill({b}, -1e9)",
    "{a}.masked_fill_({b}, value=-1e20)",
    "{a}[{b}] = -1e20",
    "{a}.fill_(1e5)",
    "{a} = {T}.where({b}, {a}, -1e9)",
    "{a} = {T}.full((2, 2), -1e9, dtype={T}.float16)",
    "{a} = {T}.full_like({b}, -1e9)",
    "{a}.backward()",
    "{a}.step()",
    "{T}.nn.utils.clip_grad_norm_({b}.parameters(), 1.0)",
    "{a} = {T}.cuda.amp.autocast({b})",
    "{a}, {b} = {b}, {a}",
    "return {a}",
    "pass",
]
WRAPPERS = [
    "def {a}({b}):",
    "def {a}(self, {b}, eps=1e-8):",
    "class {A}:",
    "with {T}.autocast('cuda'):",
    "with {T}.cuda.amp.autocast():",
    "with autocast(dtype={T}.float16):",
    "with amp.autocast(enabled={b}):",
    "if {a}:",
    "for {a} in {b}:",
    "@{T}.cuda.amp.custom_fwd\ndef {a}(ctx, {b}):",
    "try:",
]
IMPORTS = [
    "import torch",
    "import torch as th",
    "from torch.cuda.amp import autocast, GradScaler",
    "from torch.cuda import amp",
    "import torch.cuda.amp as amp",
    "import torch.nn.functional as F",
    "from torch import nn",
    "import math",
]
PAGE_SNIPPETS = [s for code in all_rules() for s in examples(read_page(code) or "", "Example")]
REGIME_FILES = [
    None,
    "import torch\nmodel = Net().cuda().half()\nloss = model(x).sum()\nloss.backward()\n",
    "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda'):\n    pass\n",
]


def _fill(draw, template, torch_alias):
    a, b = draw(NAMES), draw(NAMES)
    return template.format(T=torch_alias, a=a, b=b, A=a.capitalize())


def _lines(text, level):
    """(indent level, line) pairs of ``text``, its own 4-space indentation turned into levels."""
    out = []
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        extra = (len(line) - len(stripped)) // 4
        out.append((level + extra, stripped))
    return out


@st.composite
def blocks(draw, level, torch_alias, depth=0):
    out = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["stmt", "stmt", "wrap", "page"] if depth < 3 else ["stmt"]))
        if kind == "stmt":
            out += _lines(_fill(draw, draw(st.sampled_from(STATEMENTS)), torch_alias), level)
        elif kind == "page" and PAGE_SNIPPETS:
            snippet = draw(st.sampled_from(PAGE_SNIPPETS))
            out += [l for l in _lines(snippet, level) if "from __future__" not in l[1]]
        else:
            header = _fill(draw, draw(st.sampled_from(WRAPPERS)), torch_alias)
            out += _lines(header, level)
            out += draw(blocks(level + 1, torch_alias, depth + 1))
            if header == "try:":
                out += [(level, "except Exception:"), (level + 1, "pass")]
    return out


@st.composite
def programs(draw):
    torch_alias = draw(st.sampled_from(["torch", "th"]))
    imports = draw(st.lists(st.sampled_from(IMPORTS), max_size=4, unique=True))
    if draw(st.booleans()) and "import torch as th" not in imports and torch_alias == "th":
        imports.append("import torch as th")
    body = [(0, i) for i in imports] + draw(blocks(0, torch_alias))
    unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    lines = []
    for level, text in body:
        if draw(st.integers(0, 9)) == 0:
            lines.append("")
        if draw(st.integers(0, 9)) == 0:
            lines.append(unit * level + "# " + draw(st.text("abc xyz:()", max_size=12)))
        if draw(st.integers(0, 7)) == 0 and not text.endswith(("\\", ",", "(")):
            text += "  # " + draw(st.text("noqa AMP501:,", max_size=14))
        lines.append(unit * level + text)
    # mutations: these often break the program, which must then be left alone
    for _ in range(draw(st.integers(0, 2))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "swap", "indent", "dedent"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "indent":
            lines[i] = unit + lines[i]
        else:
            lines[i] = lines[i][len(unit):] if lines[i].startswith(unit) else lines[i]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    return text, newline, draw(st.sampled_from(REGIME_FILES))


def _parses(data: bytes) -> bool:
    try:
        ast.parse(data)
        return True
    except (SyntaxError, ValueError):
        return False


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_check_and_fix_never_crash_and_keep_code_parsing(program):
    text, newline, regime = program
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'gen'\n")
        if regime is not None:
            (root / "train.py").write_text(regime)
        path = root / "gen.py"
        before = text.encode("utf-8")
        path.write_bytes(before)
        lint_paths([path], Settings())  # check: raises on an internal error

        run = fix_paths([path], Settings(), unsafe=True)
        crashes = [e for e in run.errors if "internal error" in e or "Please report" in e]
        assert not crashes, "\n".join(crashes)
        after = path.read_bytes()
        if regime is not None:
            assert (root / "train.py").read_text() == regime
        if not _parses(before):
            assert after == before
            return
        assert _parses(after), after.decode()
        if newline == "\r\n" and b"\r\n" in before:
            # (a one-line file without a final newline has no line-ending style to keep: a fix adding an import
            # line writes "\n" there)
            assert after.count(b"\n") == after.count(b"\r\n")
        again = fix_paths([path], Settings(), unsafe=True)
        assert again.fixed == 0 and path.read_bytes() == after
