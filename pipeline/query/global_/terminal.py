"""`pipeline query global`: the answer, its status, batches and cited communities, and how the reports
were selected."""

from __future__ import annotations

from typing import Any

from pipeline.query.answer.pages import cite_line
from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import exit_code, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    cited = ", ".join(str(c) for c in result.cited_communities)
    print(f"\n[status: {result.status}; batches: {result.batches}; cited communities: {cited or '-'}]")
    sel = result.selection
    if sel.get("mode") == "dynamic":
        u = result.usage
        calls = f"rate {u['rate_calls']}, map {u['map_calls']}, reduce {u['reduce_calls']}"
        print(
            f"[dynamic selection: {sel['rated']} reports rated, {sel['kept']} kept, {sel['mapped_reports']} "
            f"mapped; calls: {calls}]"
        )
        if sel.get("fallback"):
            print(f"[{sel['fallback']}]")
    elif sel.get("mode") == "level-auto":
        print(f"[level auto: level {sel['level']}, {sel['mapped_reports']} reports mapped]")
    elif sel.get("fallback"):
        print(f"[{sel['fallback']}]")
    first = sel.get("first_use")
    if first:  # reports an on-demand index had deferred, written now for this question and every later one
        counts = {k: len(first[k]) for k in ("written", "ready", "skipped", "failed")}
        print("[reports on first use: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n) + "]")
    if result.quotes:
        print("Quoted:")
    for q in result.quotes:
        print(f"  [community {q['community']}] {cite_line(q)}")
    if result.reason:
        print(f"[{result.reason}]")
    return exit_code(result.status)


TERMINAL = Terminal(help="map-reduce over community reports: corpus-wide questions", render=render, rank=2)
