"""The CLI's exit codes and the one-line messages shared by its commands: a namespace not indexed yet
and a damaged table both exit 3, as the HTTP API's 409 and 503 name them."""

from __future__ import annotations

import sys

from pipeline.io.damage import IndexDamaged

EXIT_NOT_READY = 3
EXIT_DAMAGED = 3
EXIT_BUSY = 4
EXIT_UNAVAILABLE = 3


def unavailable(exc: Exception) -> int:
    """The embedding server is not there: no question can be embedded (HTTP says 503
    embedding_unavailable)."""
    print(f"error: {exc}", file=sys.stderr)
    return EXIT_UNAVAILABLE


def not_ready(reason: str) -> int:
    """A query on a namespace without the tables it reads: the same status the HTTP API and MCP give."""
    print(f"[status: index_not_ready; {reason}]")
    return EXIT_NOT_READY


def damaged(exc: IndexDamaged) -> int:
    """A table of the namespace does not read: named, with its repair, on one line (HTTP says 503
    index_damaged)."""
    print(f"error: {exc}", file=sys.stderr)
    return EXIT_DAMAGED
