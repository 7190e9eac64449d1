"""A LanceDB table's rows, without their vectors, held in memory per table version and fetched by id.

Basic search ranks text units from their pieces' vectors held in memory (`vector_cache`), then needed
the winners' rows: LanceDB answered `id IN (...)` with a scan of the whole table's ids, 8-10 ms of a
38 ms warm basic query on the 11 MB corpus, and 48 ms on average in the first seconds of
bench/bench_serve_load.py, when 16 clients ask at once. The rows here are Arrow (their texts are not
Python objects, so the garbage collector never walks them) and a fetch is a `take`.

A table above `MAX_ROWS` is not loaded (`held_rows` returns None and the caller asks LanceDB), for the
same reason as `vector_cache.MAX_ROWS`: one namespace must not take a serving process's memory. Nor is a
table not written yet: LanceDB then says which one is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions

# Counted before reading, so a table too large is never read whole: 100,000 text units of the default
# 1,200 tokens are about 500 MB of text, a corpus of about 400 MB.
MAX_ROWS = 100_000


@dataclass(frozen=True)
class HeldRows:
    table: pa.Table  # every column but the vector
    position: dict[str, int]  # id -> row

    def rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """{id: row} for those of `ids` that are in the table."""
        found = [self.position[i] for i in ids if i in self.position]
        return {r["id"]: r for r in self.table.take(found).to_pylist()} if found else {}


def held_rows(store: NamespaceStore, table: str) -> HeldRows | None:
    """The table's rows but their vectors, read once per version of it; None when it does not exist or
    has more than `MAX_ROWS` rows."""
    versions = table_versions(store, lance=[table])
    if versions[0] is None:
        return None
    return cached_index(store, f"rows:{table}", versions, lambda: _load(store, table))


def _load(store: NamespaceStore, table: str) -> HeldRows | None:
    lance = store.open_lance_table(table)
    if lance.count_rows() > MAX_ROWS:
        return None
    columns = [name for name in lance.schema.names if name != "vector"]
    data = lance.search().select(columns).limit(None).to_arrow().combine_chunks()
    return HeldRows(data, {key: i for i, key in enumerate(data.column("id").to_pylist())})
