"""The embedding cache on PostgreSQL, for runs whose steps execute on several machines.

Same interface as `pipeline.caches.sqlite_embedding.EmbeddingCache`. Vectors are stored as the raw float32 bytes,
so what comes back is bit-for-bit what went in. Table (created if missing)::

    graphrag_embedding_cache(model text, text_hash text, dim integer, vector bytea,
                             PRIMARY KEY (model, text_hash))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.caches.pg_table import PgTable

DEFAULT_TABLE = "graphrag_embedding_cache"
_CHUNK = 1000  # hashes per SELECT: keeps each statement and its reply small


def _ddl(table: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {table} ("
        " model text NOT NULL, text_hash text NOT NULL, dim integer NOT NULL, vector bytea NOT NULL,"
        " PRIMARY KEY (model, text_hash))"
    ]


class PgEmbeddingCache(PgTable):
    """Vectors keyed by (model id, sha256 of text) in a PostgreSQL table. Opens nothing until first used."""

    def __init__(self, url: str, *, table: str = DEFAULT_TABLE) -> None:
        super().__init__(url, table, _ddl)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        query = f"SELECT text_hash, vector FROM {self.table} WHERE model = %s AND text_hash = ANY(%s)"

        def work(conn: Any) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for i in range(0, len(hashes), _CHUNK):
                for h, blob in conn.execute(query, (model, list(hashes[i : i + _CHUNK]))):
                    found[h] = np.frombuffer(blob, dtype=np.float32)
            return found

        return self._run(work) if hashes else {}

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        """Store a batch in one transaction; keys another process stored first are left as they are."""
        if not items:
            return
        # Sorted: two transactions inserting overlapping keys in different orders could deadlock, each
        # waiting on the other's uncommitted row; in one global order they just queue.
        rows = [
            (model, h, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
            for h, v in sorted(items.items(), key=lambda kv: kv[0])
        ]
        query = (
            f"INSERT INTO {self.table} (model, text_hash, dim, vector) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (model, text_hash) DO NOTHING"
        )

        def work(conn: Any) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(query, rows)

        self._run(work)

    def count(self, model: str | None = None) -> int:
        return self._count("model", model)
