"""LLM-bound extraction on a dask.distributed cluster of 1, 2 and 4 workers; prints JSON.

    .venv/bin/python bench/bench_scale_out.py [--docs 120] [--shards 4] [--latency 0.2] [--concurrency 2]
                                              [--workers 1,2,4]

One namespace of `--docs` one-unit documents is prepared once (documents, text units). Then, per
worker count, a fresh LLM cache (so every call is paid) and a fresh `LocalDaskCluster`, and the
`index_shards` runs of every shard are launched at once as `pipeline index` does, extraction only
(`extracted_graph_shard`). The model is tests/support/graph_model.py's scripted one behind FaultProxy
with `--latency` seconds per call; each worker makes `--concurrency` calls at a time.

Reported per worker count: wall time of the shard runs (spawn, Dagster run set-up and the steps), the
longest extraction step, the LLM calls, the ideal `calls * latency / (concurrency * workers)` and the
speed-up against one worker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NAMESPACE = "scale"


def _write_corpus(folder: Path, n: int) -> None:
    people = "Ada Ben Cora Dan Eva Finn Gia Hal Ivy Jon Kai Lea Max Nia Oto Pia".split()
    for i in range(n):
        a, b = people[i % 16], people[(i + 5) % 16]
        text = f"{a} Abbot met {b} Brandt for meeting {i}. Later {b} Brandt wrote to {a} Abbot about it.\n"
        (folder / f"doc{i:04d}.txt").write_text(text, encoding="utf-8")


def _run_shard(key: str) -> dict:
    """One shard's extraction run, in its own process, as `pipeline index` launches it."""
    from assets.distributed import execute_shard

    summary = execute_shard(key, assets=("extracted_graph_shard",))
    meta = next((s.metadata for s in summary.steps if s.asset == "extracted_graph_shard"), {})
    return {"success": summary.success, "step_s": meta.get("duration_s"), "llm_calls": meta.get("llm_calls")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_out_"))
    (tmp / "home").mkdir()
    (tmp / "home" / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    folder = tmp / "input"
    folder.mkdir()
    _write_corpus(folder, args.docs)
    from tests.support.fault_proxy import FaultProxy
    from tests.support.graph_model import ScriptedGraphModel

    model = ScriptedGraphModel()
    proxy = FaultProxy(None, responder=model, latency_s=args.latency).start()
    os.environ.update(
        {
            "DAGSTER_HOME": str(tmp / "home"),
            "PIPELINE_STORAGE_ROOT": str(tmp / "storage"),
            "PIPELINE_SHARDS": str(args.shards),
            "PIPELINE_LLM_PROVIDER": "openai",
            "PIPELINE_LLM_BASE_URL": proxy.base_url,
            "PIPELINE_LLM_MODEL": "scripted-graph",
            "PIPELINE_LLM_JSON_MODE": "json_object",
            "PIPELINE_LLM_API_KEY_ENV": "BENCH_KEY",
            "BENCH_KEY": "bench",
            "PIPELINE_LLM_CONCURRENCY": str(args.concurrency),
            "PIPELINE_EXTRACTION_MAX_GLEANINGS": "0",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    from dagster import DagsterInstance, MultiPartitionKey

    from assets.definitions import defs
    from assets.launch import add_namespace
    from assets.runs import documents_run_config
    from deploy.local_cluster import LocalDaskCluster

    with DagsterInstance.get() as instance:
        add_namespace(instance, NAMESPACE)
        prepared = defs.resolve_job_def("index_prepare").execute_in_process(
            partition_key=NAMESPACE, instance=instance, run_config=documents_run_config(str(folder))
        )
        assert prepared.success
    keys = [str(MultiPartitionKey({"namespace": NAMESPACE, "shard": str(k)})) for k in range(args.shards)]

    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        os.environ["PIPELINE_CACHE_DIR"] = str(tmp / f"cache-{workers}")  # cold: every call is paid
        before = model.snapshot()["extract_graph"]
        with LocalDaskCluster(n_workers=workers, log_dir=tmp / f"logs-{workers}") as cluster:
            os.environ["PIPELINE_DASK_SCHEDULER"] = cluster.address
            started = time.monotonic()
            with ProcessPoolExecutor(max_workers=len(keys), mp_context=get_context("spawn")) as pool:
                shards = list(pool.map(_run_shard, keys))
            wall = time.monotonic() - started
        calls = model.snapshot()["extract_graph"] - before
        ideal = calls * args.latency / (args.concurrency * workers)
        rows.append(
            {
                "workers": workers,
                "all_runs_succeeded": all(s["success"] for s in shards),
                "llm_calls": calls,
                "wall_s": round(wall, 2),
                "longest_step_s": max(s["step_s"] or 0 for s in shards),
                "ideal_s": round(ideal, 2),
                "wall_over_ideal": round(wall / ideal, 2) if ideal else None,
            }
        )
    proxy.stop()
    base = rows[0]["wall_s"]
    for row in rows:
        row["speedup_vs_1_worker"] = round(base / row["wall_s"], 2)
        row["ideal_speedup"] = row["workers"] / rows[0]["workers"]
    print(
        json.dumps(
            {
                "docs": args.docs,
                "shards": args.shards,
                "latency_s": args.latency,
                "llm_concurrency_per_worker": args.concurrency,
                "runs": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
