"""Jupyter notebooks: discovered and linted (cell-relative positions, the cell in JSON), IPython
magics masked, fixed in place keeping the JSON's formatting and the outputs."""
import io
import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from amplint.notebook import Notebook, _logical_line_starts
from cliutil import run, run_module, write_project

FIXTURE = Path(__file__).parent / "fixtures" / "notebooks" / "training.ipynb"
# Cell 2 of the fixture clips the scaled gradients (AMP302); the fix inserts the unscale before it.
CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
UNSCALE = "    scaler.unscale_(optimizer)\n"


@pytest.fixture
def project(tmp_path):
    root = write_project(tmp_path / "proj", {"util.py": "import torch\n"})
    shutil.copy(FIXTURE, root / "training.ipynb")
    return root


def test_a_directory_s_notebooks_are_linted_with_cell_positions(project):
    r = run_module(["check", "--output-format", "concise", "."], project)
    # Cell 2 as Jupyter counts (the markdown cell 3 counts too), line 8 of that cell; the magics
    # (%pip, %%time, !ls, !nvidia-smi inside a function, model?) and the %%bash cell parse.
    assert r.out.splitlines()[0].startswith("training.ipynb:cell 2:8:5: AMP302 "), r.out + r.err
    assert "E999" not in r.out and r.rc == 1


def test_evidence_in_the_notebook_is_placed_in_its_cell(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
             for source in ("import torch\nmodel = Net().cuda().half()\nloss = model(x).sum()\nloss.backward()\n",
                            "opt = torch.optim.Adam(model.parameters())\n")]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = write_project(tmp_path / "p", {"nb.ipynb": json.dumps(doc)})
    r = run(["check", "--output-format", "json", "nb.ipynb"], root)
    [finding] = json.loads(r.out)
    assert (finding["code"], finding["cell"], finding["location"]["row"]) == ("AMP101", 2, 1)
    [evidence] = finding["evidence"]
    assert (evidence["cell"], evidence["row"]) == (1, 2)
    assert "= evidence: nb.ipynb:cell 1:2: " in run(["check", "nb.ipynb"], root).out


def test_json_output_has_the_cell(project):
    r = run(["check", "--output-format", "json", "training.ipynb"], project)
    [finding] = json.loads(r.out)
    assert (finding["cell"], finding["location"], finding["code"]) == (2, {"row": 8, "column": 5}, "AMP302")
    r = run(["check", "--output-format", "json", "util.py"], project)
    assert r.rc == 0


def test_github_annotations_name_the_cell(project):
    r = run(["check", "--output-format", "github", "training.ipynb"], project)
    [annotation] = [line for line in r.out.splitlines() if "file=training.ipynb" in line]
    assert annotation.startswith("::error file=training.ipynb,line=8,col=5,")
    assert "::cell 2:8:5: AMP302 " in annotation


def test_a_syntax_error_is_placed_in_its_cell(tmp_path):
    doc = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                      "source": ["import torch\n"]},
                     {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                      "source": ["x = 1\n", "y = (\n"]}],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = write_project(tmp_path / "p", {"nb.ipynb": json.dumps(doc)})
    r = run(["check", "--output-format", "concise", "nb.ipynb"], root)
    assert r.out.startswith("nb.ipynb:cell 2:2:5: E999 SyntaxError: '(' was never closed"), r.out


def test_top_level_await_in_a_cell_is_no_syntax_error(tmp_path):
    # IPython runs ``await`` at the top of a cell (llama-recipes' demo notebooks); in a function that
    # is not async it stays an error (near miss)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import asyncio\n", "async def f():\n", "    return 1\n", "x = await f()\n"]}
    doc = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = write_project(tmp_path / "p", {"nb.ipynb": json.dumps(doc), "bad.py": "def g():\n    await f()\n"})
    r = run(["check", "--output-format", "concise", "."], root)
    assert "nb.ipynb" not in r.out and "bad.py:2:5: E999 SyntaxError: 'await' outside async function" in r.out, r.out


def test_full_output_quotes_the_cell(project):
    r = run(["check", "training.ipynb"], project)
    assert "8 | " + CLIP.rstrip("\n") in r.out


def test_fix_rewrites_the_cell_and_keeps_the_rest(project):
    path = project / "training.ipynb"
    before = path.read_text(encoding="utf-8")
    r = run(["fix", "training.ipynb"], project)
    assert r.rc == 0, r.out + r.err
    after = path.read_text(encoding="utf-8")
    # The only change is the inserted line: indentation, key order, outputs, ids, the trailing
    # newline, the masked magics are all as they were.
    clip_json = json.dumps(CLIP)
    assert after == before.replace(f"    {clip_json}", f"    {json.dumps(UNSCALE)},\n    {clip_json}")
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    original = nbformat.read(str(FIXTURE), as_version=4)
    assert [c.get("outputs") for c in nb.cells] == [c.get("outputs") for c in original.cells]
    assert UNSCALE + CLIP in nb.cells[1].source
    assert nb.cells[1].source.startswith("%%time\nfiles = !ls data\n")
    assert run(["check", "training.ipynb"], project).rc == 0  # fixed


