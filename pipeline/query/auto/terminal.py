"""`pipeline query auto`: the routed mode's answer and quoted sentences, the route and why."""

from __future__ import annotations

from typing import Any

from pipeline.query.common.mode import Terminal
from pipeline.query.common.terminal import citations, exit_code, print_json


def render(result: Any, args: Any, scope: Any) -> int:
    if args.json:
        return print_json(result)
    print(result.answer)
    citations([], result.result.get("quotes") or [])  # the routed mode's quoted sentences, when paged
    print(f"\n[route: {result.route} ({result.router}); {result.reason}]")
    print(f"[status: {result.status}]")
    if result.result.get("reason"):
        print(f"[{result.result['reason']}]")
    return exit_code(result.status)


TERMINAL = Terminal(
    help="route the question to basic, local, global, drift or lazy search", render=render, rank=7
)
