"""Document shards: how one namespace's LLM- and model-bound work is split so several workers share it.

A document belongs to one shard for good (a hash of its id, not its position), so adding a document
never moves the others and a shard's cached work stays valid. Every text unit of a document is in the
document's shard. Shard outputs are written under `shards/` in the namespace and merged back in the
namespace's text-unit order, so the merged table does not depend on the shard count.
"""

from __future__ import annotations

import hashlib
import re

import pyarrow as pa
import pyarrow.compute as pc

SHARD_FOLDER = "shards"
_SHARD_NAME = re.compile(rf"{SHARD_FOLDER}/(?P<table>[^/]+)\.\d+-of-(?P<count>\d+)")


class ShardMismatchError(RuntimeError):
    """The shard tables on disk do not cover the namespace's current text units."""


def shard_of(document_id: str, shards: int) -> int:
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    digest = hashlib.sha256(document_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def document_shards(text_units: pa.Table, shards: int) -> pa.Array:
    """The shard of each text unit (its document's), in table order; each document is hashed once."""
    doc_ids = text_units.column("document_id").to_pylist()
    by_document = {d: shard_of(d, shards) for d in set(doc_ids)}
    return pa.array([by_document[d] for d in doc_ids], pa.int64())


def shard_units(text_units: pa.Table, shard: int, shards: int, assigned: pa.Array | None = None) -> pa.Table:
    """The text units (in table order) whose document hashes to `shard`; `assigned` is
    `document_shards(text_units, shards)` when the caller has it already."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is outside 0..{shards - 1}")
    if assigned is None:
        assigned = document_shards(text_units, shards)
    return text_units.filter(pc.equal(assigned, shard))


def shard_table(table: str, shard: int, shards: int) -> str:
    """Store name of one shard's part of `table`; the count is in the name so that a shard written
    under another shard count is never mistaken for a current one."""
    return f"{SHARD_FOLDER}/{table}.{shard:03d}-of-{shards:03d}"


def shard_base(name: str) -> str | None:
    """The table whose shard part `shard_table` stores as `name`; None for any other name."""
    match = _SHARD_NAME.fullmatch(name)
    return match["table"] if match else None


def stale_parts(names: list[str], shards: int) -> list[str]:
    """The shard part files among `names` ("shards/<table>.<k>-of-<n>.parquet") written under another
    shard count than `shards`: once the namespace has been rebuilt under `shards`, nothing reads them."""
    out = []
    for name in names:
        match = _SHARD_NAME.fullmatch(name.removesuffix(".parquet"))
        if match and int(match["count"]) != shards:
            out.append(name)
    return out


def order_like(parts: pa.Table, key: str, order: list[str]) -> pa.Table:
    """Rows of `parts` in the order of `order` (the namespace's text-unit ids); raises if any id of
    `order` has no row or more than one."""
    position = {uid: i for i, uid in enumerate(order)}
    keys = parts.column(key).to_pylist()
    missing = set(order) - set(keys)
    if missing or len(keys) != len(order):
        extra = [k for k in keys if k not in position]
        raise ShardMismatchError(
            f"the shard tables hold {len(keys)} rows for {len(order)} text units "
            f"({len(missing)} missing, {len(extra)} unknown); re-materialize the shards of this namespace"
        )
    indices = pc.sort_indices(pa.array([position[k] for k in keys], pa.int64()))
    return parts.take(indices)
