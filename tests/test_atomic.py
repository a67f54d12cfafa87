"""amplint.atomic: the one way amplint replaces a file it owns (cache entries, reports, guard dumps)."""
import os

import pytest

from amplint.atomic import replacing, write_atomic


def test_write_replaces_the_content_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "sub" / "report.json"
    with pytest.raises(FileNotFoundError):  # a missing folder is an error unless asked for
        write_atomic(target, b"first")
    write_atomic(target, b"first", make_parents=True)
    write_atomic(target, b"second\r\n", fsync=True)
    assert target.read_bytes() == b"second\r\n"
    assert os.listdir(target.parent) == ["report.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    target = tmp_path / "entry.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with replacing(target) as fh:
            fh.write(b"half of the new")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["entry.json"]


def test_a_relative_path_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_atomic("plain.txt", b"x")
    assert (tmp_path / "plain.txt").read_bytes() == b"x"