def test_fix_keeps_another_tool_s_formatting(tmp_path):
    # Two-space indent, sources as one string, non-ASCII text, no trailing newline: all kept.
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "Entraînement en précision mixte"},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import torch\nmodel = Net().cuda().half()\nloss = model(x).sum()\nloss.backward()"},
        {"cell_type": "code", "metadata": {"tags": ["é"]}, "execution_count": 3,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "ok\n"}],
         "source": "opt = torch.optim.Adam(model.parameters())\n"},
    ]
    doc = {"metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5, "cells": cells}
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    root = write_project(tmp_path / "p", {"nb.ipynb": text})
    r = run(["fix", "nb.ipynb"], root)
    assert r.rc == 0, r.out + r.err
    after = (root / "nb.ipynb").read_text(encoding="utf-8")
    cells[2]["source"] = "opt = torch.optim.Adam(model.parameters(), eps=1e-4)\n"
    assert after == json.dumps(doc, indent=2, ensure_ascii=False)


def test_inserted_lines_go_to_the_cell_of_the_line_they_precede():
    nb = Notebook(json.dumps({"cells": [
        {"cell_type": "code", "source": ["import torch\n", "%time f()"]},
        {"cell_type": "code", "source": ["x = 1\n", "y = 2\n"]},
    ]}))
    python = nb.python
    assert python == "import torch\npass  # <amplint-masked-0>\nx = 1\ny = 2\n"
    fixed = python.replace("x = 1\n", "import math\nx = 1\n").replace("y = 2\n", "y = 2\nz = 3\n")
    assert nb.cell_sources(fixed) == {0: "import torch\n%time f()", 1: "import math\nx = 1\ny = 2\nz = 3\n"}


def test_a_shell_command_continued_with_backslashes_is_one_escape(tmp_path):
    """IPython joins ``!cmd \\`` and its indented continuation lines into one shell command; their
    indentation must not make the cell an IndentationError, also inside a block."""
    cells = [["!python train.py \\\n", "    --img_size 512 \\\n", "    --work-dir output\n"],
             ["if True:\n", "    !echo a \\\n", "          b\n", "    x = 1\n"]]
    nb = Notebook(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}))
    compile(nb.python, "notebook", "exec")  # no IndentationError
    assert nb.python.splitlines()[1:3] == ["pass  # <amplint-masked-1>", "pass  # <amplint-masked-2>"]
    assert nb.render(nb.python.replace("x = 1", "x = 2")).count("          b") == 1  # masked lines come back as they were
    path = tmp_path / "train.ipynb"
    path.write_text(nb.raw)
    r = run(["check", "--no-cache", "train.ipynb"], tmp_path)
    assert r.rc == 0 and "E999" not in r.out


def test_a_cell_indented_as_a_whole_is_read_as_ipython_runs_it():
    """IPython takes the first line's indentation off every line of a cell (coqui TTS's tutorial:
    `` !tts --text ... \\`` with deeper continuation lines); a fix puts it back."""
    cells = [[" !tts --text hi \\\n", "      --out_path out.wav\n"], ["  x = 1\n", "\n", "  y = x\n"]]
    nb = Notebook(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}))
    compile(nb.python, "notebook", "exec")  # no IndentationError
    assert nb.python.splitlines()[2:] == ["x = 1", "", "y = x"]
    sources = nb.cell_sources(nb.python.replace("x = 1", "x = 2"))
    assert sources == {0: " !tts --text hi \\\n      --out_path out.wav\n", 1: "  x = 2\n\n  y = x\n"}


def test_a_docstring_line_ending_with_a_question_mark_is_text():
    lines = ['def f():', '    """Is it fp16?', '    model?', '    """', 'model?', 'x = [', '  !a', ']']
    assert _logical_line_starts(lines) == [True, True, False, False, True, True, False, False]


def test_a_named_notebook_without_code_says_so(tmp_path):
    doc = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "notes"}], "metadata": {},
           "nbformat": 4, "nbformat_minor": 5}
    root = write_project(tmp_path / "p", {"notes.ipynb": json.dumps(doc)})
    r = run(["check", "notes.ipynb"], root)
    assert r.rc == 0
    assert "warning: notes.ipynb: no Python code cells; nothing was linted" in r.err


def test_a_broken_notebook_is_an_error_naming_it(tmp_path):
    root = write_project(tmp_path / "p", {"bad.ipynb": '{"cells": [', "ok.py": "x = 1\n"})
    r = run(["check", "."], root)
    assert r.rc == 2
    assert "bad.ipynb: cannot read notebook: not valid JSON" in r.err


def test_a_notebook_on_stdin_is_fixed_to_stdout(project, monkeypatch):
    data = FIXTURE.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    r = run(["fix", "--stdin-filename", "training.ipynb", "-"], project)
    assert r.rc == 0, r.err
    fixed = nbformat.reads(r.out, as_version=4)
    assert UNSCALE + CLIP in fixed.cells[1].source
    assert (project / "training.ipynb").read_bytes() == data  # stdin: nothing written
