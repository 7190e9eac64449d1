"""Chunk-graph snapshots: a compact Arrow IPC file, and Mastra's JSON shape for interoperability.

The Arrow file is one table, one row per node, and its adjacency list *is* the CSR:

    id        string
    content   large_string
    metadata  string                    JSON object
    vector    fixed_size_list<float32>[dimension]
    neighbors large_list<int32>         row indices; the list offsets are the CSR indptr
    weights   large_list<float32>       cosine of each edge, same offsets

with the format name, format version, dimension, threshold and build information in the schema
metadata. Buffers are zstd-compressed. Loading checks the version, the dimension and every edge
before a graph is returned, so a bad snapshot fails at load rather than in a later query.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.chunk_graph.errors import SnapshotError
from pipeline.chunk_graph.walk import Adjacency

FORMAT_NAME = "pipeline.chunk_graph"
FORMAT_VERSION = 1
MASTRA_SNAPSHOT_VERSION = 1  # Mastra's GRAPH_RAG_SNAPSHOT_VERSION

_COLUMNS = ("id", "content", "metadata", "vector", "neighbors", "weights")


@dataclass
class GraphData:
    """Everything a chunk graph holds; node i is row i of every column."""

    ids: pa.Array  # string
    contents: pa.Array  # large_string
    metadata: pa.Array  # string, one JSON object per node
    vectors: np.ndarray  # (n, dimension) float32, as given (not normalised)
    adjacency: Adjacency
    dimension: int
    threshold: float
    info: dict[str, Any] = field(default_factory=dict)


def to_arrow(data: GraphData) -> pa.Table:
    adj = data.adjacency
    offsets = pa.array(adj.indptr, pa.int64())
    vectors = np.ascontiguousarray(data.vectors, dtype=np.float32).reshape(-1)
    schema_meta = {
        "format": FORMAT_NAME,
        "format_version": str(FORMAT_VERSION),
        "dimension": str(data.dimension),
        "threshold": repr(float(data.threshold)),
        "build": json.dumps(data.info, default=str),
    }
    return pa.table(
        {
            "id": data.ids,
            "content": data.contents,
            "metadata": data.metadata,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors, pa.float32()), data.dimension),
            "neighbors": pa.LargeListArray.from_arrays(offsets, pa.array(adj.indices, pa.int32())),
            "weights": pa.LargeListArray.from_arrays(offsets, pa.array(adj.weights, pa.float32())),
        }
    ).replace_schema_metadata(schema_meta)


def _write(table: pa.Table, sink: Any) -> None:
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)


def serialize(data: GraphData) -> bytes:
    sink = pa.BufferOutputStream()
    _write(to_arrow(data), sink)
    return sink.getvalue().to_pybytes()


def save(data: GraphData, path: str | os.PathLike[str]) -> int:
    """Write atomically (readers see the old snapshot or the new one); returns the file size."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink:
            _write(to_arrow(data), sink)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path.stat().st_size


# A local path is memory-mapped; an open random-access file (a store's, local or S3) is read in place.
Source = bytes | bytearray | memoryview | pa.Buffer | pa.NativeFile | str | os.PathLike


def _open(source: Source) -> pa.ipc.RecordBatchFileReader:
    try:
        if isinstance(source, bytes | bytearray | memoryview | pa.Buffer):
            return pa.ipc.open_file(pa.BufferReader(pa.py_buffer(source)))
        if isinstance(source, pa.NativeFile):
            return pa.ipc.open_file(source)
        return pa.ipc.open_file(pa.memory_map(str(source), "r"))
    except FileNotFoundError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise SnapshotError(f"not a chunk graph snapshot (expected an Arrow IPC file): {exc}") from exc


def _header(schema: pa.Schema) -> dict[str, str]:
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    if meta.get("format") != FORMAT_NAME:
        raise SnapshotError(
            f"not a chunk graph snapshot: format is {meta.get('format')!r}, expected {FORMAT_NAME!r}"
        )
    version = meta.get("format_version")
    if version != str(FORMAT_VERSION):
        raise SnapshotError(
            f"unsupported chunk graph snapshot version {version!r}: this build reads version "
            f"{FORMAT_VERSION}; rebuild the snapshot (materialize the chunk_graph asset)"
        )
    return meta


