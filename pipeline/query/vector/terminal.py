"""`pipeline query vector`: the nearest text units, each with the sentence that matched the query
(`common.hits`); `--store` asks a copy of the table in pgvector or Chroma instead of LanceDB."""

from __future__ import annotations

import json
import sys
from typing import Any

from pipeline.query.common.hits import add_matches, print_hits
from pipeline.query.common.mode import Terminal


def render(result: Any, args: Any, scope: Any) -> int:
    if result.status == "degraded":  # the store's own reason, on one line
        print(f"error: {result.cause}", file=sys.stderr)
        return 2
    hits = [{"id": s["id"], "score": s["score"], **s["metadata"]} for s in result.sources]
    add_matches(hits, args.query, scope.store, scope.embedder)
    if args.json:
        print(json.dumps(hits, indent=2, default=str))
        return 0
    print_hits(hits)
    return 0


def flags(parser: Any) -> None:
    parser.add_argument(
        "--store",
        choices=("lancedb", "pgvector", "chroma"),
        default="lancedb",
        help="pgvector (PIPELINE_PGVECTOR_DSN) and chroma get the text units copied from LanceDB first",
    )


TERMINAL = Terminal(
    render=render,
    json_help=None,
    flags=flags,
    flags_first=True,
    config_flags=("store",),
    # the tool logs a failure with its traceback (for a service's log); the CLI prints its reason
    quiet=("pipeline.vector_tool.tool", "pipeline.query.vector.mode"),
    rank=0,
)
