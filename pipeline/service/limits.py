"""Limits: queries in flight and queries per minute per API key, request body size, and the size of what a
query returns."""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.service.asgi import HttpMiddleware
from pipeline.service.errors import BodyTooLarge, TooManyRequests, send_error


def rate_refusal(limit: int, window_s: float, retry_after_s: float) -> TooManyRequests:
    return TooManyRequests(
        f"this API key has made {limit} queries in the last {window_s:g} s (its limit); retry later",
        headers={"Retry-After": str(max(1, math.ceil(retry_after_s)))},
    )


class KeyRateLimiter:
    """At most `limit` queries per key in any `window_s` (a sliding window), counted by this process; one
    more is refused at once (429 with the seconds until the window's oldest query leaves it). A refused
    query is not counted. `clock` is monotonic seconds."""

    def __init__(
        self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def check(self, key_id: str) -> None:
        now = self._clock()
        with self._lock:
            seen = self._seen.setdefault(key_id, deque())
            while seen and seen[0] <= now - self.window_s:
                seen.popleft()
            if len(seen) >= self.limit:
                raise rate_refusal(self.limit, self.window_s, seen[0] + self.window_s - now)
            seen.append(now)


class KeyLimiter:
    """At most `limit` queries in flight per key; one more is refused at once (429), never queued.

    A slot is held until the query's worker has really stopped, not until its response is sent, so a
    query cut off by its deadline still counts while it unwinds.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}

    def in_flight(self, key_id: str | None = None) -> int:
        with self._lock:
            if key_id is None:
                return sum(self._in_flight.values())
            return self._in_flight.get(key_id, 0)

    def acquire(self, key_id: str) -> None:
        with self._lock:
            n = self._in_flight.get(key_id, 0)
            if n >= self.limit:
                raise TooManyRequests(
                    f"this API key already has {n} queries in flight (limit {self.limit}); retry later",
                    headers={"Retry-After": "1"},
                )
            self._in_flight[key_id] = n + 1

    def release(self, key_id: str) -> None:
        with self._lock:
            n = self._in_flight.get(key_id, 0) - 1
            if n > 0:
                self._in_flight[key_id] = n
            else:
                self._in_flight.pop(key_id, None)

    @contextmanager
    def slot(self, key_id: str) -> Iterator[None]:
        self.acquire(key_id)
        try:
            yield
        finally:
            self.release(key_id)


class BodyLimitMiddleware(HttpMiddleware):
    """413 for a body over `max_bytes`: by Content-Length up front, else by counting what arrives."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        upload_max_bytes: int | None = None,
        upload_paths: re.Pattern[str] | None = None,
    ) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes
        # Document uploads (POST/PUT to `upload_paths`) carry files, not a question: their own bound.
        self.upload_max_bytes = upload_max_bytes or max_bytes
        self.upload_paths = upload_paths

    def _limit(self, scope: Scope) -> int:
        if (
            self.upload_paths is not None
            and scope.get("method") in ("POST", "PUT")
            and self.upload_paths.match(scope["path"])
        ):
            return self.upload_max_bytes
        return self.max_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        limit = self._limit(scope)
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await self._refuse(send, limit)
            return
        received = 0
        too_large = False
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    too_large = True
                    raise _TooLarge
            return message

        async def guarded_send(message: Message) -> None:
            # The framework turns a failed body read into its own 400; answer the truth (413) instead.
            nonlocal refused
            if not too_large:
                await send(message)
            elif not refused:
                refused = True
                await self._refuse(send, limit)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not too_large:
                raise
            if not refused:
                await self._refuse(send, limit)

    async def _refuse(self, send: Send, limit: int) -> None:
        await send_error(
            send, BodyTooLarge(f"request body is larger than {limit} bytes", detail={"limit_bytes": limit})
        )


class _TooLarge(Exception):
    pass


MAX_JSON_DEPTH = 64  # levels of arrays and objects in a request body; a filter's $and/$or uses two a level
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_depth(body: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep a JSON text's arrays and objects nest, counted up to `limit` + 1, without parsing it:
    the parser's recursion would fail (or succeed, or not) at a depth that depends on the stack, and
    fail as "not valid JSON". Strings are skipped whole, so a bracket inside one is not counted."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b"", body)):
        if bracket in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


@dataclass(frozen=True)
class OutputBounds:
    max_answer_chars: int
    max_items: int
    max_text_chars: int


def cut(text: Any, limit: int) -> tuple[Any, bool]:
    if isinstance(text, str) and len(text) > limit:
        return text[:limit] + "…", True
    return text, False


def bound_result(kind: str, result: dict[str, Any], bounds: OutputBounds) -> tuple[dict[str, Any], bool]:
    """The result with its answer, evidence and hits cut to the configured sizes, and whether anything was."""
    out = dict(result)
    truncated = False
    if "answer" in out:
        out["answer"], hit = cut(out["answer"], bounds.max_answer_chars)
        truncated |= hit
    # Lists of items whose texts can be long: each is capped in count and in text length.
    for field, text_keys in (
        ("evidence", ("text", "description")),
        ("points", ("description",)),
        ("communities", ("summary",)),
        ("hits", ("text", "content")),
        ("sources", ("text",)),  # basic: the retrieved passages
        ("nodes", ("answer",)),  # drift: the tree's steps
        ("context_rows", ()),  # local: what each context id names (no long texts, but many rows)
        ("citations", ()),
    ):
        items = out.get(field)
        if not isinstance(items, list):
            continue
        if len(items) > bounds.max_items:
            items, truncated = items[: bounds.max_items], True
        bounded = []
        for item in items:
            item = dict(item)
            for key in text_keys:
                if key in item:
                    item[key], hit = cut(item[key], bounds.max_text_chars)
                    truncated |= hit
            bounded.append(item)
        out[field] = bounded
    return out, truncated
