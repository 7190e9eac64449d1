"""Per-key concurrency and rate shared by every service process that points at one PostgreSQL server.

Slot i of a key is PostgreSQL's session advisory lock (key, i): a query takes the first free slot
(`pg_try_advisory_lock`, never waiting: a key at its limit is refused at once with 429, as the
per-process limiter does) and gives it back when its worker has really stopped. The locks belong to this
process's connection, so a process that dies frees its slots with it.

The rate (`PgKeyRateLimiter`): each accepted query is a row (key, time) of `graphrag_key_queries`; a key
with `limit` rows in the last `window_s` seconds (the server's clock) is refused, counted and inserted under a
transaction-scoped advisory lock of the key so two processes cannot both take the last place. Rows older
than the window are deleted as they are passed. The URL holds a password: it is never logged, and errors
are scrubbed of it.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from pipeline.io.pg import PgConnection, shared_connection
from pipeline.service.errors import TooManyRequests
from pipeline.service.limits import rate_refusal

RATE_TABLE = "graphrag_key_queries"
_RATE_DDL = (
    f"CREATE TABLE IF NOT EXISTS {RATE_TABLE} (key_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT now())",
    f"CREATE INDEX IF NOT EXISTS {RATE_TABLE}_key_at ON {RATE_TABLE} (key_id, at)",
)


def _key_number(key_id: str) -> int:
    """The key as the advisory lock's first int4 (the slot is the second)."""
    return int.from_bytes(hashlib.sha256(f"graphrag-key:{key_id}".encode()).digest()[:4], "big", signed=True)


class PgKeyLimiter:
    """`KeyLimiter`'s contract (acquire / release / in_flight), counted across processes (module docstring)."""

    def __init__(self, url: str, limit: int) -> None:
        self.limit = limit
        # A connection of its own, not the shared one: the advisory locks belong to its session.
        self._pg = PgConnection(url, role="limits")
        self._lock = threading.Lock()  # guards _held for in_flight, read outside a database call
        self._session: Any = None
        self._held: dict[str, list[int]] = {}  # this process's slots, per key

    def __repr__(self) -> str:
        return f"PgKeyLimiter({self._pg!r}, limit={self.limit})"

    def _slots(self, conn: Any, key_id: str) -> list[int]:
        """This session's slots of the key; a new session (reconnect, fork) holds none of the old one's."""
        if conn is not self._session:
            self._session = conn
            self._held.clear()
        return self._held.setdefault(key_id, [])

    def in_flight(self, key_id: str | None = None) -> int:
        """Queries this process has in flight (for one key, or all)."""
        with self._lock:
            if key_id is None:
                return sum(len(s) for s in self._held.values())
            return len(self._held.get(key_id, []))

    def acquire(self, key_id: str) -> None:
        key = _key_number(key_id)

        def take(conn: Any) -> bool:
            with self._lock:
                mine = self._slots(conn, key_id)
                for slot in range(self.limit):
                    # the lock is re-entrant within a session: a slot of ours is not free
                    if (
                        slot not in mine
                        and conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (key, slot)).fetchone()[0]
                    ):
                        mine.append(slot)
                        return True
                if not mine:
                    self._held.pop(key_id, None)
                return False

        if not self._pg.run(take):
            raise TooManyRequests(
                f"this API key already has {self.limit} queries in flight across the service's processes "
                f"(limit {self.limit}); retry later",
                headers={"Retry-After": "1"},
            )

    def release(self, key_id: str) -> None:
        def give(conn: Any) -> None:
            with self._lock:
                mine = self._slots(conn, key_id)
                if not mine:
                    self._held.pop(key_id, None)
                    return
                slot = mine.pop()
                if not mine:
                    self._held.pop(key_id, None)
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_key_number(key_id), slot))

        self._pg.run(give)


class PgKeyRateLimiter:
    """`KeyRateLimiter`'s contract (`check`), counted across processes (module docstring)."""

    def __init__(self, url: str, limit: int, window_s: float = 60.0) -> None:
        self.limit = limit
        self.window_s = window_s
        self._conn = shared_connection(url)

    def __repr__(self) -> str:
        return f"PgKeyRateLimiter({self._conn!r}, limit={self.limit}, window_s={self.window_s:g})"

    def check(self, key_id: str) -> None:
        window = f"{self.window_s} seconds"

        def count_and_take(conn: Any) -> float | None:
            """None when the query is taken; else the seconds until the window's oldest query leaves it."""
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, -1)", (_key_number(key_id),))
                conn.execute(
                    f"DELETE FROM {RATE_TABLE} WHERE key_id = %s AND at <= now() - %s::interval",
                    (key_id, window),
                )
                n, oldest_age = conn.execute(
                    f"SELECT count(*), extract(epoch FROM now() - min(at)) FROM {RATE_TABLE} WHERE key_id = %s",
                    (key_id,),
                ).fetchone()
                if n >= self.limit:
                    return self.window_s - float(oldest_age or 0.0)
                conn.execute(f"INSERT INTO {RATE_TABLE} (key_id) VALUES (%s)", (key_id,))
                return None

        wait = self._conn.run(count_and_take, table=RATE_TABLE, ddl=_RATE_DDL)
        if wait is not None:
            raise rate_refusal(self.limit, self.window_s, wait)
