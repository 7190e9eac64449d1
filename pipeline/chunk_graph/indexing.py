"""A namespace's chunk graph: built from its LanceDB ``text_units`` table, saved as a snapshot beside it
through the namespace's store (so on whichever storage root the namespace lives).

The snapshot records a fingerprint of everything it was built from (ids, texts, metadata, vectors,
build options). A rebuild with the same fingerprint is skipped, so the graph is rebuilt exactly
when its inputs change, never on every query (Mastra's tool builds once from the first query and
never again).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.chunk_graph import snapshot as snap
from pipeline.chunk_graph.edges import BuildOptions
from pipeline.chunk_graph.errors import SnapshotError
from pipeline.chunk_graph.graph import ChunkGraph
from pipeline.core import schema
from pipeline.io.storage import Location
from pipeline.io.store import NamespaceStore, TableNotFoundError

# Text-unit columns carried into each node's metadata (filterable at query time).
METADATA_COLUMNS = ("document_id", "document_title", "start_char", "end_char", "n_tokens")


@dataclass
class ChunkGraphBuild:
    path: Location
    nodes: int
    edges: int  # undirected
    mode: str
    build_seconds: float
    snapshot_bytes: int
    reused: bool  # the existing snapshot already matched the inputs
    fingerprint: str
    isolated_nodes: int
    info: dict[str, Any]


def snapshot_path(store: NamespaceStore) -> Location:
    return store.location(schema.CHUNK_GRAPH_SNAPSHOT)


def _load(store: NamespaceStore, dimension: int | None = None) -> ChunkGraph:
    with store.open_input_file(schema.CHUNK_GRAPH_SNAPSHOT) as source:
        return ChunkGraph.load(source, dimension=dimension)


def _inputs(store: NamespaceStore) -> tuple[list[str], pa.Array, list[dict[str, Any]], np.ndarray]:
    table = store.open_lance_table(schema.LANCE_TEXT_UNITS).to_arrow()
    vector_type = table.schema.field("vector").type
    vectors = (
        table.column("vector")
        .combine_chunks()
        .flatten()
        .to_numpy(zero_copy_only=False)
        .reshape(table.num_rows, vector_type.list_size)
    )
    present = [c for c in METADATA_COLUMNS if c in table.schema.names]
    metadata = table.select(present).to_pylist()
    return table.column("id").to_pylist(), table.column("text").combine_chunks(), metadata, vectors


def _fingerprint(
    ids: list[str],
    texts: pa.Array,
    metadata: list[dict[str, Any]],
    vectors: np.ndarray,
    options: BuildOptions,
) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"format": snap.FORMAT_VERSION, "options": asdict(options)}, sort_keys=True).encode())
    h.update(json.dumps(ids).encode())
    h.update(json.dumps(texts.to_pylist(), ensure_ascii=False).encode())
    h.update(json.dumps(metadata, sort_keys=True, default=str).encode())
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    return h.hexdigest()


def _existing_fingerprint(store: NamespaceStore) -> str | None:
    if not store.has_file(schema.CHUNK_GRAPH_SNAPSHOT):
        return None
    try:
        # Only the header is read: on S3, a few ranged reads instead of the whole snapshot.
        with store.open_input_file(schema.CHUNK_GRAPH_SNAPSHOT) as source:
            return snap.read_info(source)["build"].get("fingerprint")
    except SnapshotError:
        return None  # an old or broken snapshot is simply replaced


def build_namespace_chunk_graph(
    store: NamespaceStore, options: BuildOptions | None = None, force: bool = False
) -> ChunkGraphBuild:
    """Build (or reuse) the namespace's chunk graph and save its snapshot."""
    options = options or BuildOptions()
    ids, texts, metadata, vectors = _inputs(store)
    fingerprint = _fingerprint(ids, texts, metadata, vectors, options)
    if not force and _existing_fingerprint(store) == fingerprint:
        started = time.perf_counter()
        graph = _load(store)
        size = store.file_size(schema.CHUNK_GRAPH_SNAPSHOT) or 0
        return _summary(graph, store, size, reused=True, seconds=time.perf_counter() - started)
    graph = ChunkGraph.build(ids, texts, metadata, vectors, **asdict(options))
    graph.build_info["fingerprint"] = fingerprint
    size = store.write_bytes(schema.CHUNK_GRAPH_SNAPSHOT, graph.serialize())
    return _summary(graph, store, size, reused=False, seconds=graph.build_info["build_seconds"])


def _summary(
    graph: ChunkGraph, store: NamespaceStore, size: int, reused: bool, seconds: float
) -> ChunkGraphBuild:
    info = graph.build_info
    degrees = graph.degrees()
    return ChunkGraphBuild(
        path=snapshot_path(store),
        nodes=graph.num_nodes,
        edges=graph.num_edges,
        mode=str(info.get("mode")),
        build_seconds=round(seconds, 4),
        snapshot_bytes=size,
        reused=reused,
        fingerprint=str(info.get("fingerprint")),
        isolated_nodes=int((degrees == 0).sum()),
        info=info,
    )


def load_namespace_chunk_graph(store: NamespaceStore, dimension: int | None = None) -> ChunkGraph:
    """The namespace's saved chunk graph; TableNotFoundError if the asset was never materialized."""
    if not store.has_file(schema.CHUNK_GRAPH_SNAPSHOT):
        raise TableNotFoundError(
            f"namespace {store.namespace!r} has no chunk graph yet (expected {snapshot_path(store)}); "
            "materialize the chunk_graph asset (`pipeline index --namespace ...`) first"
        )
    return _load(store, dimension)
