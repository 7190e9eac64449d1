"""The persistent LLM response cache: a re-run, a crash-resume or a backfill never pays twice for a call.

One SQLite file (WAL), `llm.sqlite` in the cache folder (`pipeline.caches`), shared by every namespace
and by every process of a multiprocess Dagster run on one machine; `pipeline.llm.pg_cache.PgLLMCache`
is the same cache on PostgreSQL for runs spread over several machines. An entry is written in one
transaction after the response has been validated, so a crash or a cancellation can leave no
half-written entry behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, task TEXT NOT NULL, model TEXT NOT NULL, prompt_version TEXT NOT NULL,"
    " response TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,"
    " created REAL NOT NULL)"
)


def cache_key(
    model: str, messages: list[dict[str, Any]], params: Mapping[str, Any], prompt_version: str
) -> str:
    """sha256 of everything that changes the answer; dict order does not matter."""
    blob = json.dumps(
        {"model": model, "messages": messages, "params": params, "prompt_version": prompt_version},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    response: str
    prompt_tokens: int
    completion_tokens: int


class ResponseCache(Protocol):
    """What the LLM client needs of a cache: `LLMCache` (SQLite) or `PgLLMCache` (PostgreSQL)."""

    def get(self, key: str) -> CachedResponse | None: ...

    def put(
        self,
        key: str,
        response: str,
        *,
        task: str,
        model: str,
        prompt_version: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None: ...

    def forget(self, key: str) -> None: ...

    def count(self, task: str | None = None) -> int: ...

    def stats(self) -> dict[str, int]: ...

    def close(self) -> None: ...


class LookupCounter:
    """Hits and misses of one cache instance's lookups, counted across threads (both cache backends)."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()

    def _counted(self, row: tuple[str, int, int] | None) -> CachedResponse | None:
        with self._count_lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if row is None else CachedResponse(*row)

    def stats(self) -> dict[str, int]:
        with self._count_lock:
            return {"cache_hits": self.hits, "cache_misses": self.misses}


class LLMCache(LookupCounter):
    """Validated responses keyed by `cache_key`; counts this instance's hits and misses."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__()
        self._local = threading.local()
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection. Kept open: closing the last one checkpoints the WAL (an fsync)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():  # never reuse a connection across fork
            # Autocommit mode: transactions are opened explicitly, so a write takes the lock up front
            # (BEGIN IMMEDIATE) and two processes can never deadlock upgrading a read lock.
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=60000")
            # WAL + NORMAL: a commit survives a process crash and is never torn; a power cut can lose
            # the last few entries (asked again next run). FULL would fsync every entry.
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close this thread's connection (others close when their thread's objects are collected)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def get(self, key: str) -> CachedResponse | None:
        row = (
            self._conn()
            .execute("SELECT response, prompt_tokens, completion_tokens FROM responses WHERE key=?", (key,))
            .fetchone()
        )
        return self._counted(row)

    def put(
        self,
        key: str,
        response: str,
        *,
        task: str,
        model: str,
        prompt_version: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        """Store one entry atomically (INSERT OR REPLACE in its own transaction)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?)",
                (key, task, model, prompt_version, response, prompt_tokens, completion_tokens, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def forget(self, key: str) -> None:
        """Drop an entry that no longer validates (e.g. the task's model changed without a prompt bump)."""
        self._conn().execute("DELETE FROM responses WHERE key=?", (key,))

    def count(self, task: str | None = None) -> int:
        if task is None:
            return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return self._conn().execute("SELECT COUNT(*) FROM responses WHERE task=?", (task,)).fetchone()[0]
