"""Run amplint over real projects, join the findings with their triage, and write the results.

    python benchmarks/sweep.py                # fetch (if needed), check every project, write results
    python benchmarks/sweep.py timm fairseq   # only these projects (results of the others are kept)
    python benchmarks/sweep.py --check        # also exit 1 on untriaged findings, on findings
                                              # triaged FP, on triaged TPs no longer reported and on
                                              # internal errors (a regression gate)
    python benchmarks/sweep.py --report-only  # re-render RESULTS.md from results/*.json + triage
    python benchmarks/sweep.py --fix          # also run `amplint fix --unsafe-fixes` on a copy of
                                              # each project and compile every changed file

amplint runs as a subprocess (``python -m amplint check --output-format json``) on each project
root, so the precision regime is inferred per project exactly as for a user. The configuration is
benchmarks/sweep.toml (amplint's defaults), passed with ``--config`` so that no pyproject.toml
above the cache changes what runs.

Files:
- results/sweep.json   raw findings (repo, path relative to the project root, line, column, code,
                       message, confidence, fix applicability, the stripped source line)
- results/fix.json     the fix run (--fix): per project files changed, fixes applied, findings
                       remaining, files failing to compile (must be 0), second-pass changes (must be 0)
- triage.json          committed by hand: one entry per finding key (repo, path, code, stripped
                       source line; not the line number, so keys survive edits elsewhere in the
                       file) with {"verdict": "TP" | "FP", "note": why}
- fp_classes.md        committed by hand: the false-positive classes found and how each was fixed
- RESULTS.md           generated: the tables, the findings with their verdicts, fp_classes.md, the fix run
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import fetch  # noqa: E402  (benchmarks/fetch.py)

RESULTS_DIR = HERE / "results"
SWEEP_JSON = RESULTS_DIR / "sweep.json"
FIX_JSON = RESULTS_DIR / "fix.json"
TRIAGE_JSON = HERE / "triage.json"
FP_CLASSES_MD = HERE / "fp_classes.md"
RESULTS_MD = HERE / "RESULTS.md"
CONFIG = HERE / "sweep.toml"

Key = Tuple[str, str, str, str]  # repo, path, code, stripped line text


# ---- running amplint ------------------------------------------------------------------------------
def amplint_cmd(command: str, *args: str) -> List[str]:
    return [sys.executable, "-m", "amplint", command, "--config", str(CONFIG), *args]


# Which amplint runs: this checkout's working tree (default), or a committed revision exported with
# `git archive` into .cache/amplint-<sha>/ (--at REV), so that a sweep is not disturbed by edits in
# progress and its results name exactly the code that produced them.
AMPLINT_SRC = REPO
AMPLINT_REV: Optional[str] = None


def use_revision(rev: str) -> None:
    global AMPLINT_SRC, AMPLINT_REV
    import io
    import tarfile
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if sha.returncode != 0:
        raise SystemExit(f"sweep: unknown revision {rev!r}: {sha.stderr.strip()}")
    sha_s = sha.stdout.strip()
    dest = fetch.CACHE / f"amplint-{sha_s}"
    if not (dest / "amplint" / "__init__.py").is_file():
        data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", sha_s],
                              stdout=subprocess.PIPE, check=True).stdout
        tmp = dest.with_name(dest.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            tf.extractall(tmp)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    AMPLINT_SRC, AMPLINT_REV = dest, sha_s


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    # The amplint chosen above, even when another one is installed.
    env["PYTHONPATH"] = os.pathsep.join([str(AMPLINT_SRC), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _line_text(path: Path, line: int, cache: Dict[Path, List[str]]) -> str:
    if path not in cache:
        try:
            cache[path] = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _strip_prefixes(text: str, prefixes: Sequence[str]) -> str:
    for p in prefixes:
        text = text.replace(p, "")
    return text


def normalise(raw: Sequence[dict], project: "fetch.Project", root: Path) -> List[dict]:
    """amplint's JSON findings -> sweep records, with paths relative to the project root."""
    cache: Dict[Path, List[str]] = {}
    out = []
    # Evidence in messages names files by the path amplint was given: keep it relative to the
    # project root, so that results do not depend on where the cache lives.
    prefixes = sorted({f"{root.resolve()}/", f"{root}/", f"{os.path.relpath(root, AMPLINT_SRC)}/"}, key=len, reverse=True)
    for f in raw:
        path = Path(f["filename"])
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = path.as_posix()
        out.append({
            "repo": project.name,
            "path": rel,
            "line": f["location"]["row"],
            "column": f["location"]["column"],
            "code": f["code"],
            "message": _strip_prefixes(f["message"], prefixes),
            "confidence": f.get("confidence"),
            "fix": (f.get("fix") or {}).get("applicability"),
            "line_text": _line_text(path, f["location"]["row"], cache),
        })
    out.sort(key=lambda r: (r["repo"], r["path"], r["line"], r["column"], r["code"]))
    return out