def read_info(source: Source) -> dict[str, Any]:
    """The header of a snapshot (version-checked) without reading its columns."""
    meta = _header(_open(source).schema)
    return {
        "format_version": int(meta["format_version"]),
        "dimension": int(meta["dimension"]),
        "threshold": float(meta["threshold"]),
        "build": json.loads(meta.get("build", "{}")),
    }


def _offsets_and_values(column: pa.ChunkedArray, name: str) -> tuple[np.ndarray, np.ndarray]:
    array = column.combine_chunks()
    if array.null_count:
        raise SnapshotError(f"snapshot column {name!r} has {array.null_count} null rows")
    offsets = array.offsets.to_numpy().astype(np.int64)
    values = array.values.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]]
    return offsets - offsets[0], values


def deserialize(source: Source, dimension: int | None = None) -> GraphData:
    """Load and validate a snapshot; ``dimension``, when given, is the dimension the caller needs."""
    reader = _open(source)
    meta = _header(reader.schema)
    missing = [c for c in _COLUMNS if c not in reader.schema.names]
    if missing:
        raise SnapshotError(f"chunk graph snapshot lacks columns {missing}")
    table = reader.read_all()
    n = table.num_rows
    declared = int(meta["dimension"])
    vtype = table.schema.field("vector").type
    if not pa.types.is_fixed_size_list(vtype) or vtype.list_size != declared:
        width = getattr(vtype, "list_size", vtype)
        raise SnapshotError(
            f"chunk graph snapshot dimension mismatch: header says {declared}, vectors have {width} values"
        )
    if dimension is not None and declared != dimension:
        raise SnapshotError(
            f"chunk graph snapshot has dimension {declared} but {dimension} is expected "
            "(was the embedding model changed? rebuild the graph)"
        )
    vec_array = table.column("vector").combine_chunks()
    if vec_array.null_count:
        raise SnapshotError(f"chunk graph snapshot has {vec_array.null_count} nodes without a vector")
    vectors = vec_array.flatten().to_numpy(zero_copy_only=False).reshape(n, declared)
    indptr, indices = _offsets_and_values(table.column("neighbors"), "neighbors")
    w_offsets, weights = _offsets_and_values(table.column("weights"), "weights")
    if not np.array_equal(indptr, w_offsets):
        raise SnapshotError("chunk graph snapshot: 'weights' and 'neighbors' lists differ in length")
    if len(indices) and (indices.min() < 0 or indices.max() >= n):
        bad = int(indices[(indices < 0) | (indices >= n)][0])
        raise SnapshotError(f"Edge references unknown node: index {bad} (the snapshot has {n} nodes)")
    if len(weights) and not (np.isfinite(weights).all() and (weights > 0).all()):
        raise SnapshotError("chunk graph snapshot has edge weights that are not finite positive numbers")
    return GraphData(
        ids=table.column("id").combine_chunks(),
        contents=table.column("content").combine_chunks(),
        metadata=table.column("metadata").combine_chunks(),
        vectors=vectors,
        adjacency=Adjacency(indptr, indices.astype(np.int32, copy=False), weights.astype(np.float32)),
        dimension=declared,
        threshold=float(meta["threshold"]),
        info=json.loads(meta.get("build", "{}")),
    )


# ---- Mastra's JSON snapshot ({version: 1, dimension, threshold, nodes, edges}) --------------------


