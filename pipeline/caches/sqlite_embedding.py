"""The embedding cache in one SQLite file (`embeddings.sqlite`, WAL): vectors keyed by (model id, sha256
of the text), safe for several processes on one machine."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from pipeline.caches.sqlite_wal import prepare_wal_file

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS embeddings ("
    " model TEXT NOT NULL, text_hash TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,"
    " PRIMARY KEY (model, text_hash))"
)


class EmbeddingCache:
    """SQLite store of vectors keyed by (model id, sha256 of text). Safe for several processes on one
    machine (WAL); `pipeline.caches.pg_embedding.PgEmbeddingCache` is the one for several machines."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prepare_wal_file(self.path, _SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One connection for one transaction, closed after it: sqlite3's own `with conn:` commits but
        leaves the connection (and its file handles) open until garbage collection."""
        conn = sqlite3.connect(self.path, timeout=60)
        try:
            conn.execute("PRAGMA busy_timeout=60000")
            with conn:  # commit on success, roll back on an error
                yield conn
        finally:
            conn.close()

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._connect() as conn:
            for i in range(0, len(hashes), 500):
                part = list(hashes[i : i + 500])
                q = f"SELECT text_hash, vector FROM embeddings WHERE model=? AND text_hash IN ({','.join('?' * len(part))})"
                for h, blob in conn.execute(q, [model, *part]):
                    found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        rows = [
            (model, h, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()
        ]
        with self._connect() as conn:  # one transaction: all of a batch or none of it
            conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?)", rows)

    def count(self, model: str | None = None) -> int:
        with self._connect() as conn:
            if model is None:
                return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            return conn.execute("SELECT COUNT(*) FROM embeddings WHERE model=?", (model,)).fetchone()[0]
