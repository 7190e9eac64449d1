"""A query's events as it runs (`QueryService.stream`), and the same events as Server-Sent Events.

The query runs exactly as `QueryService.run` runs it (`start`, then `finish`: admission, limits,
deadline, bounds, log line); its mode's events (`pipeline.query.common.events`) arrive on the worker
thread and cross to the event loop through `call_soon_threadsafe` into a queue, behind the `queued` event
`start` sends when every worker of the query's lane is busy. What the stream sends:

- each event as the mode emits it, bounded as the result is (`OutputBounds`): the answer's text stops at
  `max_answer_chars` (a `retract` takes back what the client was sent of the withdrawn text), a context
  lists at most `max_items` rows with texts cut to `max_text_chars`;
- once the worker is done: the answer's text the mode did not write as it went (all of it, a sentence
  a `delta`, when it wrote none; else what the result's answer adds to what was sent, such as the "…"
  of a cut answer, after a `retract` of what it does not keep), a `citation` for each of the result's
  citations not sent yet, then `done`, whose `result` is `run`'s: the deltas, retracts applied, join to
  its answer. A failure after the first event is an `error` event; before it, it is raised.

Closing the iterator (the client left) sets the query's cancel signal: its work stops at its next step
and its key's slot is given back when the worker returns, as for a query past its deadline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response, StreamingResponse

from pipeline.query.common import events as ev
from pipeline.service.errors import ServiceError
from pipeline.service.limits import OutputBounds, cut

if TYPE_CHECKING:
    from pipeline.service.auth import Principal

# `QueryService` and its `Query` (pipeline.service.queries, which imports this module to stream) are
# typed `Any` here: an import back would be a cycle.
QueryService = Query = Any

log = logging.getLogger("pipeline.service")

_END = ("", {})  # put on the queue once the worker is done: every event it sent is ahead of it
TEXT_KEYS = ("text", "span", "summary", "description", "content")  # a context row's long texts
INTERNAL = "internal error; the server log has the details"


def sse(kind: str, data: dict[str, Any]) -> bytes:
    """One Server-Sent Event: `event: <kind>` and its data as one line of JSON."""
    return f"event: {kind}\ndata: {json.dumps(data, default=str)}\n\n".encode()


def error_data(exc: ServiceError) -> dict[str, Any]:
    return {"status": exc.status, "code": exc.code, "message": exc.message, "detail": exc.detail}


class Sent:
    """What a stream has sent of the answer: its text so far and the citations, bounded as the result."""

    def __init__(self, bounds: OutputBounds) -> None:
        self.bounds = bounds
        self.text = ""  # what the client was sent
        self.written = ""  # what the mode wrote (unbounded)
        self.citations: set[tuple[Any, ...]] = set()

    def take(self, kind: str, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """A mode's event as the client gets it (none when the answer's bound is reached)."""
        if kind in (ev.DELTA, ev.RETRACT):
            self.written = ev.applied(self.written, kind, data)
            shown = self.written[: self.bounds.max_answer_chars]
            events, self.text = ev.catch_up(self.text, shown), shown
            return events
        if kind == ev.CONTEXT:
            return [(kind, {**data, "sources": self._rows(data.get("sources") or [])})]
        if kind == ev.CITATION:
            self.citations.add(ev.citation_key(data))
        return [(kind, data)]

    def _rows(self, rows: list[Any]) -> list[Any]:
        out = []
        for row in rows[: self.bounds.max_items]:
            if isinstance(row, dict):
                row = {
                    k: cut(v, self.bounds.max_text_chars)[0] if k in TEXT_KEYS else v for k, v in row.items()
                }
            out.append(row)
        return out

    def closing(self, response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The answer's text not sent yet, its citations not sent yet, and `done`."""
        result = response["result"]
        out: list[tuple[str, dict[str, Any]]] = []
        answer = result.get("answer")
        if isinstance(answer, str):
            if not self.text:
                out += [(ev.DELTA, {"text": piece}) for piece in ev.answer_pieces(answer)]
            else:  # what the answer adds, after what it does not keep (a model reply the mode rewrote)
                out += ev.catch_up(self.text, answer)
        citations = ev.citations_of(result)
        for citation in citations:
            if ev.citation_key(citation) not in self.citations:
                self.citations.add(ev.citation_key(citation))
                out.append((ev.CITATION, citation))
        done = {
            "namespace": response["namespace"],
            "kind": response["kind"],
            "status": response["status"],
            "usage": result.get("usage") or {},
            "citations": citations,
            "duration_s": response["duration_s"],
            "truncated": response["truncated"],
            "result": result,
        }
        return [*out, (ev.DONE, done)]


