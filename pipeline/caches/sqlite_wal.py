"""Setting up a shared SQLite cache file (WAL mode and its table) when several processes open it at once.

SQLite's busy timeout does not cover the switch to WAL: while another connection holds a write lock on a
file still in rollback-journal mode (another process creating the table a moment earlier),
`PRAGMA journal_mode=WAL` answers "database is locked" at once instead of waiting, because waiting there
could deadlock. The first processes of a multiprocess run open a new cache file together, so that
answer is retried here, for as long as the busy timeout would have waited. Once the file is in WAL
(a setting kept in the file) the switch is a no-op and writers wait on each other normally.
"""

from __future__ import annotations

import logging
import os
import sqlite3

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential_jitter

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 60


def _locked(exc: BaseException) -> bool:
    """SQLITE_BUSY and its variants; sqlite3 reports them all as OperationalError with these words."""
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def _set_up(path: str | os.PathLike[str], schema: str) -> None:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(schema)
    finally:
        conn.close()


def prepare_wal_file(path: str | os.PathLike[str], schema: str) -> None:
    """Put the file in WAL mode and run `schema` (a CREATE ... IF NOT EXISTS), retrying while another
    process holds the lock; raises the last "database is locked" after `BUSY_TIMEOUT_S`."""
    for attempt in Retrying(
        retry=retry_if_exception(_locked),
        stop=stop_after_delay(BUSY_TIMEOUT_S),
        wait=wait_exponential_jitter(initial=0.01, max=0.5),
        before_sleep=lambda state: log.debug(
            "%s is locked by another process while being set up (try %d); retrying",
            path,
            state.attempt_number,
        ),
        reraise=True,
    ):
        with attempt:
            _set_up(path, schema)
