"""Request headers are capped (`service_max_header_bytes`, 16 KB by default): past the cap a request is
answered 431 `headers_too_large` before it is authenticated, and its head is never read in full.

Neither of uvicorn's HTTP parsers bounds a request's head by default (httptools none at all; h11 answers
400 past its buffer), so 8 MB of headers were read, parsed and held before the key was even checked.
Two places enforce the cap, since either alone misses a case:
- uvicorn's HTTP protocol (`capped_protocol`) counts a head's bytes as they arrive and answers 431 once an
  unfinished head passes the cap, so a client cannot make the server buffer more than the cap and one
  read;
- `HeaderLimitMiddleware`, the app's outermost check, measures a finished head (one that arrived in a
  single read is parsed before the protocol can count it) as it was sent, and answers 431 before
  anything else reads it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.service.asgi import HttpMiddleware
from pipeline.service.errors import ServiceError, send_error

log = logging.getLogger("pipeline.service")

# After a 431 the client is usually still sending its head: its bytes are read and dropped, up to this
# many or for this long, so that it reads the answer instead of a reset (closing a socket with unread
# data resets it, which can discard the answer in flight).
DISCARD_BYTES = 1 << 20
LINGER_S = 5.0


class HeadersTooLarge(ServiceError):
    status, code = 431, "headers_too_large"


def refusal(max_bytes: int) -> HeadersTooLarge:
    return HeadersTooLarge(
        f"request headers are larger than {max_bytes} bytes (the request line and header lines, as sent)"
    )


def head_size(scope: Scope) -> int:
    """The bytes of a request's head as it was sent: its request line and each header line."""
    target = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string") or b"")
    line = len(scope["method"]) + 1 + target + 1 + len(b"HTTP/1.1\r\n")
    return line + sum(len(name) + 2 + len(value) + 2 for name, value in scope["headers"]) + 2


def _refusal_bytes(max_bytes: int) -> bytes:
    error = refusal(max_bytes)
    payload = json.dumps(error.body()).encode()
    head = (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n" % len(payload)
    )
    return head + payload


class HeaderLimitMiddleware(HttpMiddleware):
    """431 for a request whose head is larger than `max_bytes` (`head_size`), before any other middleware
    (authentication included) reads it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    def handles(self, scope: Scope) -> bool:
        return head_size(scope) > self.max_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_error(send, refusal(self.max_bytes), close=True)


class _HeadCap:
    """What both protocols share: the count of an unfinished head's bytes and the 431 past the cap.
    `_in_head` tells whether the parser is reading a head (each protocol knows it its own way)."""

    max_head_bytes: int
    transport: asyncio.Transport
    client: Any
    _head_bytes = 0
    _refused = False
    _discarded = 0

    def _in_head(self) -> bool:
        raise NotImplementedError

    def data_received(self, data: bytes) -> None:
        if self._refused:  # the answer is sent: what still arrives is dropped, to a bound
            self._discarded += len(data)
            if self._discarded > DISCARD_BYTES:
                self.transport.abort()
            return
        if self._in_head():
            self._head_bytes += len(data)
        super().data_received(data)  # type: ignore[misc]
        if not self._in_head():
            self._head_bytes = 0
        elif self._head_bytes > self.max_head_bytes and not self.transport.is_closing():
            self._refuse()

    def _refuse(self) -> None:
        self._refused = True
        log.info(
            "refused a request from %s: its headers passed %d bytes (431)", self.client, self.max_head_bytes
        )
        self.transport.write(_refusal_bytes(self.max_head_bytes))
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the client reads the answer, then the end
        asyncio.get_running_loop().call_later(LINGER_S, self.transport.abort)


def capped_protocol(max_bytes: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools where installed, as uvicorn's own choice, else h11) with the
    head of each request capped at `max_bytes`; pass it as uvicorn's `http`."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return _h11_capped(max_bytes)
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HttpToolsCapped(_HeadCap, HttpToolsProtocol):
        max_head_bytes = max_bytes
        _reading_head = True

        def _in_head(self) -> bool:
            return self._reading_head

        def on_headers_complete(self) -> None:
            self._reading_head = False
            # what was counted was this head (and perhaps its body's first bytes, read with it): once
            # the head is whole the count starts again, or a keep-alive connection's requests add up
            # to a 431 for a small request (a 10 KB body, then another, on one connection)
            self._head_bytes = 0
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._reading_head = True  # the next request's head comes next
            super().on_message_complete()

    return HttpToolsCapped


def _h11_capped(max_bytes: int) -> type[asyncio.Protocol]:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class H11Capped(_HeadCap, H11Protocol):
        max_head_bytes = max_bytes

        def _in_head(self) -> bool:
            return self.conn.their_state is h11.IDLE

        def send_400_response(self, msg: str) -> None:
            # h11 refuses a head past its own buffer size (set to the cap) as a bad request: it is a 431
            if len(self.conn.trailing_data[0]) > self.max_head_bytes:
                self._refuse()
                return
            super().send_400_response(msg)

    return H11Capped
