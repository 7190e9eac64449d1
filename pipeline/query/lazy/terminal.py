"""`pipeline query lazy`: the answer, its citations, the units tested and the model calls spent."""

from __future__ import annotations

from typing import Any

from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import citations, exit_code, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    citations(result.citations, result.quotes)
    u = result.usage
    print(
        f"\n[status: {result.status}; units tested {result.units_tested}, relevant {result.units_relevant}; "
        f"model calls: expand {u['expand_calls']}, rate {u['rate_calls']}, answer {u['answer_calls']} "
        f"(at most {u['max_calls']})]"
    )
    if result.reason:
        print(f"[{result.reason}]")
    return exit_code(result.status)


TERMINAL = Terminal(
    help="lazy search: relevance tests of passages within a budget, no reports needed",
    render=render,
    rank=6,
)
