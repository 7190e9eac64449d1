"""Chunk graph at n = 1k / 5k / 20k / 100k clustered 384-d unit vectors; prints JSON.

    .venv/bin/python bench/bench_chunk_graph.py [--sizes 1000 5000 20000 100000] [--mode auto|exact|approximate]

Data: clusters of 50 unit vectors whose intra-cluster cosine straddles 0.7 (Mastra's benchmark shape:
~23 neighbours per node). A build of 64 nodes runs first, so that what a process pays once (pyarrow
imports pandas on its first array from a list: ~0.2 s, `first_use_s`) is not counted as build time;
Mastra's figures likewise exclude loading its module. Up to 5,000 nodes the edges are checked against
Mastra's rule computed naively in float64 (every pair, cosine > threshold): `edges_identical`.
Each size runs in its own process so its peak RSS is its own. Per size:
build time and mode, edges, 100 queries (top-10, 100 steps, restart 0.15; one warm-up first) p50/p95,
10 filtered and 10 PPR queries, snapshot bytes, load time. Above 50,000 nodes `auto` builds the graph
approximately (partitioned, see `pipeline.chunk_graph.edges`); its `edge_recall` against the exact
edges is reported. Mastra's figures (its GraphRAG class,
same data shape, same machine; ../shared/reference/seed-systems-notes.md B5) are printed beside ours.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.chunk_graph import ChunkGraph  # noqa: E402
from pipeline.chunk_graph.edges import exact_edges  # noqa: E402

DIM, CLUSTER = 384, 50

# Mastra GraphRAG 2.6.4, clustered (50/cluster), dim 384: n -> figures (seed-systems-notes.md B5).
MASTRA = {
    1000: {"build_s": 0.243, "directed_edges": 24_600, "query_mean_ms": 162, "query_p50_ms": 156,
           "query_p95_ms": 205, "snapshot_mb": 10.0, "load_s": 0.069, "peak_rss_mb": 192},
    2000: {"build_s": 0.962, "directed_edges": 49_030, "query_mean_ms": 188, "query_p50_ms": 181,
           "query_p95_ms": 223, "snapshot_mb": 20.1, "load_s": 0.225, "peak_rss_mb": 208},
    5000: {"build_s": 5.917, "directed_edges": 114_526, "query_mean_ms": 522, "query_p50_ms": 511,
           "query_p95_ms": 623, "snapshot_mb": 49.7, "load_s": 0.377, "peak_rss_mb": 332},
}  # fmt: skip


def clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((-(-n // CLUSTER), DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    noise = rng.standard_normal((n, DIM)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    spread = np.sqrt(rng.uniform(0.2, 0.7, n)).astype(np.float32)
    x = centers[np.arange(n) // CLUSTER] + spread[:, None] * noise
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def reference_edges(x: np.ndarray, threshold: float) -> set[tuple[int, int]]:
    """Mastra's rule, naively: every pair i < j whose float64 cosine is > threshold."""
    v = x.astype(np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    out: set[tuple[int, int]] = set()
    for i0 in range(0, len(v), 1000):
        sims = v[i0 : i0 + 1000] @ v.T
        r, c = np.nonzero(sims > threshold)
        out.update((int(a) + i0, int(b)) for a, b in zip(r, c, strict=True) if a + i0 < b)
    return out


def graph_edges(graph: ChunkGraph) -> set[tuple[int, int]]:
    adj = graph._data.adjacency  # noqa: SLF001 - the bench reads the CSR it checks
    rows = np.repeat(np.arange(adj.n), np.diff(adj.indptr))
    return {(int(a), int(b)) for a, b in zip(rows, adj.indices, strict=True) if a < b}


def _ms(samples: list[float]) -> dict[str, float]:
    a = np.asarray(samples) * 1000
    return {"mean": round(float(a.mean()), 3), "p50": round(float(np.percentile(a, 50)), 3),
            "p95": round(float(np.percentile(a, 95)), 3), "max": round(float(a.max()), 3)}  # fmt: skip


def run_one(n: int, mode: str, queries: int) -> dict:
    x = clustered(n)
    ids = [f"c{i}" for i in range(n)]
    contents = [f"chunk {i} of cluster {i // CLUSTER}" for i in range(n)]
    metadata = [{"cluster": i // CLUSTER, "doc": f"d{i // 1000}"} for i in range(n)]
    out: dict = {"n": n}

    t = time.perf_counter()
    ChunkGraph.build(ids[:64], contents[:64], metadata[:64], x[:64], threshold=0.7, mode=mode)
    out["first_use_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    graph = ChunkGraph.build(ids, contents, metadata, x, threshold=0.7, mode=mode)
    out["build_s"] = round(time.perf_counter() - t, 4)
    if n <= 5000:
        out["edges_identical"] = reference_edges(x, 0.7) == graph_edges(graph)
    out["mode"] = graph.build_info["mode"]
    if out["mode"] == "approximate":  # share of the exact edges it found (it never adds one)
        exact = exact_edges(x, 0.7)
        found = graph_edges(graph)
        hits = sum((int(a), int(b)) in found for a, b in zip(exact.rows, exact.cols, strict=True))
        out["edge_recall"] = round(hits / max(len(exact.rows), 1), 4)
    out["build_params"] = {
        k: v for k, v in graph.build_info.items() if k in ("block_size", "neighbors", "nprobes", "partitions")
    }
    out["edges"] = graph.num_edges
    out["directed_edges"] = graph.num_directed_edges
    out["avg_degree"] = round(graph.num_directed_edges / n, 2)

    rng = np.random.default_rng(1)
    picks = rng.integers(0, n, queries + 1)
    qs = x[picks] + 0.05 * rng.standard_normal((queries + 1, DIM)).astype(np.float32)
    graph.query(qs[0])  # warm-up (first use builds the cumulative-weight index)
    times = []
    for q in qs[1:]:
        t = time.perf_counter()
        graph.query(q, top_k=10, random_walk_steps=100, restart_prob=0.15, seed=0)
        times.append(time.perf_counter() - t)
    out["query_ms"] = _ms(times)

    filtered = []
    graph.query(qs[0], filter={"doc": "d0"})  # first filter parses every node's metadata once
    for i, q in enumerate(qs[1:11]):
        t = time.perf_counter()
        graph.query(q, filter={"doc": f"d{int(picks[i + 1]) // 1000}"})
        filtered.append(time.perf_counter() - t)
    out["filtered_query_ms"] = _ms(filtered)
    ppr = []
    for q in qs[1:11]:
        t = time.perf_counter()
        graph.query(q, method="ppr")
        ppr.append(time.perf_counter() - t)
    out["ppr_query_ms"] = _ms(ppr)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.arrow"
        t = time.perf_counter()
        out["snapshot_bytes"] = graph.save(path)
        out["save_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        loaded = ChunkGraph.load(path)
        out["load_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        loaded.query(qs[1])
        out["first_query_after_load_ms"] = round((time.perf_counter() - t) * 1000, 3)
    out["snapshot_mb"] = round(out["snapshot_bytes"] / 1e6, 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 100000])
    parser.add_argument("--mode", choices=("auto", "exact", "approximate"), default="auto")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process: one size
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.mode, args.queries)))
        return 0
    rows = []
    for n in args.sizes:
        print(f"n={n} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, __file__, "--one", str(n), "--mode", args.mode, "--queries", str(args.queries)],
            capture_output=True,
            text=True,
        )
        try:
            row = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            row = {"n": n, "error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-2000:]}
        mastra = MASTRA.get(n)
        row["mastra"] = mastra
        if mastra and "build_s" in row:
            row["vs_mastra"] = {
                "build_x": round(mastra["build_s"] / max(row["build_s"], 1e-6), 1),
                "query_p50_x": round(mastra["query_p50_ms"] / max(row["query_ms"]["p50"], 1e-6), 1),
            }
        rows.append(row)
    print(json.dumps({"mode": args.mode, "dim": DIM, "cluster": CLUSTER, "results": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
