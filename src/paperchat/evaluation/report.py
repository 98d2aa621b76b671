"""Markdown and self-contained HTML reports of a run: metrics per set and per topic, latency, worst questions."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from paperchat.evaluation.runner import flat, load_results


def _worst(rows: list[dict[str, Any]], n: int = 10) -> list[dict[str, Any]]:
    def badness(r: dict[str, Any]) -> tuple[float, float]:
        m = r["metrics"]
        return (m.get("answer.correct", 0.0), m.get("retrieval.recall@10", m.get("retrieval.page_hit@5", 1.0)) or 0.0)

    return sorted(rows, key=badness)[:n]


def _why(r: dict[str, Any]) -> str:
    if r.get("error"):
        return str(r["error"])
    reasons = r.get("reasons", {})
    m = r["metrics"]
    bad = [f"{k}: {reasons.get(k, '')}" for k, v in m.items() if v is not None and v < 1.0 and k in reasons]
    return "; ".join(bad[:3]) or "ok"


def markdown(summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The evaluation report as Markdown: metrics, per-set and per-topic tables, worst questions."""
    run = summary.get("run", {})
    lines = [
        "# paperchat evaluation",
        "",
        f"{summary['n']} questions; answerer `{run.get('answerer')}` (model `{run.get('model')}`); code {run.get('code_version')}; {run.get('started')}",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in flat(summary).items()]
    for group in ("sets", "topics"):
        parts = summary.get(group) or {}
        if not parts:
            continue
        keys = [
            "retrieval.recall@10", "retrieval.recall@20", "retrieval.judged_precision@10", "retrieval.judged@10", "retrieval.mrr", "retrieval.page_hit@5",
            "retrieval.evidence_hit@5", "answer.f1", "answer.accuracy", "citations.precision",
        ]
        lines += ["", f"## Per {group[:-1]}", "", "| " + group[:-1] + " | n | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
        for name, s in parts.items():
            f = flat(s)
            lines.append(f"| {name} | {s['n']} | " + " | ".join("" if f.get(k) is None else f"{f[k]:.3f}" for k in keys) + " |")
    lines += ["", "## Worst questions", ""]
    for r in _worst(rows):
        lines.append(f"- **{r['id']}** {r['question']}  \n  why: {_why(r)}")
    sets = ", ".join(f"{k} ({v[:12]})" for k, v in run.get("sets_sha256", {}).items())
    lines += ["", f"Question sets (sha256): {sets}"]
    if run.get("judgments_sha256"):
        lines.append("Judgments (sha256): " + ", ".join(f"{k} ({v[:12]})" for k, v in run["judgments_sha256"].items()))
    return "\n".join(lines) + "\n"


def _bars(title: str, values: dict[str, float | None]) -> str:
    vals = {k: v for k, v in values.items() if v is not None}
    if not vals:
        return ""
    top = max(max(vals.values()), 1e-9)
    rows = []
    for i, (k, v) in enumerate(vals.items()):
        w = 360 * v / top
        rows.append(
            f'<text x="0" y="{i * 22 + 15}" font-size="12">{html.escape(k)}</text>'
            f'<rect x="200" y="{i * 22 + 4}" width="{w:.1f}" height="14" fill="#4f46e5"/>'
            f'<text x="{205 + w:.1f}" y="{i * 22 + 15}" font-size="11">{v:.3f}</text>'
        )
    return f"<h3>{html.escape(title)}</h3><svg width='640' height='{len(vals) * 22 + 6}'>" + "".join(rows) + "</svg>"


def html_report(summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The evaluation report as a standalone HTML page with bar charts."""
    f = flat(summary)
    parts = [
        "<!doctype html><meta charset='utf-8'><title>paperchat evaluation</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;color:#111}td,th{padding:2px 8px;border-bottom:1px solid #eee}</style>",
        f"<h1>paperchat evaluation</h1><p>{summary['n']} questions &middot; answerer {html.escape(str(summary.get('run', {}).get('answerer')))}</p>",
        _bars("Headline metrics", {k: v for k, v in f.items() if not k.startswith("latency")}),
        _bars("Latency (ms)", {k: v for k, v in f.items() if k.startswith("latency")}),
    ]
    for group in ("sets", "topics"):
        for name, s in (summary.get(group) or {}).items():
            sf = flat(s)
            parts.append(_bars(
                f"{group[:-1]}: {name}",
                {k: sf.get(k) for k in ("retrieval.recall@10", "retrieval.mrr", "retrieval.page_hit@5", "answer.f1", "answer.accuracy")},
            ))
    parts.append("<h2>Worst questions</h2><table><tr><th>id</th><th>question</th><th>why</th></tr>")
    for r in _worst(rows):
        parts.append(f"<tr><td>{html.escape(r['id'])}</td><td>{html.escape(r['question'])}</td><td>{html.escape(_why(r))}</td></tr>")
    parts.append("</table><h2>Run</h2><pre>" + html.escape(json.dumps(summary.get("run", {}), indent=1)[:6000]) + "</pre>")
    return "\n".join(parts)


def write_report(folder: Path) -> tuple[Path, Path]:
    """Write report.md and report.html into the results folder; returns their paths."""
    summary, rows = load_results(folder)
    md, page = folder / "report.md", folder / "report.html"
    md.write_text(markdown(summary, rows))
    page.write_text(html_report(summary, rows))
    return md, page
