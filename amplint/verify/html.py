"""The self-contained HTML report: the loss-scale trajectory and the per-parameter gradient headroom
as inline SVG plots, then the tables of the text report. No script, no external resource."""
from __future__ import annotations

import html
import math
import os
from typing import List, Sequence, Tuple

from .report import Report

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.confirmed{color:#b00020;font-weight:600}.runtime-only{color:#b35c00;font-weight:600}
.muted{color:#666}code{font-size:.95em}svg{background:#fafafa;border:1px solid #ddd}
"""


def _line_plot(points: Sequence[Tuple[float, float]], marks: Sequence[int], title: str, w=640, h=220) -> str:
    """A log2-scale line plot of the loss scale per step; skipped steps are red dots."""
    if not points:
        return ""
    pad = 44
    xs = [p[0] for p in points]
    ys = [math.log2(max(p[1], 1e-30)) for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys) - 0.5, max(ys) + 0.5

    def sx(x):
        return pad + (x - x0) / (x1 - x0) * (w - 2 * pad)

    def sy(y):
        return h - pad + (y - y0) / (y1 - y0) * (2 * pad - h)
    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(zip(xs, ys)))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{pad}" y="18" font-size="13">{html.escape(title)}</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#999"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#999"/>',
             f'<path d="{path}" fill="none" stroke="#1f5fbf" stroke-width="2"/>']
    for tick in sorted(set(int(round(y)) for y in ys)):
        parts.append(f'<text x="4" y="{sy(tick) + 4:.1f}" font-size="11">2^{tick}</text>')
    for i, (x, y) in enumerate(zip(xs, ys)):
        color = "#d00" if i in marks else "#1f5fbf"
        parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="{color}"><title>step {int(x)}: '
                     f'{points[i][1]:g}{" (skipped)" if i in marks else ""}</title></circle>')
        parts.append(f'<text x="{sx(x) - 4:.1f}" y="{h - pad + 16}" font-size="11">{int(x)}</text>')
    parts.append(f'<text x="{w / 2:.0f}" y="{h - 6}" font-size="11">step</text></svg>')
    return "".join(parts)


def _bar_plot(bars: List[Tuple[str, float, bool]], title: str, w=640) -> str:
    """Horizontal bars of log2(headroom) per parameter; a non-finite gradient is a red bar at 0."""
    if not bars:
        return ""
    row, left, pad = 18, 220, 30
    h = pad * 2 + row * len(bars)
    finite = [b[1] for b in bars if b[2] and math.isfinite(b[1]) and b[1] > 0]
    top = max([math.log2(v) for v in finite] + [1.0])
    scale = (w - left - 20) / top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="8" y="18" font-size="13">{html.escape(title)}</text>']
    x1 = left + scale * 1  # headroom 2: the warning line
    parts.append(f'<line x1="{x1:.1f}" y1="{pad}" x2="{x1:.1f}" y2="{h - pad + 4}" stroke="#d00" stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{x1 + 3:.1f}" y="{h - 8}" font-size="11" fill="#d00">headroom ×2</text>')
    for i, (name, headroom, ok) in enumerate(bars):
        y = pad + i * row
        parts.append(f'<text x="8" y="{y + 13}" font-size="11">{html.escape(name[:34])}</text>')
        if not ok:
            parts.append(f'<rect x="{left}" y="{y + 2}" width="8" height="{row - 5}" fill="#d00"><title>{html.escape(name)}: non-finite</title></rect>')
            continue
        value = math.log2(headroom) if math.isfinite(headroom) and headroom > 0 else top
        color = "#d00" if headroom < 2 else "#2e8b57"
        parts.append(f'<rect x="{left}" y="{y + 2}" width="{max(scale * max(value, 0), 1):.1f}" height="{row - 5}" '
                     f'fill="{color}"><title>{html.escape(name)}: headroom ×{headroom:.3g}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], classes: Sequence[str] = ()) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for i, r in enumerate(rows):
        cls = f' class="{classes[i]}"' if i < len(classes) and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render(report: Report) -> str:
    root = os.getcwd()

    def where(file, line):
        if not file:
            return "<no user frame>"
        try:
            return f"{os.path.relpath(file, root)}:{line}"
        except ValueError:
            return f"{file}:{line}"
    title = f"amplint verify {report.target or ''}".strip()
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
           f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
           f"<p>{html.escape(report.device)}, {html.escape(report.precision)}"
           f"{' (CUDA autocast emulated on CPU)' if report.emulated else ''}, {len(report.steps)} step(s); "
           f"exit code {report.exit_code}</p>"]
    if report.failed:
        out.append(f"<p class=\"confirmed\">float16 run stopped: {html.escape(report.failed)}</p>")
    scales = [(s.index, s.loss_scale) for s in report.steps if s.loss_scale is not None]
    if report.steps and report.steps[-1].loss_scale_after is not None:
        scales.append((report.steps[-1].index + 1, report.steps[-1].loss_scale_after))
    out.append("<h2>Loss scale</h2>")
    out.append(_line_plot(scales, [s.index for s in report.steps if s.skipped], "loss scale per step (log2)")
               or '<p class="muted">no loss scale</p>')
    last = next((s for s in reversed(report.steps) if s.gradients), None)
    out.append("<h2>Gradient headroom per parameter</h2>")
    if last is not None:
        out.append(f"<p class=\"muted\">step {last.index}, loss scale {last.loss_scale:g}: 65504 / largest |grad|; "
                   "under ×2 the next doubling of the scale overflows</p>")
        out.append(_bar_plot([(g.name, g.headroom, g.finite) for g in last.gradients], "log2 headroom"))
    skipped = [[s.index, f"{s.loss_scale:g}", ", ".join(s.overflowed)] for s in report.steps if s.skipped]
    out.append("<h2>Skipped steps</h2>" + _table(["step", "loss scale", "non-finite gradients"], skipped))
    out.append("<h2>Non-finite values produced in float16</h2>")
    out.append(_table(["line", "phase", "op", "module", "nan", "inf", "of", "float32 largest", "error"],
                      [[where(e.file, e.line), e.phase, e.op, e.module, e.nan, e.inf, e.numel,
                        "-" if e.fp32_amax is None else f"{e.fp32_amax:.4g}", e.error] for e in report.producers]))
    out.append("<h2>Underflow (zero in float16, non-zero in float32)</h2>")
    out.append(_table(["line", "phase", "op", "module", "values", "of"],
                      [[where(e.file, e.line), e.phase, e.op, e.module, e.underflow, e.numel] for e in report.underflows]))
    if report.parameters:
        out.append("<h2>Parameters that became non-finite</h2>")
        out.append(_table(["parameter", "step", "dtype", "non-finite", "optimizer", "built at"],
                          [[p.name, p.step, p.dtype, f"{p.nonfinite}/{p.numel}", p.optimizer,
                            where(p.site.file, p.site.line) if p.site else "-"] for p in report.parameters]))
    if report.findings is not None:
        out.append("<h2>Static findings</h2>")
        rows = [[f.status, f.code, where(os.path.abspath(f.path), f.line), f.message, "; ".join(f.evidence)]
                for f in report.findings]
        rows += [["runtime-only", "-", where(e.file, e.line), f"{e.phase} {e.op} {e.module}".strip(),
                  "no static finding here"] for e in report.runtime_only]
        out.append(_table(["status", "rule", "line", "message", "runtime evidence"], rows,
                          [r[0] if r[0] in ("confirmed", "runtime-only") else "" for r in rows]))
    out.append("</body></html>\n")
    return "".join(out)
