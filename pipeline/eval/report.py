"""`pipeline eval`'s report: Markdown (`report.md`), a self-contained HTML page (`report.html`: the
tables, a bar chart per metric by mode × type, the worst questions per mode with what was missing),
the charts alone (`chart.html`) and JSON for machines (`report.json`).

`write_report` writes into a fresh folder beside `out` and then moves the files in, so a failed run
leaves `out` as it was: never a report half-written.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from pipeline.eval.chart import bar_chart
from pipeline.eval.metrics import Scored

WORST = 5  # questions per mode in the worst-questions table
METRICS = (
    ("answer_coverage", "answer coverage %"),
    ("answer_words", "answer words %"),
    ("context_recall", "context recall %"),
    ("page_recall_at_5", "page recall@5 %"),
    ("median_page_span", "median page span"),
    ("judge_accuracy", "judge %"),
)
FILES = ("report.md", "report.html", "report.json", "chart.html")


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}"
    if isinstance(v, dict):
        return ", ".join(f"{k} {n}" for k, n in v.items())
    return str(v)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c).replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _used(summary: dict[str, Any], metric: str) -> bool:
    return any(m["overall"].get(metric) is not None for m in summary.values())


def overall_table(summary: dict[str, Any]) -> str:
    """One row per mode: the scores, calls, tokens, latency and statuses over every question."""
    metrics = [(k, label) for k, label in METRICS if _used(summary, k)]
    header = ["mode", "questions", *(label for _, label in metrics)]
    header += ["calls", "prompt tokens", "completion tokens", "p50 ms", "p95 ms", "failures", "statuses"]
    rows = []
    for mode, m in summary.items():
        o = m["overall"]
        rows.append(
            [mode, o["questions"], *(o[k] for k, _ in metrics), o["calls"], o["prompt_tokens"]]
            + [o["completion_tokens"], o["latency_p50_ms"], o["latency_p95_ms"], o["failures"], o["statuses"]]
        )
    return _table(header, rows)


def type_table(summary: dict[str, Any], metric: str) -> str:
    """One row per question type, one column per mode: `metric` in %."""
    modes = list(summary)
    types = list(next(iter(summary.values()))["by_type"]) if summary else []
    rows = [[t, *(summary[m]["by_type"][t][metric] for m in modes)] for t in types]
    rows.append(["overall", *(summary[m]["overall"][metric] for m in modes)])
    return _table(["type", *modes], rows)


def worst(rows: list[Scored], mode: str, n: int = WORST) -> list[Scored]:
    """The mode's `n` questions with the least of the answer in context, then the least recall."""
    mine = [r for r in rows if r.mode == mode]

    def key(r: Scored) -> tuple[float, float]:
        return (r.answer_coverage if r.answer_coverage is not None else 2.0, r.context_recall or 0.0)

    return sorted(mine, key=key)[:n]


def _missing(r: Scored) -> str:
    parts = []
    if r.error:
        parts.append(r.error)
    if r.missing_words:
        parts.append("answer words: " + ", ".join(r.missing_words[:12]))
    if r.missing_gold:
        parts.append("gold: " + "; ".join(g[:80] for g in r.missing_gold[:4]))
    return " — ".join(parts) or "-"


def worst_table(rows: list[Scored], mode: str) -> str:
    body = [
        [
            r.id,
            r.type,
            r.question[:120],
            _pct(r.answer_coverage),
            _pct(r.context_recall),
            _missing(r),
        ]
        for r in worst(rows, mode)
    ]
    return _table(["id", "type", "question", "answer coverage %", "context recall %", "missing"], body)


def _pct(v: float | None) -> float | None:
    return None if v is None else 100 * v


def charts(summary: dict[str, Any]) -> str:
    """One grouped bar chart (type groups, mode bars, `overall` last) per metric that has values."""
    modes = list(summary)
    types = [*next(iter(summary.values()))["by_type"], "overall"] if summary else []
    out = []
    for metric, label in METRICS:
        if not _used(summary, metric):
            continue
        values = {
            (t, m): (summary[m]["overall"] if t == "overall" else summary[m]["by_type"][t])[metric]
            for t in types
            for m in modes
        }
        out.append(bar_chart(label, types, modes, values))
    return "\n".join(out)


def markdown(report: dict[str, Any], rows: list[Scored]) -> str:
    summary = report["metrics"]
    parts = [
        f"# Evaluation of namespace `{report['namespace']}`",
        f"{report['questions']} questions, modes {', '.join(report['modes'])}, in {report['seconds']:.1f}s. "
        "Answer coverage is the share of the gold answer's content words found in the context the mode "
        "gave the model: a proxy that needs no model, not a judgement of the answer.",
        "## Per mode",
        overall_table(summary),
    ]
    for metric, label in METRICS:
        if _used(summary, metric):
            parts += [f"## {label.capitalize()} per type", type_table(summary, metric)]
    parts.append("## Worst questions per mode")
    for mode in report["modes"]:
        parts += [f"### {mode}", worst_table(rows, mode)]
    return "\n\n".join(parts) + "\n"


# CommonMark with GFM tables; raw HTML off, so a question's '<' or '&' is escaped, never markup.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def chart_page(report: dict[str, Any]) -> str:
    """The charts alone, as a page of their own (what the Dagster asset links to)."""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>pipeline eval charts</title></head>'
        f"<body>\n{charts(report['metrics'])}\n</body></html>\n"
    )


def html(report: dict[str, Any], rows: list[Scored]) -> str:
    """The whole report as one page: inline CSS and SVG, nothing fetched."""
    # The charts open the page's body, between the introduction and the "Per mode" table.
    body = _MARKDOWN.render(markdown(report, rows)).replace(
        "<h2>Per mode</h2>\n",
        f'<div class="charts">{charts(report["metrics"])}</div>\n<h2>Per mode</h2>\n',
        1,
    )
    style = (
        "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 18px}"
        "td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;vertical-align:top}th{background:#f3f3f3}"
        ".charts svg{margin:0 18px 12px 0}"
    )
    title = escape(f"pipeline eval: {report['namespace']}")
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title><style>{style}</style>'
        f"</head><body>\n{body}</body></html>\n"
    )


def write_report(out: str | Path, report: dict[str, Any], rows: list[Scored]) -> dict[str, Path]:
    """report.md, report.html, report.json and chart.html in `out`, all or none; their paths."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (staging / "report.md").write_text(markdown(report, rows), encoding="utf-8")
        (staging / "report.html").write_text(html(report, rows), encoding="utf-8")
        (staging / "report.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
        (staging / "chart.html").write_text(chart_page(report), encoding="utf-8")
        if not out.exists():
            os.replace(staging, out)
        else:
            for name in FILES:
                os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {name: out / name for name in FILES}
