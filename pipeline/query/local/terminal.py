"""`pipeline query local`: the answer, the communities it drew on, the quoted sentences and the first
`--show-evidence` evidence items, each cited to its document offsets."""

from __future__ import annotations

from typing import Any

from pipeline.query.answer.pages import cite_line
from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import citations, exit_code, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    print("\nCommunities:")
    for c in result.communities:
        if c["matched_entities"]:
            print(
                f"  [{c['id']}] level {c['level']}: {c['title']} (matched: {', '.join(c['matched_entities'])})"
            )
    others = [str(c["id"]) for c in result.communities if not c["matched_entities"]]
    if others:
        print(f"  and {len(others)} more by graph and text similarity: {', '.join(others)}")
    citations([], result.quotes)
    print("Evidence:")
    for ev in result.evidence[: args.show_evidence]:
        snippet = " ".join(ev["text"].split())[:160]
        print(f"  [{ev['ref']}] {ev['kind']} {cite_line(ev)} {snippet}")
    if result.status != "completed":
        print(f"[status: {result.status}; {result.reason}]")
    return exit_code(result.status, ("completed", "no_results"))


def flags(parser: Any) -> None:
    parser.add_argument("--show-evidence", type=int, default=8, help="evidence items to print")


TERMINAL = Terminal(
    help="entity/graph/vector retrieval with evidence cited to document offsets",
    render=render,
    flags=flags,
    rank=3,
)
