"""What a running query reports as it goes: the event kinds a `QueryScope` emits (`scope.emit`), and the
pieces every door needs to turn a finished result into the same events.

A mode emits while it works: `route` (which mode answers and why), `context` (the rows its answer reads,
with their scores), `delta` (answer text as it is written: a model's tokens, offline each sentence as it
is chosen), `retract` and `citation`. The service adds `done` (or `error`) at the end
(`pipeline.service.streams`), and `queued` first when the query has to wait for a free worker. Concatenating the `delta` texts, each `retract` cutting its number of
characters off the end of what came before it, gives the answer (`applied`, one event at a time). A model call that is asked
again after part of its reply was sent, and writes otherwise, retracts what differs (`stream.Written`):
a client that shows text as it comes must honour it. A door whose mode wrote none sends the finished
answer as `answer_pieces`, one a sentence.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pipeline.core.sentences import split_sentences

ROUTE = "route"  # {"mode", "route", "reason"}
CONTEXT = "context"  # {"sources": [...]}
DELTA = "delta"  # {"text"}
RETRACT = "retract"  # {"chars"}: the last `chars` characters of the deltas before it are withdrawn
CITATION = "citation"  # {"marker", ...the result's citation dict}
DONE = "done"  # {"status", "usage", "citations", "duration_s", "truncated", "result"}
ERROR = "error"  # {"status", "code", "message", "detail"}
# {"mode", "lane", "ahead", "workers"}: the service's, first, when the query waits for a worker of its lane
QUEUED = "queued"
KINDS = (QUEUED, ROUTE, CONTEXT, DELTA, RETRACT, CITATION, DONE, ERROR)

# kind, data: called on the query's worker thread, so it must be quick and thread-safe
Sink = Callable[[str, dict[str, Any]], None]


def applied(text: str, kind: str, data: dict[str, Any]) -> str:
    """The answer text `text` becomes with one more event: a `delta`'s text added, a `retract`'s
    characters taken off the end; any other event leaves it as it is."""
    if kind == DELTA:
        return text + str(data.get("text") or "")
    if kind == RETRACT:
        return text[: max(0, len(text) - int(data.get("chars") or 0))]
    return text


def catch_up(sent: str, answer: str) -> list[tuple[str, dict[str, Any]]]:
    """The events that turn text `sent` into `answer`: withdraw where they part, then the rest."""
    common = len(os.path.commonprefix([sent, answer]))
    out: list[tuple[str, dict[str, Any]]] = []
    if common < len(sent):
        out.append((RETRACT, {"chars": len(sent) - common}))
    if len(answer) > common:
        out.append((DELTA, {"text": answer[common:]}))
    return out


def answer_pieces(text: str) -> list[str]:
    """`text` cut after each sentence, with the whitespace between sentences kept on the next piece, so
    that the pieces join back to `text` exactly."""
    pieces, start = [], 0
    for sentence in split_sentences(text):
        if sentence.end > start:
            pieces.append(text[start : sentence.end])
            start = sentence.end
    if start < len(text):
        if pieces and not text[start:].strip():
            pieces[-1] += text[start:]
        else:
            pieces.append(text[start:])
    return pieces


def inner_result(result: dict[str, Any]) -> dict[str, Any]:
    """The result that holds the answer's citations: auto's routed mode's, else the result itself."""
    inner = result.get("result")
    return inner if isinstance(inner, dict) and "route" in result else result


def citations_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's citations as the result lists them, each with its `marker` (1, 2, ... in the order
    listed). Global search names communities only (`cited_communities`): each is a report citation."""
    found = inner_result(result)
    cited = found.get("citations")
    if not isinstance(cited, list):
        titles = {
            c.get("community"): c.get("title") for c in found.get("communities") or [] if isinstance(c, dict)
        }
        cited = [
            {"section": "reports", "id": c, "community": c, "title": titles.get(c)}
            for c in found.get("cited_communities") or []
        ]
    return [{"marker": n, **c} for n, c in enumerate(cited, start=1) if isinstance(c, dict)]


def citation_key(citation: dict[str, Any]) -> tuple[Any, ...]:
    """What tells two citation events apart (their marker aside): the row they name."""
    return (citation.get("section"), citation.get("id"), citation.get("community"))
