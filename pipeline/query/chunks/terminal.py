"""`pipeline query chunks`: the ranked chunks, each with the sentence that matched the query
(`common.hits`); `--filter KEY=VALUE`, repeatable, is the metadata equality filter."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline.query.common.hits import add_matches, print_hits
from pipeline.query.common.mode import Terminal


def render(result: Any, args: Any, scope: Any) -> int:
    hits = result.hits
    rows = [{"id": h.id, "score": h.score, "text": h.content, **h.metadata} for h in hits]
    add_matches(rows, args.query, scope.store, scope.embedder)
    if args.json:
        print(
            json.dumps(
                [{**h.to_dict(), "match": r["match"]} for h, r in zip(hits, rows, strict=True)],
                indent=2,
                default=str,
            )
        )
        return 0
    print_hits(rows, ".4f")
    return 0


def _filter_pair(value: str) -> tuple[str, object]:
    key, sep, raw = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    try:
        return key, json.loads(raw)  # numbers, true/false, null, "quoted"
    except json.JSONDecodeError:
        return key, raw


class _Pairs(argparse.Action):
    """Each `KEY=VALUE` given into one dict (a key given twice keeps its last value)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        key, value = values
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), key: value})


TERMINAL = Terminal(
    render=render,
    json_help=None,
    special={"filter": {"type": _filter_pair, "action": _Pairs, "metavar": "KEY=VALUE"}},
    rank=1,
)
