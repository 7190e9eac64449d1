"""`pipeline query drift`: the answer, the search tree, the citations and the model calls spent."""

from __future__ import annotations

from typing import Any

from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import citations, footer, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    print("\nSearch tree:")
    by_id = {n.id: n for n in result.nodes}

    def show(node_id: int, indent: int) -> None:
        n = by_id[node_id]
        print(f"{'  ' * indent}- [{n.id}] {n.status} score={n.score:g}: {n.question}")
        for child in n.children:
            show(child, indent + 1)

    if 0 in by_id:
        show(0, 1)
    citations(result.citations)
    u = result.usage
    return footer(
        result,
        f"model calls: primer {u['primer_calls']}, follow-ups "
        f"{u['follow_up_calls']}, reduce {u['reduce_calls']} (at most {u['max_calls']})",
    )


TERMINAL = Terminal(
    help="DRIFT: primer over community reports, follow-up local searches, reduce",
    render=render,
    json_help="print the whole result, the tree included",
    rank=4,
)
