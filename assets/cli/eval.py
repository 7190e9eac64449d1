"""`pipeline eval`: every query mode measured on a namespace's own questions (`pipeline.eval`), with the
tables printed (or the metrics as JSON with --json) and the report written into --out.

Exits 0 when the report is written, 2 on a bad request (a questions file that cannot be read, a row
without `question`, an unknown mode) and 3 when the namespace is not indexed; each error is one line on
stderr and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assets.cli.exits import EXIT_NOT_READY
from pipeline.core import schema
from pipeline.eval.questions import QuestionsError, load_questions
from pipeline.eval.run import EvalError, check_indexed, eval_modes, parse_modes
from pipeline.settings import load_settings


def cmd_eval(args: argparse.Namespace) -> int:
    from pipeline.eval.report import overall_table, type_table, write_report
    from pipeline.eval.run import evaluate_async
    from pipeline.runtime import query_runtime

    try:
        modes = parse_modes(args.modes)
        questions = load_questions(args.questions, args.limit)
    except (EvalError, QuestionsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rt = query_runtime(args.namespace, settings=load_settings())
    try:
        check_indexed(rt.store)
    except EvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NOT_READY
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if args.json else print
    say(f"evaluating {len(questions)} questions on namespace {args.namespace!r}: {', '.join(modes)}")
    run = rt.engine.run_sync(
        evaluate_async(rt.store, rt.engine, rt.embedder, rt.settings, questions, modes, on_progress=say)
    )
    report = run.to_dict()
    out = Path(args.out or Path("eval") / args.namespace)
    files = write_report(out, report, run.rows)
    # Also beside the index: the service's web app shows a namespace's last report (not --out's folder,
    # which is wherever this command ran).
    summary = {k: v for k, v in report.items() if k != "rows"}
    rt.store.write_bytes(schema.EVAL_REPORT, json.dumps(summary, default=str).encode("utf-8"))
    if args.json:
        shown = {k: v for k, v in report.items() if k != "rows"}
        print(json.dumps({**shown, "files": {k: str(v) for k, v in files.items()}}, indent=2))
        return 0
    print("\n" + overall_table(report["metrics"]))
    shown = [("context_recall", "context recall %"), ("answer_coverage", "answer coverage %")]
    paged = [("page_recall_at_5", "page recall@5 %"), ("median_page_span", "median cited page span")]
    shown += [m for m in paged if any(v["overall"].get(m[0]) is not None for v in report["metrics"].values())]
    for metric, label in shown:
        print(f"\n{label} per type:\n" + type_table(report["metrics"], metric))
    print(f"\nreport: {files['report.html']} (also report.md, report.json, chart.html)")
    return 0


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def add_eval_parser(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("eval", help="measure every query mode on a namespace's own questions, with a report")
    p.add_argument("--namespace", required=True, type=namespace)
    p.add_argument(
        "--questions",
        required=True,
        help="JSONL, CSV or JSON: question, answer, gold_documents, gold_passages, type",
    )
    p.add_argument("--modes", help=f"comma-separated, in order (default: {','.join(eval_modes())})")
    p.add_argument("--limit", type=_positive, help="only the first N questions")
    p.add_argument(
        "--out", help="folder for report.md/.html/.json and chart.html (default: eval/<namespace>)"
    )
    p.add_argument("--json", action="store_true", help="print the metrics as JSON (progress goes to stderr)")
    p.set_defaults(func=cmd_eval)
