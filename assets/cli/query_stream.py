"""`pipeline query <mode> --stream`: the answer printed as it is written (the query's `delta` events,
`pipeline.query.common.events`), then what the mode prints after its answer (citations, footer).

With `--json` each event is one line of JSON (`{"event": kind, "data": ...}`) as it happens, then a
`citation` for each of the answer's citations and `done` with the whole result: a script reads the same
events the HTTP API streams, and the deltas, each `retract` applied, join to the result's answer.

A `retract` (a retried model call wrote otherwise than what was shown) is honoured on a terminal by
erasing that text; printed into a file or a pipe, which cannot take text back, the answer is held until
the query is done, so that what is written is the answer.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

from pipeline.query.common import events as ev

STREAM_HELP = (
    "print the answer as it is written (a model's tokens; offline, line by line), then the rest; with "
    "--json, each event (route, context, delta, retract, citation, done) as one line of JSON"
)


class Printer:
    """The query's events as they come: the answer's text on stdout, or every event as a JSON line."""

    def __init__(self, as_json: bool, live: bool | None = None) -> None:
        self.as_json = as_json
        self.live = sys.stdout.isatty() if live is None else live  # text can be taken back
        self.text = ""  # the answer's text the events gave so far (retracts applied)
        self.shown = ""  # what is on the terminal of it
        self.citations: set[tuple[Any, ...]] = set()

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if kind == ev.DELTA:
            self.text += data["text"]
        elif kind == ev.RETRACT:
            self.text = self.text[: max(0, len(self.text) - int(data["chars"]))]
        elif kind == ev.CITATION:
            self.citations.add(ev.citation_key(data))
        if self.as_json:
            self._line(kind, data)
        elif self.live and kind in (ev.DELTA, ev.RETRACT):
            self._show(self.text)

    def _line(self, kind: str, data: dict[str, Any]) -> None:
        print(json.dumps({"event": kind, "data": data}, default=str), flush=True)

    def _show(self, text: str) -> None:
        """Make the terminal show `text` where it shows `self.shown`: erase where they part, write the rest."""
        common = len(os.path.commonprefix([self.shown, text]))
        if common < len(self.shown):
            sys.stdout.write(erase(self.shown, common, shutil.get_terminal_size().columns))
        sys.stdout.write(text[common:])
        sys.stdout.flush()
        self.shown = text

    def finish(self, render: Callable[[Any, Any, Any], int], result: Any, args: Any, scope: Any) -> int:
        """The mode's printing of `result` less the answer already printed (every renderer prints the
        answer first); with --json, what makes the deltas join to the answer, the citations not sent
        and the `done` line."""
        shown = io.StringIO()
        with redirect_stdout(shown):
            code = render(result, args, scope)
        if self.as_json:
            out = result.to_dict()
            answer = out.get("answer")
            if isinstance(answer, str):
                for kind, data in ev.catch_up(self.text, answer):
                    self._line(kind, data)
            for citation in ev.citations_of(out):
                if ev.citation_key(citation) not in self.citations:
                    self._line(ev.CITATION, citation)
            print(json.dumps({"event": ev.DONE, "data": {"result": out}}, default=str))
            return code
        rest = shown.getvalue()
        answer = result.to_dict().get("answer")
        if self.shown and isinstance(answer, str) and rest.startswith(answer):
            self._show(answer)  # the terminal shows the answer, whatever the model's reply was
        if self.shown and rest.startswith(self.shown):
            rest = rest[len(self.shown) :]
            if not rest.startswith("\n"):
                rest = "\n" + rest
        sys.stdout.write(rest)
        return code


def erase(shown: str, keep: int, columns: int) -> str:
    """The terminal codes that take the cursor from the end of `shown` (written from the start of a line)
    back to just after its `keep`-th character, erasing everything from there on. A line as long as a
    multiple of the width leaves the cursor on its last row until the next character (deferred wrap)."""
    width = max(columns, 1)

    def rows(line: str) -> int:  # the rows a finished line (one followed by a newline) took
        return max(1, -(-len(line) // width))

    *done, last = shown.split("\n")
    end_row = sum(map(rows, done)) + max(0, -(-len(last) // width) - 1)
    *kept_done, kept_last = shown[:keep].split("\n")
    row, col = sum(map(rows, kept_done)) + len(kept_last) // width, len(kept_last) % width
    up = f"\x1b[{end_row - row}A" if end_row > row else ""
    right = f"\x1b[{col}C" if col else ""
    return f"{up}\r{right}\x1b[J"
