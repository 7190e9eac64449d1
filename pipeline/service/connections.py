"""Bounded connections: a request's body has a deadline, an idle `GET /mcp` stream is ended, and both
hold a slot of their key's limit (the one its queries count against) while they wait.

Without these a client could send its headers and then nothing, or open `GET /mcp` and read nothing,
and hold a server connection for ever without ever counting as a query: many such connections per key
exhaust the server's sockets and memory whatever the per-key limit says.

- A request's body must have arrived `body_timeout_s` after its headers were handled; past that it is
  answered 408 `request_timeout` with `Connection: close`, so the server drops the connection.
- A `GET /mcp` stream (or any GET answered with an event stream) that has sent no event for
  `stream_idle_s` since its response started is ended (before the start, the handler has
  `body_timeout_s` if longer): its handler is told the client left, and the response is completed, so
  the client sees the stream end. Keep-alive pings (SSE comments) are not events: they do not count.
- The slot is taken when the request is authenticated and given back once its body has arrived (the
  query then takes a slot of its own, in `QueryService.run`), or when a stream ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.service.asgi import HttpMiddleware
from pipeline.service.errors import RequestTimeout, ServiceError, send_error
from pipeline.service.limits import KeyLimiter

PRINCIPAL = "graphrag.principal"  # set by app.AuthMiddleware
STREAM_END_GRACE_S = 5.0  # a stream handler told its client left gets this long to return


class _BodyTimeout(Exception):
    pass


class ConnectionGuard(HttpMiddleware):
    """ASGI middleware inside the authentication (it needs the request's key); see the module docstring."""

    def __init__(self, app: ASGIApp, limiter: Any, body_timeout_s: float, stream_idle_s: float) -> None:
        super().__init__(app)
        self.limiter = limiter
        self.body_timeout_s = body_timeout_s
        self.stream_idle_s = stream_idle_s

    def handles(self, scope: Scope) -> bool:
        return scope.get(PRINCIPAL) is not None  # an authenticated request: it has a key to count

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        key_id = scope[PRINCIPAL].key_id
        try:
            await self._acquire(key_id)
        except ServiceError as exc:
            await send_error(send, exc)
            return
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.limiter.release(key_id)

        try:
            if is_stream(scope):
                await self._stream(scope, receive, send)
            else:
                await self._request(scope, receive, send, release)
        finally:
            release()

    async def _acquire(self, key_id: str) -> None:
        if isinstance(self.limiter, KeyLimiter):  # a lock in memory: no need to leave the event loop
            self.limiter.acquire(key_id)
        else:  # PostgreSQL: a round trip
            await asyncio.to_thread(self.limiter.acquire, key_id)

    async def _request(self, scope: Scope, receive: Receive, send: Send, release: Any) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        body_done = timed_out = answered = started = False

        async def timed_receive() -> Message:
            nonlocal body_done, timed_out
            if body_done:  # after the body: a wait for the client to leave, which has no deadline
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                timed_out = True
                raise _BodyTimeout from None
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                body_done = True
                release()
            return message

        async def guarded_send(message: Message) -> None:
            # The framework turns a failed body read into its own 400; the truth is 408.
            nonlocal answered, started
            if timed_out and not started:
                if not answered:
                    answered = True
                    await self._timeout(send)
                return
            started = True
            await send(message)

        try:
            await self.app(scope, timed_receive, guarded_send)
        except Exception:
            if not timed_out:
                raise
        if timed_out and not answered and not started:
            await self._timeout(send)

    async def _timeout(self, send: Send) -> None:
        await send_error(
            send,
            RequestTimeout(f"the request's body did not arrive within {self.body_timeout_s:g} s"),
            close=True,
        )

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        activity = asyncio.Event()
        gone = asyncio.Event()  # set when the stream is cut: its handler then hears the client left
        started = completed = cut = False

        async def tracked_send(message: Message) -> None:
            nonlocal started, completed
            if cut:
                return  # the stream was ended: the handler's late messages go nowhere
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                completed = True
            await send(message)
            # A keep-alive ping is not activity: the MCP library pings every 15 s, which kept an idle
            # stream, and its key's slot, for ever. The start counts, as idle is measured from it.
            if (
                message["type"] != "http.response.body"
                or completed
                or carries_events(message.get("body", b""))
            ):
                activity.set()

        async def cut_receive() -> Message:
            client = asyncio.ensure_future(receive())
            told = asyncio.ensure_future(gone.wait())
            try:
                await asyncio.wait({client, told}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in (client, told):
                    if not waiter.done():
                        waiter.cancel()
            return (
                client.result() if client.done() and not client.cancelled() else {"type": "http.disconnect"}
            )

        handler = asyncio.ensure_future(self.app(scope, cut_receive, tracked_send))
        try:
            while not handler.done():
                activity.clear()
                waiter = asyncio.ensure_future(activity.wait())
                # Idle counts from the response's start: before it, the handler is still setting up,
                # which on a loaded machine can outlast a short idle setting.
                limit = self.stream_idle_s if started else max(self.stream_idle_s, self.body_timeout_s)
                done, _ = await asyncio.wait(
                    {handler, waiter}, timeout=limit, return_when=asyncio.FIRST_COMPLETED
                )
                waiter.cancel()
                if done:
                    continue
                cut = True  # idle: tell the handler the client left, then end the response ourselves
                gone.set()
                await asyncio.wait({handler}, timeout=STREAM_END_GRACE_S)
                if started and not completed:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                elif not started:
                    await send_error(send, RequestTimeout("the stream was idle too long"), close=True)
                break
            if handler.done():
                handler.result()
        finally:
            if not handler.done():
                handler.cancel()
                with contextlib.suppress(BaseException):
                    await handler


def carries_events(body: bytes) -> bool:
    """Whether a piece of an event stream holds an event, not only comments (`: ping - <time>`)."""
    return any(line.strip() and not line.startswith(b":") for line in body.splitlines())


def is_stream(scope: Scope) -> bool:
    """A request answered by a stream that only the server writes to: `GET /mcp`, or any GET asking for
    an event stream. It carries no request of the client's, so it is bounded by idleness, not a deadline
    (a streamed query's answer is bounded by the query's deadline)."""
    if scope["method"] != "GET":
        return False
    if scope["path"].rstrip("/") == "/mcp":
        return True
    accept = next((v for k, v in scope["headers"] if k == b"accept"), b"")
    return b"text/event-stream" in accept.lower()
