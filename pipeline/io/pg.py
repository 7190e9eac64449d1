"""One PostgreSQL connection per process and URL, shared by the caches that live on PostgreSQL.

The caches are called from many threads (an event loop per thread in the LLM client, Dagster's
in-process executor) and from forked workers, and each call is one short statement. One autocommit
connection behind a lock serves that without a pool; a forked child never touches its parent's
connection (the socket is shared with the parent, so even closing it would end the parent's session)
and opens its own on first use. The URL holds a password: it is never logged, and error messages are
scrubbed of it before they leave this module.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

T = TypeVar("T")

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class CacheConnectionError(ConnectionError):
    """The cache server could not be reached or refused the connection; the message holds no password."""


def check_identifier(name: str) -> str:
    """A table name the caches may create: lower-case, unquoted-safe, at most 63 characters."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"invalid table name {name!r} (lower-case letters, digits and '_', at most 63)")
    return name


def url_label(url: str) -> str:
    """host:port/dbname of a PostgreSQL URL, for reprs and messages (never user or password)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except Exception:  # malformed: say nothing rather than risk quoting it
        return "postgresql server"
    return f"{info.get('host') or 'localhost'}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


_USERINFO = re.compile(r"(//[^:/@\s]*:)([^@\s]*)@")


def redact(text: str, url: str) -> str:
    """`text` with the URL, its password (raw and percent-decoded) and any user:password@ hidden."""
    from psycopg.conninfo import conninfo_to_dict

    secrets = [url]
    parsers = (
        lambda: urlsplit(url).password,
        lambda: conninfo_to_dict(url).get("password"),  # ?password=...
        lambda: _USERINFO.search(url).group(2),  # type: ignore[union-attr] - a URL urlsplit refuses
    )
    for parse in parsers:
        try:
            password = parse()
        except Exception:
            continue
        if password:
            secrets += [password, unquote(password)]
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    return _USERINFO.sub(r"\1***@", text)


class PgConnection:
    """A lazily opened autocommit connection, serialised by a lock, reopened after fork or a dropped link."""

    def __init__(self, url: str, role: str = "cache") -> None:
        self._url = url
        self._role = role  # what the server is for, in errors and in pg_stat_activity
        self._lock = threading.Lock()
        self._conn: Any = None
        self._pid = os.getpid()
        self._tables: set[str] = set()

    def __repr__(self) -> str:
        return f"PgConnection({url_label(self._url)})"

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self._url, autocommit=True, application_name=f"graphrag-{self._role}")
        except Exception as exc:  # psycopg.Error, or ValueError-like errors on a malformed URL
            # from None: the original message may quote the URL; only the scrubbed one is kept.
            raise CacheConnectionError(
                f"{self._role} server {url_label(self._url)}: {redact(str(exc), self._url)}"
            ) from None
        self._tables.clear()  # a fresh session re-checks its tables (cheap: once per table)
        return conn

    def _live(self) -> Any:
        if self._pid != os.getpid():  # inherited through fork: the socket is the parent's
            self._conn, self._pid = None, os.getpid()
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def run(self, fn: Callable[[Any], T], *, table: str | None = None, ddl: Sequence[str] = ()) -> T:
        """`fn(conn)` under the lock, after creating `table` with `ddl` if this session has not yet.

        Retried once on a fresh connection if the link had dropped: every cache statement is
        idempotent (reads, ON CONFLICT inserts, deletes), so a retry never applies a write twice.
        """
        import psycopg

        with self._lock:
            for attempt in (0, 1):
                conn = self._live()
                try:
                    if table is not None:
                        self._ensure_table(conn, table, ddl)
                    return fn(conn)
                except psycopg.OperationalError:
                    if attempt or not conn.closed:  # a query error on a live link is the caller's
                        raise
                    self._conn = None
        raise AssertionError("unreachable")

    def _ensure_table(self, conn: Any, name: str, ddl: Sequence[str]) -> None:
        """Run `ddl` once per session, under a transaction-scoped advisory lock.

        Two processes running CREATE TABLE IF NOT EXISTS at the same moment can both pass the
        existence check and one then fails on the catalog's unique index; the lock makes them take turns.
        """
        if name in self._tables:
            return
        lock_id = int.from_bytes(hashlib.sha256(f"graphrag:{name}".encode()).digest()[:8], "big", signed=True)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id,))
            for statement in ddl:
                conn.execute(statement)
        self._tables.add(name)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


_shared: dict[str, PgConnection] = {}
_shared_lock = threading.Lock()
_shared_pid = os.getpid()


def _forget_parent_connections() -> None:
    # A thread of the parent may have held these locks at fork time; the child starts afresh and
    # drops the parent's connections without closing them (psycopg does not close them on collection
    # in a child either).
    global _shared, _shared_lock, _shared_pid
    _shared, _shared_lock, _shared_pid = {}, threading.Lock(), os.getpid()


os.register_at_fork(after_in_child=_forget_parent_connections)


def shared_connection(url: str) -> PgConnection:
    """This process's connection to `url` (one per process and URL, however many caches use it)."""
    if _shared_pid != os.getpid():  # forked without the hook running (e.g. os.fork from C)
        _forget_parent_connections()
    with _shared_lock:
        conn = _shared.get(url)
        if conn is None:
            conn = _shared[url] = PgConnection(url)
        return conn
