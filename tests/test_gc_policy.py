"""The command line's garbage-collector policy (amplint.gc_policy): the same findings as a run
without it, serial and parallel, and the interpreter's collector as it was afterwards (tests run the
command line in their own process; API users' processes are theirs)."""
import gc
import json
from pathlib import Path

import amplint.engine as engine

from cliutil import run
from test_parallel import check as runner_check, many_files


def test_cli_run_of_many_files_same_findings_and_collector_restored(tmp_path):
    root = many_files(tmp_path / "p")
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    reference, _ = runner_check(root, 1)  # the API's Runner: no policy
    for jobs in ("1", "2"):
        r = run(["check", "--no-cache", "--output-format", "json", "-j", jobs, "."], root)
        assert r.rc == 1, r.err
        out = json.loads(r.out)
        assert [(Path(f["filename"]).resolve().relative_to(root.resolve()).as_posix(), f["code"],
                 f["location"]["row"]) for f in out] == [(f.path, f.code, f.line) for f in reference]
        assert gc.get_threshold() == thresholds and gc.get_freeze_count() == frozen
        assert engine.RELEASE_CONTEXTS is False


def test_cli_run_with_the_cache_same_findings_cold_and_warm_and_collector_restored(tmp_path, monkeypatch):
    # with the cache the summaries are built for the result keys, before any file is linted: the
    # policy covers that phase too, and is undone after a cold run as after a warm one
    monkeypatch.delenv("AMPLINT_NO_CACHE", raising=False)
    root = many_files(tmp_path / "p")
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    reference, _ = runner_check(root, 1)
    for run_kind in ("cold", "warm"):
        r = run(["check", "--cache-dir", str(tmp_path / "cache"), "--output-format", "json", "-j", "1", "."], root)
        assert r.rc == 1, (run_kind, r.err)
        out = json.loads(r.out)
        assert [(Path(f["filename"]).resolve().relative_to(root.resolve()).as_posix(), f["code"],
                 f["location"]["row"]) for f in out] == [(f.path, f.code, f.line) for f in reference], run_kind
        assert gc.get_threshold() == thresholds and gc.get_freeze_count() == frozen
        assert engine.RELEASE_CONTEXTS is False
    assert (tmp_path / "cache").is_dir()
