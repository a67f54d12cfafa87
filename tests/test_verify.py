"""amplint verify on CPU (CUDA's autocast policy emulated): the harness's hazards are confirmed at
their lines, their fp16-safe twins and a clean model are not, and the CLI's exit codes and messages."""
import json
import sys
import warnings

import pytest

from cliutil import ROOT, run, write_project

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

from amplint.verify import verify  # noqa: E402
from amplint.verify.match import project_findings  # noqa: E402
from amplint.verify.target import load  # noqa: E402

HARNESS = ROOT / "examples" / "verify" / "harness.py"
HALF = ROOT / "examples" / "verify" / "half" / "harness.py"


def line_of(path, text):
    """The line of ``path`` holding ``text`` (so that the harness can be edited without the tests)."""
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (text, lines)
    return lines[0]


@pytest.fixture(scope="module")
def findings():
    return {HARNESS: project_findings(HARNESS), HALF: project_findings(HALF)}


def run_target(path, function, findings, steps=1):
    step, optimizer, scaler = load(f"{path}:{function}")
    precision = "fp16" if path == HALF else "fp16-mixed"
    return verify(step, optimizer, scaler, device="cpu", precision=precision, steps=steps, findings=findings[path])


HAZARDS = [  # function, steps, rule, the line the rule and the runtime agree on
    (HARNESS, "einsum_normaliser", 1, "AMP203", 'Z = 1 / (torch.einsum("nld,nd->nl", Q, K.sum(dim=1)) + self.eps)'),
    (HARNESS, "mask_fill", 1, "AMP103", "scores = scores.masked_fill(mask, -1e9)"),
    (HARNESS, "log_sigmoid", 1, "AMP201", "return torch.log(torch.sigmoid(logits))"),
    (HALF, "adam_half", 3, "AMP101", "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)"),
    (HARNESS, "temperature", 8, "AMP401", "logits = image_features @ text_features.t() * self.logit_scale.exp()"),
]


@pytest.mark.parametrize("path,function,steps,code,text", HAZARDS, ids=[h[1] for h in HAZARDS])
def test_hazard_is_confirmed_at_its_line_and_its_safe_twin_is_not(findings, path, function, steps, code, text):
    line = line_of(path, text)
    report = run_target(path, function, findings, steps)
    confirmed = [(f.code, f.line) for f in report.confirmed]
    assert (code, line) in confirmed, report.to_text()
    assert report.exit_code == 1
    match = next(f for f in report.confirmed if f.code == code)
    assert match.evidence  # the op, the counts, float32 against float16

    safe = run_target(path, f"{function}_safe", findings, steps)
    assert safe.confirmed == [] and safe.runtime_only == [] and safe.producers == [], safe.to_text()
    assert safe.parameters == []
    assert safe.exit_code == 0


def test_clean_model_confirms_nothing(findings):
    report = run_target(HARNESS, "clean", findings, steps=2)
    assert report.confirmed == [] and report.runtime_only == [] and report.producers == [], report.to_text()
    assert {f.status for f in report.findings} <= {"not-reached"}  # the other harness functions' findings
    assert report.exit_code == 0


def test_forward_and_backward_events_at_the_source_line_with_module_path(findings):
    report = run_target(HARNESS, "log_sigmoid", findings)
    line = line_of(HARNESS, "return torch.log(torch.sigmoid(logits))")
    by_phase = {(e.phase, e.op.split(".")[0]) for e in report.events if e.line == line}
    assert ("forward", "log") in by_phase and ("forward", "sigmoid") in by_phase
    assert any(phase == "backward" for phase, _ in by_phase)  # attributed to the forward line
    log = next(e for e in report.events if e.line == line and e.op.startswith("log.") and e.phase == "forward")
    assert log.role == "producer" and log.inf > 0 and log.fp32_nonfinite == 0
    sigmoid = next(e for e in report.events if e.line == line and e.op.startswith("sigmoid.") and e.phase == "forward")
    assert sigmoid.underflow > 0 and sigmoid.role == ""  # zero in float16, never non-finite
    head = [e for e in report.events if e.module == "head"]
    assert head and all(e.line == line_of(HARNESS, "logits = self.head(x)") for e in head)


def test_a_later_op_only_propagates_and_an_infinite_mask_is_not_a_producer(tmp_path):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, mask):
            h = self.lin(x) * 1e5  # float16 overflow: the producer
            h = h + 1  # propagates
            scores = (x @ x.t()).masked_fill(mask, float("-inf"))  # an intentional mask
            return h.float().sum() + scores.softmax(-1).sum()

    net = Net()
    x = torch.ones(4, 4)
    mask = torch.eye(4, dtype=torch.bool)
    report = verify(lambda: net(x, mask), device="cpu")
    roles = {(e.op.split(".")[0], e.phase): e.role for e in report.events}
    assert roles[("mul", "forward")] == "producer"
    assert roles[("add", "forward")] == "propagator"
    assert roles[("masked_fill", "forward")] == "mask"
    assert [e.op.split(".")[0] for e in report.producers if e.phase == "forward"] == ["mul"]
    assert report.findings is None and report.exit_code == 0  # no findings given: nothing to confirm


