"""Helpers for the training-loop and temperature rule tests (AMP301-AMP304, AMP401)."""
import tempfile
import textwrap
from pathlib import Path

from amplint.api import lint_source
from amplint.config import Settings


def found(code, source, **kw):
    """Findings of ``code`` in ``source`` (dedented), as (line, message) pairs."""
    return [(f.line, f.explained()) for f in lint_source(textwrap.dedent(source), **kw) if f.code == code]


def lines(code, source, **kw):
    return [line for line, _ in found(code, source, **kw)]


def fixed(source, extra_files=None, unsafe=False, settings=None):
    """``source`` (dedented) after ``amplint fix`` ran over it as a file of a fresh project."""
    from amplint.fixes import fix_paths
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'snippet'\n")
        for name, text in {**(extra_files or {}), "snippet.py": textwrap.dedent(source)}.items():
            (root / name).write_text(text, encoding="utf-8")
        run = fix_paths([root / "snippet.py"], settings or Settings(), unsafe=unsafe, write=False)
        assert not run.errors, run.errors
        return run.states[0].source.decode("utf-8")


def fp16_train_script(module: str = "model", cls: str = "Net") -> str:
    """A training script with an fp16 autocast loop that builds ``<module>.<cls>``: beside the model's
    file, it makes that code run under fp16 mixed precision."""
    return textwrap.dedent(f"""
        import torch
        from {module} import {cls}
        def train(loader):
            model = {cls}().cuda()
            optimizer = torch.optim.AdamW(model.parameters())
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                with torch.autocast("cuda"):
                    loss = model(x)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        """)


MODEL_TRAIN = fp16_train_script()
