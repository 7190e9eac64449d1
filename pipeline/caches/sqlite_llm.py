"""The persistent LLM response cache: a re-run, a crash-resume or a backfill never pays twice for a call.

One SQLite file (WAL), `llm.sqlite` in the cache folder (`pipeline.runtime.local_cache_folder`), shared by every namespace
and by every process of a multiprocess Dagster run on one machine; `pipeline.caches.pg_llm.PgLLMCache`
is the same cache on PostgreSQL for runs spread over several machines. An entry is written in one
transaction after the response has been validated, so a crash or a cancellation can leave no
half-written entry behind.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from pipeline.caches.base import ResponseCacheBase
from pipeline.caches.sqlite_wal import prepare_wal_file

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, task TEXT NOT NULL, model TEXT NOT NULL, prompt_version TEXT NOT NULL,"
    " response TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,"
    " created REAL NOT NULL)"
)


class LLMCache(ResponseCacheBase):
    """Validated responses keyed by `cache_key`; counts this instance's hits and misses."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__()
        self._local = threading.local()
        prepare_wal_file(self.path, _SCHEMA)

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

    def _select(self, key: str) -> tuple[str, int, int] | None:
        return (
            self._conn()
            .execute("SELECT response, prompt_tokens, completion_tokens FROM responses WHERE key=?", (key,))
            .fetchone()
        )

    def _insert(self, entry: tuple[str, str, str, str, str, int, int]) -> None:
        """INSERT OR REPLACE in its own transaction."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?)", (*entry, time.time()))
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
