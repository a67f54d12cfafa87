"""``FileContext.line_of`` answers from the node's text when it occurs once in the file (no position
pass): it must give the line the position pass gives, for every node kind and layout."""
from pathlib import Path

import libcst as cst

from amplint.engine import build_context

ROOT = Path(__file__).resolve().parent.parent


def _contexts(path: Path):
    source = path.read_bytes()
    return build_context(path, path.name, source, None), build_context(path, path.name, source, None)


def test_line_of_agrees_with_the_position_pass():
    # every expression whose text, or that of a node around it, occurs once in the file
    checked = 0
    for path in sorted((ROOT / "examples").rglob("*.py")) + [ROOT / "amplint" / "context" / "precision.py"]:
        cheap, exact = _contexts(path)
        for kind in (cst.Call, cst.Name, cst.BinaryOperation, cst.FunctionDef, cst.Attribute, cst.Subscript):
            for node, twin in zip(cheap.nodes(kind), exact.nodes(kind)):
                line = cheap._line_from_text(node)
                if line is not None:
                    assert line == exact.position(twin)[0], (path.name, cheap.code(node)[:60])
                    checked += 1
        assert cheap._positions is None  # no position pass was needed for any of it
    assert checked > 1000


def test_a_repeated_text_is_found_inside_the_statement_around_it(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\nx = torch.ones(2)\n\ny = torch.ones(2)\n")
    ctx, _ = _contexts(path)
    first, second = [c for c in ctx.nodes(cst.Call)][:2]
    assert ctx.line_of(second) == 4 and ctx.line_of(first) == 2
    assert ctx._positions is None


def test_a_text_repeated_with_its_statements_falls_back_to_the_position_pass(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\nx = torch.ones(2)\n\nx = torch.ones(2)\n")
    ctx, _ = _contexts(path)
    first, second = [c for c in ctx.nodes(cst.Call)][:2]
    assert ctx._line_from_text(second) is None
    assert ctx.line_of(second) == 4 and ctx._positions is not None
    assert ctx.line_of(first) == 2


def test_a_file_with_a_lone_carriage_return_takes_the_position_pass(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"import torch\r\nx = 1\ry = torch.zeros(2)\r\n")
    ctx, exact = _contexts(path)
    call = ctx.nodes(cst.Call)[0]
    assert ctx._line_from_text(call) is None
    assert ctx.line_of(call) == exact.position(exact.nodes(cst.Call)[0])[0]


def test_a_call_spanning_lines_inside_blocks_is_found_by_its_text(tmp_path):
    # libcst writes such a node without its blocks' indentation: its text is written again with it
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n\nclass Net:\n    def forward(self, x):\n        if x:\n"
                    "            y = torch.cat(\n                [x, x],\n            dim=0)\n        return y\n")
    ctx, exact = _contexts(path)
    call = ctx.nodes(cst.Call)[0]
    assert ctx._line_from_text(call) == exact.position(exact.nodes(cst.Call)[0])[0] == 7
    assert ctx._positions is None


def test_on_lines_agrees_with_the_position_pass(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\nx = torch.ones(2)\n\ny = torch.ones(2)\nz = torch.zeros(\n    3)\n"
                    "def f():\n    return torch.zeros(\n        3)\n")
    ctx, exact = _contexts(path)
    calls, twins = ctx.nodes(cst.Call), exact.nodes(cst.Call)
    for lines in ({2}, {4}, {2, 4}, {5}, {8}, {1, 3}, set()):
        for call, twin in zip(calls, twins):
            assert ctx.on_lines(call, lines) == (exact.position(twin)[0] in lines), (lines, ctx.code(call))
    # torch.ones(2) twice, asked about one of its lines only: found inside its statement
    assert ctx._positions is None


def test_on_lines_without_the_position_pass_when_every_occurrence_answers_alike(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\nx = torch.ones(2)\n\ny = torch.ones(2)\n")
    ctx, _ = _contexts(path)
    first, second = ctx.nodes(cst.Call)[:2]
    assert ctx.on_lines(second, {2, 4}) and ctx.on_lines(first, {2, 4})
    assert not ctx.on_lines(second, {3}) and not ctx.on_lines(first, {1, 5})
    assert ctx._positions is None


def test_elif_chains_and_parenthesised_lines_agree_with_the_position_pass(tmp_path):
    # an ``elif`` is an If written so by the If before it; a parenthesised expression's position
    # starts inside its parentheses (timm task/_helpers.py, transformers' modeling_fsmt.py shapes)
    path = tmp_path / "m.py"
    path.write_text(
        "def load(checkpoint, k, layers, head_mask):\n"
        "    if 'state_dict' in checkpoint:\n"
        "        key = 'state_dict'\n"
        "    elif 'model' in checkpoint:\n"
        "        key = 'model'\n"
        "    if k:\n"
        "        key = 'model_ema'\n"
        "    elif 'state_dict' in checkpoint:\n"
        "        key = 'state_dict'\n"
        "    assert head_mask.size()[0] == (\n"
        "        len(layers)\n"
        "    ), f'{len(layers)} layers'\n"
        "    base = k * (\n"
        "        (k * len(layers) / 2) - (k - 1)\n"
        "    ) ** 2\n"
        "    return key, base\n")
    ctx, exact = _contexts(path)
    checked = 0
    for kind in (cst.Name, cst.Call, cst.SimpleString, cst.BinaryOperation, cst.Comparison):
        for node, twin in zip(ctx.nodes(kind), exact.nodes(kind)):
            line = ctx._line_from_text(node)
            if line is not None:
                assert line == exact.position(twin)[0], ctx.code(node)
                checked += 1
            for lines in ({exact.position(twin)[0]}, {exact.position(twin)[0] - 1}):
                assert ctx.on_lines(node, lines) == (exact.position(twin)[0] in lines), ctx.code(node)
    assert checked > 40


def test_report_position_agrees_with_the_position_pass(tmp_path):
    # from the text: columns in characters after a non-ASCII prefix, parentheses left out, spans of lines
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n\ndef f(x, eps):\n    s = 'é' ; y = torch.log(x + 1e-8)\n"
                    "    z = (\n        torch.log(\n            x + eps)\n    )\n    return (x / (y - z)), torch.log(x + 1e-8)\n",
                    encoding="utf-8")
    checked = 0
    for p in (path, *sorted((ROOT / "examples").rglob("*.py"))[:12]):
        cheap, exact = _contexts(p)
        for kind in cheap._TEXT_POSITIONED:
            for node, twin in zip(cheap.nodes(kind), exact.nodes(kind)):
                found = cheap._position_from_text(node)
                if found is not None:
                    assert found == exact.position(twin), (p.name, cheap.code(node)[:60])
                    checked += 1
        assert cheap._positions is None
    assert checked > 500


def test_without_libcsts_codegen_state_the_position_pass_answers(tmp_path, monkeypatch):
    # the text of a node inside blocks uses libcst's private codegen state; a libcst release that
    # moves it must cost speed, not answers
    import amplint.context.file_context as fc
    monkeypatch.setattr(fc, "CodegenState", None)
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n\nclass Net:\n    def forward(self, x):\n        if x:\n"
                    "            y = torch.cat(\n                [x, x],\n            dim=0)\n        return y\n")
    ctx, _ = _contexts(path)
    call = ctx.nodes(cst.Call)[0]
    assert ctx._line_from_text(call) is None
    assert ctx.line_of(call) == 7 and ctx.report_position(call)[0] == 7
