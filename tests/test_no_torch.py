"""`amplint check` never imports torch (it must run in a lint-only environment and start fast): a fresh
interpreter runs the CLI on hazardous PyTorch code with an import hook that records any attempt to
import torch, and sys.modules is inspected afterwards. Works whether or not torch is installed."""
import json
import subprocess
import sys
import textwrap

from cliutil import ROOT, subprocess_env, write_project

PROBE = textwrap.dedent('''
    import io, json, sys
    from contextlib import redirect_stdout

    attempts = []

    class Guard:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                attempts.append(name)
            return None  # let the normal machinery go on (torch may be installed)

    sys.meta_path.insert(0, Guard())
    from amplint.cli import main

    codes = {}
    for argv in json.loads(sys.argv[1]):
        with redirect_stdout(io.StringIO()):
            codes[" ".join(argv)] = main(argv)
    loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
    print(json.dumps({"attempts": attempts, "loaded": loaded, "codes": codes}))
''')

TRAIN = '''\
import torch
import torch.nn.functional as F
from torch.cuda.amp import autocast, GradScaler

model = torch.nn.Linear(8, 8).cuda().half()
optimizer = torch.optim.AdamW(model.parameters())
scaler = GradScaler()

def attend(q, k, mask):
    with autocast():
        scores = q @ k.transpose(-2, -1)
        return F.softmax(scores.masked_fill(mask, -1e9), dim=-1)

loss.backward()
'''


def test_check_never_imports_torch(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": TRAIN})
    runs = [["check", str(root), "--output-format", fmt] for fmt in ("full", "concise", "json", "sarif", "github")]
    runs += [["check", str(root), "--statistics"], ["check", str(ROOT / "examples")], ["rule", "--all"],
             ["rule", "AMP101"]]
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps(runs)], cwd=tmp_path, env=subprocess_env(),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert report["attempts"] == [] and report["loaded"] == [], report
    # The runs did lint the hazards (the probe is not vacuous).
    assert report["codes"][f"check {root} --output-format json"] == 1
    assert report["codes"]["rule --all"] == 0


def test_python_dash_m_amplint_does_not_import_torch(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": TRAIN})
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "amplint", "check", str(root)], cwd=tmp_path,
                       env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")]
    assert "amplint.cli" in imported
    assert not [m for m in imported if m == "torch" or m.startswith("torch.")]
