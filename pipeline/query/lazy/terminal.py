"""`pipeline query lazy`: the answer, its citations, the units tested and the model calls spent."""

from __future__ import annotations

from typing import Any

from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import citations, footer, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    citations(result.citations, result.quotes)
    u = result.usage
    return footer(
        result,
        f"units tested {result.units_tested}, relevant {result.units_relevant}; "
        f"model calls: expand {u['expand_calls']}, rate {u['rate_calls']}, answer {u['answer_calls']} "
        f"(at most {u['max_calls']})",
    )


TERMINAL = Terminal(
    help="lazy search: relevance tests of passages within a budget, no reports needed",
    render=render,
    rank=6,
)
