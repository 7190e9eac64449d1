"""Per-key concurrency shared by every service process that points at one PostgreSQL server.

Slot i of a key is PostgreSQL's session advisory lock (key, i): a query takes the first free slot
(`pg_try_advisory_lock`, never waiting: a key at its limit is refused at once with 429, as the
per-process limiter does) and gives it back when its worker has really stopped. The locks belong to this
process's connection, so a process that dies frees its slots with it; nothing is written to any table.
The URL holds a password: it is never logged, and errors are scrubbed of it.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from pipeline.io.pg import CacheConnectionError, redact, url_label
from pipeline.service.errors import TooManyRequests


def _key_number(key_id: str) -> int:
    """The key as the advisory lock's first int4 (the slot is the second)."""
    return int.from_bytes(hashlib.sha256(f"graphrag-key:{key_id}".encode()).digest()[:4], "big", signed=True)


class PgKeyLimiter:
    """`KeyLimiter`'s contract (acquire / release / in_flight), counted across processes (module docstring)."""

    def __init__(self, url: str, limit: int) -> None:
        self.limit = limit
        self._url = url
        self._lock = threading.Lock()
        self._conn: Any = None
        self._held: dict[str, list[int]] = {}  # this process's slots, per key

    def __repr__(self) -> str:
        return f"PgKeyLimiter({url_label(self._url)}, limit={self.limit})"

    def _live(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg.connect(self._url, autocommit=True, application_name="graphrag-limits")
            except Exception as exc:  # noqa: BLE001 - its message may quote the URL
                raise CacheConnectionError(
                    f"limits server {url_label(self._url)}: {redact(str(exc), self._url)}"
                ) from None
            self._held.clear()  # a new session holds no lock
        return self._conn

    def in_flight(self, key_id: str | None = None) -> int:
        """Queries this process has in flight (for one key, or all)."""
        with self._lock:
            if key_id is None:
                return sum(len(s) for s in self._held.values())
            return len(self._held.get(key_id, []))

    def acquire(self, key_id: str) -> None:
        with self._lock:
            conn = self._live()
            mine = self._held.setdefault(key_id, [])
            key = _key_number(key_id)
            for slot in range(self.limit):
                if slot in mine:  # the lock is re-entrant within a session: ours already
                    continue
                if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (key, slot)).fetchone()[0]:
                    mine.append(slot)
                    return
            if not mine:
                self._held.pop(key_id, None)
            raise TooManyRequests(
                f"this API key already has {self.limit} queries in flight across the service's processes "
                f"(limit {self.limit}); retry later",
                headers={"Retry-After": "1"},
            )

    def release(self, key_id: str) -> None:
        with self._lock:
            mine = self._held.get(key_id)
            if not mine:
                return
            slot = mine.pop()
            if not mine:
                self._held.pop(key_id, None)
            if self._conn is not None and not self._conn.closed:
                self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_key_number(key_id), slot))
