"""Issue 13, item 6: `fix` respects the files it changes. A read-only file is refused (an error
naming it, the others are fixed); owner, group and mode are kept; a hard link is not split; a
symlink is never followed out of the project root; the temporary files of an interrupted run are
removed by the next one; a SIGKILL at any moment leaves each file with its old or its new content."""
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from cliutil import run, subprocess_env, write_project

OLD = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
NEW = 'import torch\nscaler = torch.amp.GradScaler("cuda")\n'


def test_a_read_only_file_is_refused_and_the_others_are_fixed(tmp_path):
    root = write_project(tmp_path / "p", {"ro.py": OLD, "rw.py": OLD})
    os.chmod(root / "ro.py", 0o444)
    r = run(["fix", "--output-format", "concise", "."], root)
    assert r.rc == 2
    assert "amplint: error: ro.py: read-only; not written (make it writable to fix it)" in r.err
    assert (root / "ro.py").read_text() == OLD and (root / "rw.py").read_text() == NEW
    assert "ro.py:2:10: AMP501 " in r.out  # what remains on disk is reported
    assert stat.S_IMODE(os.stat(root / "ro.py").st_mode) == 0o444


def test_mode_owner_and_group_are_kept(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": OLD})
    os.chmod(root / "a.py", 0o640)
    if os.geteuid() == 0:
        os.chown(root / "a.py", 4321, 4322)
    before = os.stat(root / "a.py")
    r = run(["fix", "."], root)
    assert r.rc == 0, r.err
    after = os.stat(root / "a.py")
    assert (root / "a.py").read_text() == NEW
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


def test_a_hard_link_is_not_split(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": OLD})
    (tmp_path / "elsewhere").mkdir()
    os.link(root / "a.py", tmp_path / "elsewhere" / "same.py")
    r = run(["fix", "."], root)
    assert r.rc == 0, r.err
    assert (tmp_path / "elsewhere" / "same.py").read_text() == NEW
    assert os.stat(root / "a.py").st_ino == os.stat(tmp_path / "elsewhere" / "same.py").st_ino


def test_a_symlink_out_of_the_project_root_is_never_written(tmp_path):
    outside = write_project(tmp_path / "outside", {"target.py": OLD}, marker=None)
    root = write_project(tmp_path / "p", {"a.py": OLD})
    os.symlink(outside / "target.py", root / "link.py")
    r = run(["fix", "."], root)  # met while walking: skipped with a warning
    assert (outside / "target.py").read_text() == OLD and (root / "a.py").read_text() == NEW
    assert "link.py: symlink to" in r.err
    r = run(["fix", "link.py"], root)  # named: refused
    assert r.rc == 2
    assert "link.py: a symlink to " in r.err and "outside the project root" in r.err
    assert (outside / "target.py").read_text() == OLD


def test_a_symlink_inside_the_root_keeps_pointing_at_the_fixed_file(tmp_path):
    root = write_project(tmp_path / "p", {"real.py": OLD})
    os.symlink("real.py", root / "alias.py")
    r = run(["fix", "alias.py"], root)
    assert r.rc == 0, r.err
    assert os.path.islink(root / "alias.py") and (root / "real.py").read_text() == NEW


def test_leftover_temporary_files_of_an_interrupted_run_are_removed(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": OLD})
    old = root / ".train.py.x1y2z3.amplint-tmp"
    fresh = root / ".train.py.a1b2c3.amplint-tmp"  # perhaps a concurrent run's: left alone
    unrelated = root / ".other.py.q1.amplint-tmp"  # no such file here
    for p in (old, fresh, unrelated):
        p.write_text("half writt")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    os.utime(unrelated, (time.time() - 3600, time.time() - 3600))
    r = run(["fix", "."], root)
    assert r.rc == 0, r.err
    assert not old.exists() and fresh.exists() and unrelated.exists()


def test_sigkill_at_any_moment_leaves_old_or_new_content(tmp_path):
    files = {f"m{i:02d}.py": OLD + f"x = {i}\n" for i in range(16)}
    template = write_project(tmp_path / "template", files)
    cmd = [sys.executable, "-m", "amplint", "fix", "--no-cache", "-q", "."]
    for trial, delay in enumerate((0.7, 1.4, 2.2)):
        root = tmp_path / f"t{trial}"
        shutil.copytree(template, root)
        p = subprocess.Popen(cmd, cwd=root, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        for name, text in files.items():
            got = (root / name).read_text()
            assert got in (text, text.replace(OLD, NEW)), (trial, name, got)
    subprocess.run(cmd, cwd=root, env=subprocess_env(), capture_output=True, timeout=120)  # the last trial's
    assert all((root / name).read_text() == text.replace(OLD, NEW) for name, text in files.items())
