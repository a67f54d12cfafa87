"""Issue 13, items 3, 4 and 7: symlink loops and dangling links are skipped with a warning, a walk
never follows a link out of the project root, what is named on the command line and is not a
regular file or directory is an exit-2 error without being opened, and a failing stdout is one line
and exit 2 (a broken pipe keeps the findings' exit code)."""
import os
import stat
import subprocess
import sys
import threading

import pytest

from cliutil import run, run_module, subprocess_env, write_project

HALF_ADAM = ("import torch\nmodel = torch.nn.Linear(2, 2).half()\n"
             "opt = torch.optim.Adam(model.parameters(), eps=1e-8)\nloss.backward()\n")


def concise(root, *argv):
    return run(["check", "--output-format", "concise", *argv], root)


@pytest.fixture
def looped(tmp_path):
    root = write_project(tmp_path / "p", {"real.py": HALF_ADAM})
    os.symlink("b.py", root / "a.py")
    os.symlink("a.py", root / "b.py")
    os.symlink("nowhere.py", root / "dangling.py")
    return root


def test_symlink_loops_and_dangling_links_are_skipped_with_a_warning(looped):
    r = concise(looped, ".")
    assert r.rc == 1, r.err
    assert "real.py:3:" in r.out and " AMP101 " in r.out
    assert "Traceback" not in r.err
    assert "amplint: warning: a.py: symlink loop; skipped" in r.err
    assert "amplint: warning: b.py: symlink loop; skipped" in r.err
    assert "amplint: warning: dangling.py: dangling symlink; skipped" in r.err


def test_a_symlink_loop_in_the_project_does_not_lose_a_named_files_findings(looped):
    r = concise(looped, "real.py")
    assert r.rc == 1, r.err
    assert "real.py:3:" in r.out and " AMP101 " in r.out
    assert "internal error" not in r.err and "Traceback" not in r.err


def test_a_symlink_loop_named_on_the_command_line_is_exit_2(looped):
    r = concise(looped, "a.py", "real.py")
    assert r.rc == 2
    assert r.err == "amplint: error: a.py: symlink loop\n"


def test_a_walk_never_follows_a_symlink_out_of_the_project_root(tmp_path):
    outside = write_project(tmp_path / "outside", {"hazard.py": HALF_ADAM}, marker=None)
    root = write_project(tmp_path / "p", {"ok.py": "x = 1\n"})
    os.symlink(outside / "hazard.py", root / "linked.py")
    r = concise(root, ".")
    assert r.rc == 0, r.out
    assert "linked.py: symlink to " in r.err and "outside the project root" in r.err


def test_a_fifo_named_on_the_command_line_is_exit_2_without_opening_it(tmp_path):
    root = write_project(tmp_path / "p", {"good.py": "x = 1\n"})
    os.mkfifo(root / "fifo.py")
    r = run_module(["check", "fifo.py", "good.py"], root, timeout=30)  # before: blocked forever
    assert r.rc == 2
    assert r.err == "amplint: error: fifo.py: not a regular file or directory\n"


def test_a_device_named_on_the_command_line_is_exit_2(tmp_path):
    root = write_project(tmp_path / "p", {"good.py": "x = 1\n"})
    r = run(["check", os.devnull], root)
    assert r.rc == 2 and r.err == f"amplint: error: {os.devnull}: not a regular file or directory\n"


def test_a_fifo_met_while_walking_is_skipped(tmp_path):
    root = write_project(tmp_path / "p", {"good.py": "x = 1\n"})
    os.mkfifo(root / "fifo.py")
    r = run_module(["check", "."], root, timeout=30)
    assert r.rc == 0, r.err


# ---- output failures ------------------------------------------------------------------------------
def _amplint(argv, cwd, **kw):
    return subprocess.run([sys.executable, "-m", "amplint", *argv], cwd=cwd, env=subprocess_env(),
                          timeout=60, **kw)


def test_closed_stdout_is_one_line_and_exit_2(tmp_path):
    root = write_project(tmp_path / "p", {"real.py": HALF_ADAM})
    p = subprocess.run(f"'{sys.executable}' -m amplint check . >&-", shell=True, cwd=root, env=subprocess_env(),
                       capture_output=False, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr == "amplint: error: cannot write the output: stdout is closed\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_one_line_and_exit_2(tmp_path):
    root = write_project(tmp_path / "p", {"real.py": HALF_ADAM})
    with open("/dev/full", "w") as full:
        p = _amplint(["check", "--output-format", "sarif", "."], root, stdout=full, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 2
    assert p.stderr == "amplint: error: cannot write the output: No space left on device\n"


def test_a_broken_pipe_keeps_the_exit_code_of_the_findings(tmp_path):
    # Far more output than a pipe holds, so that writing fails once the reader is gone.
    lines = "".join(f"s{i} = torch.cuda.amp.GradScaler()\n" for i in range(1500))
    root = write_project(tmp_path / "p", {"many.py": "import torch\n" + lines})
    p = subprocess.Popen([sys.executable, "-m", "amplint", "check", "--output-format", "concise", "."], cwd=root,
                         env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=60) == 1
    assert first.startswith(b"many.py:2:")
    assert err == b""


def test_output_file_that_is_a_fifo_is_written_not_replaced(tmp_path):
    root = write_project(tmp_path / "p", {"real.py": HALF_ADAM})
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    r = run(["check", "--output-format", "concise", "-o", fifo, "."], root)
    reader.join(timeout=30)
    assert r.rc == 1, r.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    assert "real.py:3:" in got[0]