async def query_events(
    service: QueryService, principal: Principal, request: Any
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """`QueryService.stream`: see the module docstring."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    gone = threading.Event()  # nobody reads any more: the worker's events go nowhere

    def sink(kind: str, data: dict[str, Any]) -> None:  # on the worker thread
        if gone.is_set():
            return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, data))
        except RuntimeError:  # the event loop is closed: nobody to tell
            gone.set()

    query = await service.start(principal, request, sink)
    query.worker.add_done_callback(lambda _: queue.put_nowait(_END))
    sent, started, ended = Sent(service.bounds), False, False
    try:
        while (item := await _next(queue, query)) is not _END:
            for event in sent.take(*item):
                started = True
                yield event
        await query.wait()  # at once when the worker is done; else its grace past the deadline
        while not queue.empty():  # what it sent during its grace
            if (item := queue.get_nowait()) is not _END:
                for event in sent.take(*item):
                    started = True
                    yield event
        ended = True  # `finish` logs the outcome
        try:
            response = service.finish(query)
        except ServiceError as exc:
            if not started:
                raise
            yield ev.ERROR, error_data(exc)
            return
        except Exception as exc:
            if not started:
                raise
            log.error("unhandled %s in a streamed query: %s", type(exc).__name__, exc, exc_info=exc)
            yield ev.ERROR, error_data(ServiceError(INTERNAL))
            return
        for event in sent.closing(response):
            yield event
    finally:
        gone.set()
        if not query.worker.done():
            query.cancel.set()  # the client left: stop the work (its slot is given back as it returns)
        if not ended:
            query.log("client_gone")


async def _next(queue: asyncio.Queue[tuple[str, dict[str, Any]]], query: Query) -> tuple[str, dict[str, Any]]:
    """The next event, or `_END` once the query's deadline has passed."""
    try:
        return await asyncio.wait_for(queue.get(), timeout=query.to_deadline())
    except TimeoutError:
        return _END


# The OpenAPI description of a query's 200 answer as events (beside its JSON one).
STREAMED: dict[str, Any] = {
    "description": 'The answer as JSON; with `"stream": true` (or `Accept: text/event-stream`), as '
    "Server-Sent Events: `queued` (only when the query waits for a free worker: `ahead` of it), `route`, "
    "`context`, `delta` (the answer's text), `retract` (`chars`: that many characters off the end of the "
    "text sent, which a retried model call wrote otherwise), `citation`, then one `done` (its `result` is "
    "the JSON answer's) or one `error`.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


def wants_events(body: Any, headers: Mapping[str, str]) -> bool:
    """Whether a query asks for its answer as events: `"stream": true`, or an Accept header naming
    text/event-stream (before or without application/json)."""
    if getattr(body, "stream", False):
        return True
    accept = headers.get("accept", "").lower()
    return "text/event-stream" in accept and "application/json" not in accept.split("text/event-stream")[0]


async def event_response(service: QueryService, principal: Principal, request: Any) -> Response:
    """The query's events as `text/event-stream`. Its first event is awaited before the response
    starts, so that a refusal or a failure before it is the usual JSON error with its status."""
    events = service.stream(principal, request)
    first = await anext(events)

    async def body() -> AsyncIterator[bytes]:
        yield sse(*first)
        try:
            async for event in events:
                yield sse(*event)
        finally:
            await events.aclose()  # the client left mid-stream: the query's work stops

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy may hold events back
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)
