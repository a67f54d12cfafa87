"""Runs the engine over discovered files, one project (root, regime) per root.

Per-file work is pure, so many files are linted in worker processes. The parent computes each
project's facts first (its file list and precision regime: the costly project-wide scan happens once,
not once per worker) and hands the projects to the workers when they start; results come back in
the order of the files, so the output is the same as a serial run's.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import gc_policy
from .cache import ProjectCache, default_dir
from .config import RuleSelection, Settings
from .discovery import Discovery, project_root
from .findings import FileResult, Finding
from .project import Project
from .results import entry_findings, make_entry, result_key, still_valid

# Below this many files a pool costs more (process start-up, shipping the projects) than it saves.
PARALLEL_MIN_FILES = 20
MAX_WORKERS = 32

Task = Tuple[Path, str, Path, Tuple[str, ...]]  # (file, display path, project root, selected codes)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (containers, taskset)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Runner:
    def __init__(self, settings: Settings, selection: RuleSelection, jobs: Optional[int] = None,
                 cache: bool = False, cache_dir: Optional[Path] = None) -> None:
        self.settings = settings
        self.selection = selection
        self.discovery = Discovery(settings.exclude, settings.extend_exclude)
        self._projects: Dict[Path, Project] = {}
        self.jobs = jobs  # worker processes; None: decided from the number of files and CPUs
        self.cache = cache  # use the on-disk cache (the command line's default; off for the API)
        self.cache_dir = cache_dir  # None: .amplint_cache/ at each project's root
        self.progress = None  # amplint.progress.Progress, told how many files are done
        self.checked_files: List[Tuple[Project, Path]] = []  # (project, file) of the last check
        # The command line's garbage-collector policy (amplint.gc_policy) for runs of many files;
        # off for API users, whose process is theirs.
        self.tune_gc = False

    def project_for(self, path: Path) -> Project:
        root = project_root(path)
        if root not in self._projects:
            cache = None
            if self.cache:
                cache = ProjectCache(self.cache_dir or default_dir(root), root.resolve())
            self._projects[root] = Project(root, self.discovery, self.settings.precision, cache=cache,
                                           assume=getattr(self.settings, "assume_precision", "auto"),
                                           limits=self.settings.limits)
        return self._projects[root]

    def save_caches(self) -> None:
        for project in self._projects.values():
            project.save_cache()

    def files(self, paths: Sequence[Path]) -> List[Path]:
        return self.discovery.files(paths)

    def workers_for(self, n_files: int) -> int:
        if self.jobs is not None:
            return max(1, min(self.jobs, n_files))
        if n_files <= PARALLEL_MIN_FILES:
            return 1
        return max(1, min(cpu_count(), MAX_WORKERS, n_files // (PARALLEL_MIN_FILES // 2)))

    def check(self, paths: Sequence[Path]) -> Tuple[List[Finding], List[str]]:
        tasks: List[Task] = []
        self.checked_files = []  # (project, file): what the summary's precision counts cover
        for f in self.files(paths):
            project = self.project_for(f)
            self.checked_files.append((project, f))
            tasks.append((f, f.as_posix(), project.root, tuple(sorted(self.selection.for_file(f)))))
        self.checked = [display for _, display, _, _ in tasks]  # for --verbose
        projects = self._projects_by_root()
        # The collector's policy covers the whole run, the summaries built for the result keys
        # included: with the default thresholds every full collection walks all the summaries
        # built so far, so that phase's CPU per line grew with the project (10 copies of one 100k-line
        # project: 36 µs/line against 29 with these thresholds, 29 for one copy).
        tune = self.tune_gc and len(tasks) >= PARALLEL_MIN_FILES
        if tune:
            gc_policy.start()
        try:
            return self._check(tasks, projects, tune)
        finally:
            if tune:
                gc_policy.stop()

    def _check(self, tasks: List[Task], projects: Dict[Path, Project], tune: bool) -> Tuple[List[Finding], List[str]]:
        # Results the cache still holds (amplint.results); the other files are linted.
        keys = [self._result_key(task, projects[task[2]]) for task in tasks]
        done: Dict[int, FileResult] = {}
        for i, (task, key) in enumerate(zip(tasks, keys)):
            hit = self._cached(task, key, projects[task[2]])
            if hit is not None:
                done[i] = hit
        todo = [i for i in range(len(tasks)) if i not in done]
        workers = self.workers_for(len(todo))
        self.workers = workers
        linted: Optional[List[Tuple[FileResult, list]]] = None
        if self.progress is not None:
            self.progress.start(len(todo))
        tune = tune and len(todo) >= PARALLEL_MIN_FILES
        if tune:
            gc_policy.freeze()  # the summaries are long-lived
        try:
            if workers > 1:
                linted = self._parallel([tasks[i] for i in todo], workers, tune)
            if linted is None:
                linted = []
                for i in todo:
                    linted.append(_lint_recorded(tasks[i], projects[tasks[i][2]], self.settings))
                    self._advance(len(linted))
                    if tune and len(linted) == 1:
                        gc_policy.freeze()  # the first file built the project's facts
        finally:
            if self.progress is not None:
                self.progress.close()
        for i, (result, deps) in zip(todo, linted):
            done[i] = result
            self._store(tasks[i], keys[i], projects[tasks[i][2]], result, deps)
        results = [done[i] for i in range(len(tasks))]
        for project in projects.values():
            if project.cache is not None:
                project.regime  # the summary line states it: into the cache with the rest
        self.save_caches()
        findings: List[Finding] = []
        errors: List[str] = []
        for result in results:
            findings.extend(result.findings)
            errors.extend(result.errors)
        findings.sort(key=Finding.sort_key)
        return findings, errors

    def _advance(self, done: int) -> None:
        if self.progress is not None:
            self.progress.update(done)

    def _result_key(self, task: Task, project: Project) -> Optional[Tuple[str, str]]:
        if project.cache is None:
            return None
        path, display, _, codes = task
        content = project.content_key(path)
        if content is None:
            return None
        return content, result_key(content, display, self.settings, codes)

    def _cached(self, task: Task, key, project: Project) -> Optional[FileResult]:
        if key is None:
            return None
        content, rkey = key
        entry = project.cache.result(rkey)
        if not isinstance(entry, dict) or entry.get("content") != content:
            return None
        findings = entry_findings(entry)
        if findings is None:
            return None
        if entry.get("fingerprint") != project.fingerprint():
            if entry.get("declarations") != project.declarations() or not still_valid(project, entry):
                return None
            project.cache.put_result(rkey, {**entry, "fingerprint": project.fingerprint()})
        return FileResult(task[1], findings)

    def _store(self, task: Task, key, project: Project, result: FileResult, deps: list) -> None:
        if key is None or result.errors:
            return  # an internal error is reported again next time, not remembered
        content, rkey = key
        entry = make_entry(content, project.fingerprint(), project.declarations(), deps, result.findings)
        if entry is not None:
            project.cache.put_result(rkey, entry)

    def projects(self) -> List[Project]:
        """The projects of the files linted so far."""
        return list(self._projects.values())

    def _projects_by_root(self) -> Dict[Path, Project]:
        return {p.root: p for p in self._projects.values()}

    def _parallel(self, tasks: List[Task], workers: int, tune: bool = False) -> Optional[List[Tuple[FileResult, list]]]:
        """Lint in worker processes; None when a pool cannot be used here (the caller goes serial)."""
        projects = self._projects_by_root()
        for project in projects.values():
            project.prepare()  # the project-wide scan, once, in the parent
        if tune:
            gc_policy.freeze()  # the workers start with the project facts frozen (and shared by fork)
        chunksize = max(1, len(tasks) // (workers * 4))
        try:
            executor = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                                           initargs=(projects, self.settings))
        except (OSError, ValueError, NotImplementedError, ImportError):
            return None
        try:
            results = []
            for i, (result, deps, (fingerprint, answers)) in enumerate(
                    executor.map(_lint_task, tasks, chunksize=chunksize)):
                results.append((result, deps))
                cache = projects[tasks[i][2]].cache
                if answers and cache is not None:
                    for key, data in answers.items():  # the worker's callers answers: the parent's cache is saved
                        cache.put_answer(fingerprint, key, data)
                self._advance(len(results))
        except BaseException as e:
            executor.shutdown(wait=False, cancel_futures=True)
            if isinstance(e, Exception):  # a broken pool, a pickling problem: lint serially instead
                return None
            raise  # KeyboardInterrupt
        executor.shutdown(wait=True)
        return results


def lint_file(path: Path, display: str, project: Project, codes, settings=None) -> FileResult:
    """``engine.lint_file``, imported when a file is linted: the engine imports libcst and the
    rules, which a run answered from the cache never needs."""
    from .engine import lint_file as lint

    return lint(path, display, project, codes, settings)


# ---- worker side ------------------------------------------------------------------------------------
_WORKER_PROJECTS: Dict[Path, Project] = {}
_WORKER_SETTINGS: Optional[Settings] = None


def _init_worker(projects: Dict[Path, Project], settings: Settings) -> None:
    global _WORKER_SETTINGS
    _WORKER_PROJECTS.clear()
    _WORKER_PROJECTS.update(projects)
    _WORKER_SETTINGS = settings


def _lint_task(task: Task) -> Tuple[FileResult, list, Tuple[str, dict]]:
    project = _WORKER_PROJECTS[task[2]]
    result, deps = _lint_recorded(task, project, _WORKER_SETTINGS)
    return result, deps, (project.cache.take_answers() if project.cache is not None else ("", {}))


def _lint_recorded(task: Task, project: Project, settings) -> Tuple[FileResult, list]:
    """Lint one file, noting the project facts its analysis reads (for its cached result)."""
    path, display, _, codes = task
    project.start_recording()
    try:
        result = lint_file(path, display, project, set(codes), settings)
    finally:
        deps = project.stop_recording()
    return result, deps