def check_project(project: "fetch.Project", select: Optional[str]) -> dict:
    root = project.root
    args = ["--output-format", "json", "--exit-zero"]
    if select:
        args += ["--select", select]
    t0 = time.perf_counter()
    proc = subprocess.run(amplint_cmd("check", *args, str(root)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=_env(), cwd=str(AMPLINT_SRC))
    seconds = time.perf_counter() - t0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("amplint: error:")]
    if proc.returncode not in (0, 2):
        raise SystemExit(f"sweep: amplint check {root} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    try:
        raw = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        raise SystemExit(f"sweep: amplint check {root} did not print JSON:\n{proc.stdout[:2000]}\n{proc.stderr[-2000:]}")
    files = sum(1 for _ in fetch.fetch_files(root))
    return {
        "version": project.version,
        "dist": project.dist,
        "files": files,
        "seconds": round(seconds, 1),
        "errors": errors,
        "findings": normalise(raw, project, root),
    }


# ---- triage -----------------------------------------------------------------------------------------
def key_of(rec: dict) -> Key:
    return (rec["repo"], rec["path"], rec["code"], rec["line_text"])


def load_triage() -> Dict[Key, dict]:
    if not TRIAGE_JSON.is_file():
        return {}
    entries = json.loads(TRIAGE_JSON.read_text(encoding="utf-8"))
    out: Dict[Key, dict] = {}
    for e in entries:
        k = key_of(e)
        if e.get("verdict") not in ("TP", "FP"):
            raise SystemExit(f"triage.json: verdict must be TP or FP: {e}")
        if k in out:
            raise SystemExit(f"triage.json: duplicate entry {k}")
        out[k] = e
    return out


def save_triage(triage: Dict[Key, dict]) -> None:
    entries = sorted(triage.values(), key=lambda e: key_of(e))
    TRIAGE_JSON.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# ---- the report ------------------------------------------------------------------------------------
def _precision(tp: int, fp: int) -> str:
    return f"{100.0 * tp / (tp + fp):.0f} %" if tp + fp else "–"


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def joined(sweep: dict, triage: Dict[Key, dict]) -> Tuple[List[Tuple[dict, Optional[dict]]], List[dict]]:
    """(finding, its triage entry or None) for every finding; and the triage entries of the swept
    projects that match no finding any more."""
    rows = []
    seen = set()
    for name, proj in sweep["projects"].items():
        for rec in proj["findings"]:
            entry = triage.get(key_of(rec))
            seen.add(key_of(rec))
            rows.append((rec, entry))
    swept = set(sweep["projects"])
    codes = set(sweep.get("codes") or [])
    gone = [e for k, e in triage.items() if k not in seen and e["repo"] in swept
            and (not codes or e["code"] in codes)]
    return rows, sorted(gone, key=key_of)


def render(sweep: dict, triage: Dict[Key, dict], fix: Optional[dict]) -> str:
    rows, gone = joined(sweep, triage)
    codes = sorted({r["code"] for r, _ in rows} | set(sweep.get("codes") or []))
    repos = list(sweep["projects"])
    per_rule = defaultdict(Counter)
    per_repo = defaultdict(Counter)
    for rec, entry in rows:
        verdict = entry["verdict"] if entry else "untriaged"
        per_rule[rec["code"]][verdict] += 1
        per_repo[rec["repo"]][rec["code"]] += 1
    L: List[str] = []
    w = L.append
    w("# amplint on real code: sweep results")
    w("")
    w("Generated by `python benchmarks/sweep.py` from `results/sweep.json`, `triage.json`, "
      "`fp_classes.md` and `results/fix.json`; edit those, not this file.")
    w("")
    w(f"amplint {sweep.get('amplint', '?')} at commit `{sweep.get('commit', '?')}`, "
      f"rules: {', '.join(sweep.get('codes') or codes)}.")
    w("")
    w("| Project | Pinned release | Python files | Findings | Seconds |")
    w("|---|---|---:|---:|---:|")
    for name, proj in sweep["projects"].items():
        w(f"| {name} | `{proj['dist']}=={proj['version']}` | {proj['files']} | {len(proj['findings'])} | "
          f"{proj['seconds']} |")
    w("")
    w("## Per rule")
    w("")
    w("Precision = TP / (TP + FP) over the findings reported now. \"Fixed FP\" counts triage entries "
      "(a key: project, file, rule, line text) judged FP earlier whose finding is no longer reported; each "
      "FP class and its fix is described below.")
    w("")
    w("| Rule | Findings | TP | FP | Untriaged | Precision | Fixed FP |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    fixed_fp = Counter(e["code"] for e in gone if e["verdict"] == "FP")
    lost_tp = Counter(e["code"] for e in gone if e["verdict"] == "TP")
    tot = Counter()
    for code in codes:
        c = per_rule[code]
        n = sum(c.values())
        tot.update(c)
        tot["fixed"] += fixed_fp[code]
        w(f"| {code} | {n} | {c['TP']} | {c['FP']} | {c['untriaged']} | {_precision(c['TP'], c['FP'])} | "
          f"{fixed_fp[code]} |")
    w(f"| **all** | {sum(tot[k] for k in ('TP', 'FP', 'untriaged'))} | {tot['TP']} | {tot['FP']} | "
      f"{tot['untriaged']} | {_precision(tot['TP'], tot['FP'])} | {tot['fixed']} |")
    w("")
    if lost_tp:
        w(f"**Triaged true positives no longer reported (recall regressions), in triage entries:** "
          f"{', '.join(f'{c} × {n}' for c, n in sorted(lost_tp.items()))}; see the list at the end.")
        w("")
    w("## Per project")
    w("")
    w("| Project | " + " | ".join(codes) + " | all |")
    w("|---|" + "---:|" * (len(codes) + 1))
    for repo in repos:
        c = per_repo[repo]
        w(f"| {repo} | " + " | ".join(str(c[code]) if c[code] else "·" for code in codes)
          + f" | {sum(c.values())} |")
    w("")
    w("## Findings and verdicts")
    w("")
    w("| Verdict | Rule | Where | Line | Why |")
    w("|---|---|---|---|---|")
    for rec, entry in rows:
        verdict = entry["verdict"] if entry else "**untriaged**"
        note = entry.get("note", "") if entry else ""
        w(f"| {verdict} | {rec['code']} | `{rec['repo']}/{rec['path']}:{rec['line']}` | "
          f"`{_md_cell(rec['line_text'][:90])}` | {_md_cell(note)} |")
    w("")
    if FP_CLASSES_MD.is_file():
        text = FP_CLASSES_MD.read_text(encoding="utf-8").strip()
        if text:
            w(text)
            w("")
    if gone:
        w("## Triaged findings no longer reported")
        w("")
        w("| Verdict | Rule | Where | Line | Note |")
        w("|---|---|---|---|---|")
        for e in gone:
            w(f"| {e['verdict']} | {e['code']} | `{e['repo']}/{e['path']}` | `{_md_cell(e['line_text'][:90])}` | "
              f"{_md_cell(e.get('note', ''))} |")
        w("")
    w("## Fix run (`amplint fix --unsafe-fixes` on a copy of each project)")
    w("")
    if not fix:
        w("Not run yet: `python benchmarks/sweep.py --fix`.")
    else:
        w(f"amplint commit `{fix.get('commit', '?')}`. Every changed file is compiled "
          "(`compile(..., 'exec')`, as py_compile does); a second `amplint fix` pass must change nothing (fixed point).")
        w("")
        w("| Project | Findings before | Fixes applied | Files changed | Findings after | "
          "Flagged again after a fix | Files failing to compile | Second-pass changes |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        t = Counter()
        for name, r in fix["projects"].items():
            w(f"| {name} | {r['findings_before']} | {r['fixes_applied']} | {r['files_changed']} | "
              f"{r['findings_after']} | {r.get('introduced_by_fixes', 0)} | {len(r['compile_failures'])} | "
              f"{r['second_pass_files_changed']} |")
            for k in ("findings_before", "fixes_applied", "files_changed", "findings_after",
                      "second_pass_files_changed", "introduced_by_fixes"):
                t[k] += r.get(k, 0)
            t["compile"] += len(r["compile_failures"])
        w(f"| **all** | {t['findings_before']} | {t['fixes_applied']} | {t['files_changed']} | "
          f"{t['findings_after']} | {t['introduced_by_fixes']} | {t['compile']} | {t['second_pass_files_changed']} |")
        w("")
        fails = [(n, f) for n, r in fix["projects"].items() for f in r["compile_failures"]]
        for n, f in fails:
            w(f"- compile failure: `{n}/{f['path']}`: {_md_cell(f['error'])}")
        if fails:
            w("")
        by_code = Counter()
        for r in fix["projects"].values():
            by_code.update(r.get("fixed_by_code", {}))
        if by_code:
            w("Findings removed by the fixes, per rule: "
              + ", ".join(f"{c} × {n}" for c, n in sorted(by_code.items())) + ".")
            w("")
    return "\n".join(L).rstrip() + "\n"


# ---- fix mode --------------------------------------------------------------------------------------
def _py_files(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in fetch.fetch_files(root)}


def _fix_once(root: Path) -> Tuple[int, List[str], str]:
    """Run ``amplint fix --unsafe-fixes`` once; (fixes applied, remaining finding lines, stderr)."""
    proc = subprocess.run(amplint_cmd("fix", "--unsafe-fixes", "--exit-zero", "--output-format", "concise", str(root)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=str(AMPLINT_SRC))
    if proc.returncode not in (0, 2):
        raise SystemExit(f"sweep: amplint fix {root} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    m = re.search(r"\((\d+) fixed, \d+ remaining\)", proc.stdout)
    fixed = int(m.group(1)) if m else 0
    remaining = [l for l in proc.stdout.splitlines() if re.match(r".+:\d+:\d+: [A-Z]+\d+ ", l)]
    return fixed, remaining, proc.stderr


def _codes_of(lines: Iterable[str]) -> Counter:
    return Counter(re.match(r".+:\d+:\d+: ([A-Z]+\d+) ", l).group(1) for l in lines)


def _save_diff(project: "fetch.Project", before: Dict[str, bytes], after: Dict[str, bytes], changed: List[str]) -> None:
    """The fixes as a unified diff, for review: benchmarks/.cache/fix-diffs/<project>.diff (not committed)."""
    import difflib
    out = []
    for rel in changed:
        a = before.get(rel, b"").decode("utf-8", "replace").splitlines(keepends=True)
        b = after[rel].decode("utf-8", "replace").splitlines(keepends=True)
        out.extend(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}"))
    d = fetch.CACHE / "fix-diffs"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{project.name}.diff").write_text("".join(out), encoding="utf-8")


def fix_project(project: "fetch.Project", before: List[dict]) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"amplint-fix-{project.name}-") as tmp:
        root = Path(tmp) / project.root.name
        shutil.copytree(project.root, root, symlinks=True)
        original = _py_files(root)
        fixed, remaining, err1 = _fix_once(root)
        after = _py_files(root)
        changed = sorted(p for p in after if after[p] != original.get(p))
        failures = []
        for rel in changed:
            try:
                # What py_compile does, without writing a .pyc: a full compile (syntax and the
                # compiler's own checks, e.g. 'return' outside a function), not only a parse.
                compile(after[rel], str(root / rel), "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as e:
                failures.append({"path": rel, "error": f"{type(e).__name__}: {e}"[:300]})
        _save_diff(project, original, after, changed)
        fixed2, remaining2, err2 = _fix_once(root)
        after2 = _py_files(root)
        changed2 = sorted(p for p in after2 if after2[p] != after.get(p))
        removed = Counter(r["code"] for r in before)
        removed.subtract(_codes_of(remaining))
        return {
            "version": project.version,
            "findings_before": len(before),
            "fixes_applied": fixed,
            "files_changed": len(changed),
            "changed_files": changed,
            "findings_after": len(remaining),
            # Each fix removes one finding; more findings than that after fixing means the fixed code
            # was flagged again (a fix that does not leave its hazard gone on re-check).
            "introduced_by_fixes": max(0, len(remaining) - (len(before) - fixed)),
            "fixed_by_code": {c: n for c, n in sorted(removed.items()) if n > 0},
            "compile_failures": failures,
            "second_pass_fixes": fixed2,
            "second_pass_files_changed": len(changed2),
            "errors": [l for l in (err1 + err2).splitlines() if l.startswith("amplint: error:")],
        }


# ---- main ------------------------------------------------------------------------------------------
def _commit() -> str:
    """The revision whose amplint ran; a working tree with changes under amplint/ says so."""
    if AMPLINT_REV:
        return AMPLINT_REV
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip() or "?"
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "amplint"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return "?"
    return f"{head} + uncommitted changes" if dirty else head


def _amplint_version() -> str:
    proc = subprocess.run([sys.executable, "-m", "amplint", "--version"], stdout=subprocess.PIPE, text=True,
                          env=_env(), cwd=str(AMPLINT_SRC))
    return proc.stdout.strip().replace("amplint ", "") or "?"


def _rule_codes() -> List[str]:
    """The rules the sweep's configuration (amplint's defaults) runs: off-by-default rules (AMP205)
    are not among them, so their triage entries are kept, not counted as gone."""
    proc = subprocess.run([sys.executable, "-m", "amplint", "rule", "--all"], stdout=subprocess.PIPE, text=True,
                          env=_env(), cwd=str(AMPLINT_SRC))
    codes = [line.split()[0] for line in proc.stdout.splitlines() if re.match(r"AMP\d+", line)]
    probe = ("from amplint.config import RuleSelection, Settings\n"
             "from amplint.rules import rule_codes\n"
             "print(' '.join(sorted(RuleSelection(Settings(), rule_codes()).enabled)))")
    enabled = subprocess.run([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True, env=_env(),
                             cwd=str(AMPLINT_SRC)).stdout.split()
    return [c for c in codes if c in enabled] if enabled else codes


def _load_json(path: Path) -> Optional[dict]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def gate(sweep: dict, triage: Dict[Key, dict]) -> List[str]:
    """What makes ``--check`` fail."""
    rows, gone = joined(sweep, triage)
    problems = []
    for rec, entry in rows:
        where = f"{rec['repo']}/{rec['path']}:{rec['line']}: {rec['code']}"
        if entry is None:
            problems.append(f"untriaged: {where} {rec['message']}\n    {rec['line_text']}")
        elif entry["verdict"] == "FP":
            problems.append(f"false positive still reported: {where}  ({entry.get('note', '')})")
    for e in gone:
        if e["verdict"] == "TP":
            problems.append(f"true positive no longer reported: {e['repo']}/{e['path']}: {e['code']}\n    {e['line_text']}")
    for name, proj in sweep["projects"].items():
        for err in proj.get("errors", []):
            problems.append(f"internal error in {name}: {err}")
    return problems


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("projects", nargs="*", help=f"subset of: {', '.join(fetch.BY_NAME)}")
    ap.add_argument("--check", action="store_true", help="exit 1 on untriaged findings, FPs, lost TPs or errors")
    ap.add_argument("--report-only", action="store_true", help="do not run amplint; re-render RESULTS.md")
    ap.add_argument("--fix", action="store_true", help="also run the fix check on copies of the projects")
    ap.add_argument("--select", help="rule codes to run (default: all); results are then partial")
    ap.add_argument("--at", metavar="REV",
                    help="run the amplint of this committed revision (e.g. HEAD) instead of the working tree")
    ap.add_argument("--jobs", type=int, default=1,
                    help="projects checked at once (default 1: amplint itself lints files in parallel)")
    ap.add_argument("--stub-triage", action="store_true",
                    help="write .cache/untriaged.json: the untriaged findings, ready to copy into triage.json")
    args = ap.parse_args(argv)

    projects = fetch.select(args.projects)
    if args.at:
        use_revision(args.at)
    triage = load_triage()
    sweep = _load_json(SWEEP_JSON) or {"projects": {}}
    if not args.report_only:
        for p in projects:
            fetch.ensure(p, log=lambda m: print(m, file=sys.stderr))
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = dict(zip([p.name for p in projects], pool.map(lambda p: check_project(p, args.select), projects)))
        # Keep the other projects' results (a partial run), in the pinned order.
        merged = {**sweep.get("projects", {}), **results}
        sweep = {
            "amplint": _amplint_version(),
            "commit": _commit(),
            "codes": _rule_codes() if not args.select else sorted(args.select.split(",")),
            "projects": {p.name: merged[p.name] for p in fetch.PROJECTS if p.name in merged},
        }
        _write_json(SWEEP_JSON, sweep)
    fix = _load_json(FIX_JSON)
    if args.fix:
        fixes = {}
        for p in projects:
            before = sweep["projects"].get(p.name, {}).get("findings", [])
            print(f"fixing a copy of {p.name} ...", file=sys.stderr)
            fixes[p.name] = fix_project(p, before)
        prev = (fix or {}).get("projects", {})
        merged = {**prev, **fixes}
        fix = {"commit": _commit(), "projects": {p.name: merged[p.name] for p in fetch.PROJECTS if p.name in merged}}
        _write_json(FIX_JSON, fix)
    RESULTS_MD.write_text(render(sweep, triage, fix), encoding="utf-8")

    # The table on the terminal: counts per project per rule, and the triage state.
    rows, gone = joined(sweep, triage)
    codes = sorted({r["code"] for r, _ in rows})
    print(f"{'project':<14}" + "".join(f"{c:>8}" for c in codes) + f"{'all':>8}")
    for name, proj in sweep["projects"].items():
        c = Counter(r["code"] for r in proj["findings"])
        print(f"{name:<14}" + "".join(f"{c[code] or '.':>8}" for code in codes) + f"{sum(c.values()):>8}")
    verdicts = Counter((entry["verdict"] if entry else "untriaged") for _, entry in rows)
    print(f"\nTP {verdicts['TP']}  FP {verdicts['FP']}  untriaged {verdicts['untriaged']}  "
          f"precision {_precision(verdicts['TP'], verdicts['FP'])}   -> {RESULTS_MD.relative_to(REPO)}")
    if fix:
        bad = sum(len(r["compile_failures"]) for r in fix["projects"].values())
        print(f"fix run: {sum(r['fixes_applied'] for r in fix['projects'].values())} fixes in "
              f"{sum(r['files_changed'] for r in fix['projects'].values())} files, {bad} failing to compile, "
              f"{sum(r['second_pass_files_changed'] for r in fix['projects'].values())} changed by a second pass")
    if args.stub_triage:
        stub = [{"repo": r["repo"], "path": r["path"], "code": r["code"], "line_text": r["line_text"],
                 "verdict": "?", "note": "", "line": r["line"], "message": r["message"]}
                for r, entry in rows if entry is None]
        _write_json(fetch.CACHE / "untriaged.json", stub)  # type: ignore[arg-type]
        print(f"{len(stub)} untriaged findings -> {(fetch.CACHE / 'untriaged.json').relative_to(REPO)}")
    status = 0
    if args.check:
        problems = gate(sweep, triage)
        if fix:
            for name, r in fix["projects"].items():
                for f in r["compile_failures"]:
                    problems.append(f"fixed file does not compile: {name}/{f['path']}: {f['error']}")
                if r.get("introduced_by_fixes"):
                    problems.append(f"{name}: {r['introduced_by_fixes']} finding(s) reported on code a fix produced")
                if r["second_pass_files_changed"]:
                    problems.append(f"{name}: a second fix pass changed {r['second_pass_files_changed']} files")
        for p in problems:
            print(p)
        status = 1 if problems else 0
    return status


if __name__ == "__main__":
    sys.exit(main())
