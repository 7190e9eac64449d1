"""`pipeline query basic`: the answer, its citations and quoted sentences, the passages it read."""

from __future__ import annotations

from typing import Any

from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import citations, footer, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    citations(result.citations, result.quotes)
    return footer(result, f"passages: {len(result.sources)}", ("completed", "no_results"))


TERMINAL = Terminal(
    help="vector RAG: the nearest passages answered with citations (the baseline)",
    render=render,
    rank=5,
)
