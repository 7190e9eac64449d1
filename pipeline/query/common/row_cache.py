"""A LanceDB table's rows, without their vectors, held in memory per table version and fetched by id.

Basic search ranks text units from their pieces' vectors held in memory (`vector_cache`), then needed
the winners' rows: LanceDB answered `id IN (...)` with a scan of the whole table's ids, 8-10 ms of a
75 ms basic query on the 11 MB corpus alone and 40-280 ms when 16 clients asked at once
(bench/bench_serve_load.py), the largest step of the query under load. The rows here are Arrow (their
texts are not Python objects, so the garbage collector never walks them) and a fetch is a `take`.

A table above `MAX_BYTES` is not loaded (`held_rows` returns None and the caller asks LanceDB), for the
same reason as `vector_cache.MAX_ROWS`: one namespace must not take a serving process's memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pipeline.io.store import NamespaceStore
from pipeline.query.common.index_cache import cached_index, table_versions

# 512 MB of text units is a corpus of about 400 MB; past it LanceDB is asked for each query's rows.
MAX_BYTES = 512 * 2**20


@dataclass(frozen=True)
class HeldRows:
    table: pa.Table  # every column but the vector
    position: dict[str, int]  # id -> row

    def rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """{id: row} for those of `ids` that are in the table."""
        found = [self.position[i] for i in ids if i in self.position]
        return {r["id"]: r for r in self.table.take(found).to_pylist()} if found else {}


EMPTY = HeldRows(pa.table({"id": pa.array([], pa.string())}), {})


def held_rows(store: NamespaceStore, table: str) -> HeldRows | None:
    """The table's rows but their vectors, read once per version of it (`EMPTY` while it does not
    exist); None when they would take more than `MAX_BYTES`."""
    versions = table_versions(store, lance=[table])
    if versions[0] is None:
        return EMPTY
    return cached_index(store, f"rows:{table}", versions, lambda: _load(store, table))


def _load(store: NamespaceStore, table: str) -> HeldRows | None:
    lance = store.open_lance_table(table)
    columns = [name for name in lance.schema.names if name != "vector"]
    # Measured once read: a table too large costs one scan per version (its None is cached too).
    data = lance.search().select(columns).limit(None).to_arrow()
    if data.nbytes > MAX_BYTES:
        return None
    data = data.combine_chunks()
    return HeldRows(data, {key: i for i, key in enumerate(data.column("id").to_pylist())})
