"""The progress bar: only on a terminal, never in CI, with -q or beside machine-readable output;
drawn after a delay and erased before the report."""
import io
from types import SimpleNamespace

from amplint.progress import DELAY, Progress, wanted

from cliutil import run, write_project


class Tty(io.StringIO):
    def isatty(self):
        return True


def args(**kw):
    return SimpleNamespace(**{"quiet": False, "output_format": "full", **kw})


def test_shown_only_where_a_person_watches():
    assert wanted(args(), Tty(), environ={})
    assert wanted(args(output_format="concise"), Tty(), environ={})
    assert not wanted(args(), io.StringIO(), environ={})  # stderr is not a terminal
    assert not wanted(args(), Tty(), environ={"CI": "true"})
    assert not wanted(args(), Tty(), environ={"GITHUB_ACTIONS": "true"})
    assert not wanted(args(quiet=True), Tty(), environ={})
    for fmt in ("json", "sarif", "github", "gitlab"):
        assert not wanted(args(output_format=fmt), Tty(), environ={})


def test_drawn_after_the_delay_and_erased():
    now = [0.0]
    stream = Tty()
    bar = Progress(stream, clock=lambda: now[0])
    bar.start(10)
    bar.update(3)
    assert stream.getvalue() == ""  # a fast run prints nothing
    now[0] = DELAY + 0.5
    bar.update(5)
    assert stream.getvalue().endswith("5/10 files") and "#" * 15 in stream.getvalue()
    bar.close()
    assert stream.getvalue().endswith("\r\033[K")


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path):
    root = write_project(tmp_path / "p", {f"m{i}.py": "x = 1\n" for i in range(5)})
    r = run(["check", "."], root)
    assert r.rc == 0 and "\r" not in r.err