def test_gradient_headroom_names_the_parameter():
    lin = torch.nn.Linear(4, 2)
    with torch.no_grad():
        lin.weight.fill_(1.0)
    x = torch.full((8, 4), 40000.0)
    report = verify(lambda: lin(x.half().float()).float().mean() * 2, device="cpu")
    names = {g.name: g for g in report.steps[0].gradients}
    assert set(names) == {"weight", "bias"}
    assert names["weight"].headroom < 2 and [g.name for g in report.gradients] == ["weight"]


def test_the_reference_run_leaves_batchnorm_statistics_as_they_were():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    x = torch.randn(8, 4)
    verify(lambda: net(x).pow(2).mean(), device="cpu")
    assert int(net[1].num_batches_tracked) == 1  # the float16 run's batch only


# --- the command line
def test_cli_exit_codes_and_outputs(tmp_path):
    r = run(["verify", f"{HARNESS}:mask_fill", "--device", "cpu"], ROOT)
    assert r.rc == 1, r.err
    assert "confirmed" in r.out and "AMP103" in r.out and "masked_fill" in r.out
    r = run(["verify", f"{HARNESS}:clean", "--output-format", "json", "--report", tmp_path / "r.html"], ROOT)
    assert r.rc == 0, r.err
    data = json.loads(r.out)
    assert data["exit_code"] == 0 and data["device"] == "cpu" and data["emulated"] is True
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert not any(external in page for external in ("<script", "<link", "src=", "href=", "url("))  # self-contained


def test_json_follows_the_documented_schema(findings):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "verify-schema.json").read_text())
    for function, steps in (("temperature", 8), ("mask_fill", 1)):
        report = run_target(HARNESS, function, findings, steps)
        jsonschema.validate(json.loads(report.to_json()), schema)


@pytest.mark.parametrize("target,message", [
    ("missing.py:f", "No such file"),
    ("{harness}", "expected path/to/file.py:function"),
    ("{harness}:nope", "no function 'nope'"),
    ("{bad}:numbers", "where a step function was expected"),
    ("{bad}:too_many", "returned 4 values"),
    ("{bad}:wrong_optimizer", "not a torch.optim.Optimizer"),
    ("{bad}:not_a_loss", "must return a scalar loss tensor, got Tensor of shape (2,)"),
])
def test_bad_targets_exit_2_with_a_clear_message(tmp_path, target, message):
    bad = write_project(tmp_path, {"bad.py": BAD}) / "bad.py"
    r = run(["verify", target.format(harness=HARNESS, bad=bad)], tmp_path)
    assert r.rc == 2 and message in r.err, r.err
    assert "Traceback" not in r.err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")
def test_device_cuda_without_a_gpu_is_a_clear_error():
    r = run(["verify", f"{HARNESS}:clean", "--device", "cuda"], ROOT)
    assert r.rc == 2 and "no CUDA device is available" in r.err and "Traceback" not in r.err


def test_an_exception_in_user_code_shows_the_users_traceback(tmp_path):
    bad = write_project(tmp_path, {"bad.py": BAD}) / "bad.py"
    for function, line in (("raises", "raise ValueError('the data loader broke')"),
                           ("step_raises", "return torch.ones(2).sum() / undefined_name")):
        r = run(["verify", f"{bad}:{function}"], tmp_path)
        assert r.rc == 2
        assert "Traceback" in r.err and f'bad.py", line {line_of(bad, line)}' in r.err, r.err


BAD = '''\
import torch


def numbers():
    return 1, 2


def too_many():
    return (lambda: 0), None, None, None


def wrong_optimizer():
    return (lambda: torch.ones(1).sum()), "adam"


def not_a_loss():
    return lambda: torch.ones(2)


def raises():
    raise ValueError('the data loader broke')


def step_raises():
    def step():
        return torch.ones(2).sum() / undefined_name
    return step
'''


MILD = '''\
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        logits = self.head(x)
        return torch.log(torch.sigmoid(logits))


def mild():
    torch.manual_seed(0)
    model = Scorer(4)
    x = torch.randn(8, 4)  # logits near 0: sigmoid never underflows
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return (lambda: -model(x).mean()), optimizer, torch.amp.GradScaler("cpu", init_scale=256.0)
'''


def test_a_finding_whose_line_runs_harmlessly_is_not_triggered(tmp_path):
    path = write_project(tmp_path, {"mild.py": MILD}) / "mild.py"
    r = run(["verify", f"{path}:mild", "--output-format", "json"], tmp_path)
    data = json.loads(r.out)
    statuses = {(f["code"], f["line"]): f["status"] for f in data["findings"]}
    assert statuses.get(("AMP201", line_of(path, "return torch.log(torch.sigmoid(logits))"))) == "not-triggered", statuses
    assert r.rc == 0 and data["runtime_only"] == []