def to_mastra_json(data: GraphData) -> dict[str, Any]:
    """Mastra's ``GraphRAGSnapshot``: every node with its embedding, every edge in both directions."""
    ids = data.ids.to_pylist()
    adj = data.adjacency
    sources = np.repeat(np.arange(adj.n), np.diff(adj.indptr))
    return {
        "version": MASTRA_SNAPSHOT_VERSION,
        "dimension": data.dimension,
        "threshold": data.threshold,
        "nodes": [
            {"id": i, "content": c, "embedding": v, "metadata": json.loads(m)}
            for i, c, v, m in zip(
                ids,
                data.contents.to_pylist(),
                data.vectors.astype(np.float64).tolist(),
                data.metadata.to_pylist(),
                strict=True,
            )
        ],
        "edges": [
            {"source": ids[s], "target": ids[t], "weight": w, "type": "semantic"}
            for s, t, w in zip(
                sources.tolist(), adj.indices.tolist(), adj.weights.astype(np.float64).tolist(), strict=True
            )
        ],
    }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def from_mastra_json(snapshot: Mapping[str, Any]) -> GraphData:
    """Load Mastra's snapshot with the checks of ``GraphRAG.deserialize`` plus weight checks."""
    if not isinstance(snapshot, Mapping):
        raise SnapshotError(f"a GraphRAG snapshot must be a JSON object, got {type(snapshot).__name__}")
    version = snapshot.get("version")
    if version != MASTRA_SNAPSHOT_VERSION or isinstance(version, bool):
        raise SnapshotError(f"Unsupported GraphRAG snapshot version: {version}")
    dimension = snapshot.get("dimension")
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
        raise SnapshotError(f"GraphRAG snapshot dimension must be a positive integer, got {dimension!r}")
    threshold = snapshot.get("threshold")
    if not _number(threshold):
        raise SnapshotError(f"GraphRAG snapshot threshold must be a number, got {threshold!r}")
    nodes, edges = snapshot.get("nodes"), snapshot.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        raise SnapshotError("GraphRAG snapshot needs 'nodes' and 'edges' arrays")
    index: dict[str, int] = {}
    vectors = np.zeros((len(nodes), dimension), dtype=np.float32)
    contents, metadata = [], []
    for i, node in enumerate(nodes):
        node_id = node.get("id") if isinstance(node, Mapping) else None
        if not isinstance(node_id, str):
            raise SnapshotError(f"GraphRAG snapshot node #{i} has no string 'id'")
        if node_id in index:
            raise SnapshotError(f"GraphRAG snapshot has node id {node_id!r} twice")
        embedding = node.get("embedding")
        if not isinstance(embedding, list):
            raise SnapshotError(f"Node {node_id} must have an embedding")
        if len(embedding) != dimension:
            raise SnapshotError(
                f"Node {node_id}: embedding has {len(embedding)} values, snapshot dimension is {dimension}"
            )
        if not all(_number(x) for x in embedding):
            raise SnapshotError(f"Node {node_id}: embedding values must be finite numbers")
        index[node_id] = i
        vectors[i] = embedding
        contents.append(str(node.get("content", "")))
        meta = node.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise SnapshotError(f"Node {node_id}: metadata must be an object")
        metadata.append(json.dumps(meta, ensure_ascii=False))
    src = np.zeros(len(edges), dtype=np.int64)
    dst = np.zeros(len(edges), dtype=np.int64)
    weights = np.zeros(len(edges), dtype=np.float64)
    for k, edge in enumerate(edges):
        if not isinstance(edge, Mapping):
            raise SnapshotError(f"GraphRAG snapshot edge #{k} is not an object")
        for end, out in (("source", src), ("target", dst)):
            ref = edge.get(end)
            if not isinstance(ref, str) or ref not in index:
                raise SnapshotError(f"Edge references unknown node: {ref}")
            out[k] = index[ref]
        weight = edge.get("weight")
        if not _number(weight) or weight <= 0:
            raise SnapshotError(
                f"Edge {edge.get('source')} -> {edge.get('target')}: weight {weight!r} must be > 0"
            )
        weights[k] = weight
    # Mastra's edge list already holds both directions: keep it as directed.
    adjacency = Adjacency.from_pairs(len(nodes), src, dst, weights, symmetric=False)
    return GraphData(
        ids=pa.array(list(index), pa.string()),
        contents=pa.array(contents, pa.large_string()),
        metadata=pa.array(metadata, pa.string()),
        vectors=vectors,
        adjacency=adjacency,
        dimension=dimension,
        threshold=float(threshold),
        info={"mode": "imported", "source": "mastra-json", "nodes": len(nodes), "directed_edges": len(edges)},
    )
