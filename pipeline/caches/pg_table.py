"""What both PostgreSQL caches share: one table, created with its indexes on first use, reached through
the process's shared connection for the URL (`pipeline.io.pg`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.io.pg import check_identifier, shared_connection, url_label


class PgTable:
    """A cache's table on PostgreSQL. Opens nothing until first used, so building a cache per client or
    per asset costs nothing."""

    def __init__(self, url: str, table: str, ddl: Callable[[str], list[str]]) -> None:
        self._url = url
        self.table = check_identifier(table)
        self._ddl = ddl(self.table)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({url_label(self._url)}, table={self.table!r})"  # the URL holds a password
        )

    def _run(self, fn: Any) -> Any:
        return shared_connection(self._url).run(fn, table=self.table, ddl=self._ddl)

    def close(self) -> None:
        """Close this process's connection to the server (the next call, by any cache, reopens it)."""
        shared_connection(self._url).close()

    def _count(self, column: str, value: str | None) -> int:
        """Rows in the table, or those whose ``column`` is ``value``."""
        if value is None:
            query, params = f"SELECT COUNT(*) FROM {self.table}", ()
        else:
            query, params = f"SELECT COUNT(*) FROM {self.table} WHERE {column} = %s", (value,)
        return self._run(lambda conn: conn.execute(query, params).fetchone()[0])
