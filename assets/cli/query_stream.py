"""`pipeline query <mode> --stream`: the answer printed as it is written (the query's `delta` events,
`pipeline.query.common.events`), then what the mode prints after its answer (citations, footer).

With `--json` each event is one line of JSON (`{"event": kind, "data": ...}`) as it happens, the last one
`done` with the whole result: a script reads the same events the HTTP API streams.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

from pipeline.query.common import events as ev

STREAM_HELP = (
    "print the answer as it is written (a model's tokens; offline, line by line), then the rest; with "
    "--json, each event (route, context, delta, citation, done) as one line of JSON"
)


class Printer:
    """The query's events as they come: the answer's text on stdout, or every event as a JSON line."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.text = ""  # what has been printed of the answer

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if self.as_json:
            print(json.dumps({"event": kind, "data": data}, default=str), flush=True)
        elif kind == ev.DELTA:
            self.text += data["text"]
            sys.stdout.write(data["text"])
            sys.stdout.flush()

    def finish(self, render: Callable[[Any, Any, Any], int], result: Any, args: Any, scope: Any) -> int:
        """The mode's printing of `result` less the answer already printed (every renderer prints the
        answer first); with --json, the `done` line."""
        shown = io.StringIO()
        with redirect_stdout(shown):
            code = render(result, args, scope)
        if self.as_json:
            print(json.dumps({"event": ev.DONE, "data": {"result": result.to_dict()}}, default=str))
            return code
        rest = shown.getvalue()
        if self.text and rest.startswith(self.text):
            rest = rest[len(self.text) :]
            if not rest.startswith("\n"):
                rest = "\n" + rest
        sys.stdout.write(rest)
        return code
