"""The LLM response cache on PostgreSQL, for runs whose steps execute on several machines.

Same interface and guarantees as `pipeline.caches.sqlite_llm.LLMCache`: an entry is written in one statement
as soon as its response has been validated, so a worker killed later and its step re-executed on
another machine never pays for that call again. Several processes may write the same key at once:
the first entry wins (ON CONFLICT DO NOTHING) and nobody gets an error. Table (created if missing)::

    graphrag_llm_cache(key text PRIMARY KEY, task text, model text, prompt_version text,
                       response text, prompt_tokens integer, completion_tokens integer,
                       created timestamptz DEFAULT now())
"""

from __future__ import annotations

from pipeline.caches.base import ResponseCacheBase
from pipeline.caches.pg_table import PgTable

DEFAULT_TABLE = "graphrag_llm_cache"


def _ddl(table: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {table} ("
        " key text PRIMARY KEY, task text NOT NULL, model text NOT NULL, prompt_version text NOT NULL,"
        " response text NOT NULL, prompt_tokens integer NOT NULL, completion_tokens integer NOT NULL,"
        " created timestamptz NOT NULL DEFAULT now())",
        f"CREATE INDEX IF NOT EXISTS {table}_task ON {table} (task)",
    ]


class PgLLMCache(ResponseCacheBase, PgTable):
    """Validated responses keyed by `cache_key` in a PostgreSQL table; counts this instance's hits and misses.

    Opens nothing until first used; the connection is the process's shared one for this URL
    (`pipeline.io.pg`), so building a cache per client or per asset costs nothing.
    """

    def __init__(self, url: str, *, table: str = DEFAULT_TABLE) -> None:
        PgTable.__init__(self, url, table, _ddl)
        ResponseCacheBase.__init__(self)

    def _select(self, key: str) -> tuple[str, int, int] | None:
        return self._run(
            lambda conn: conn.execute(
                f"SELECT response, prompt_tokens, completion_tokens FROM {self.table} WHERE key = %s",
                (key,),
            ).fetchone()
        )

    def _insert(self, entry: tuple[str, str, str, str, str, int, int]) -> None:
        """One statement: a concurrent writer of the same key keeps its entry, without error."""
        self._run(
            lambda conn: conn.execute(
                f"INSERT INTO {self.table} (key, task, model, prompt_version, response, prompt_tokens,"
                " completion_tokens) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                entry,
            )
        )

    def forget(self, key: str) -> None:
        """Drop an entry that no longer validates (e.g. the task's model changed without a prompt bump)."""
        self._run(lambda conn: conn.execute(f"DELETE FROM {self.table} WHERE key = %s", (key,)))

    def count(self, task: str | None = None) -> int:
        return self._count("task", task)
