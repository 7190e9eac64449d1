"""`make cluster-demo`: the bundled sample indexed on a dask.distributed cluster of two worker processes,
with the Dagster instance and the LLM / embedding caches on PostgreSQL and the storage root on an
S3-compatible server, all started here on 127.0.0.1 and stopped at the end; then a global and a local
question answered from that storage.

    .venv/bin/python deploy/cluster_demo.py [--workers 2] [--shards 4] [--keep DIR]

Offline like `make demo` (rule-based extraction, MiniLM from its wheel). The servers are stand-ins for
real ones: PostgreSQL from the pgserver wheel, S3 from moto's server mode. On real hosts you start
`dask scheduler` / `dask worker` yourself and point the same variables at your PostgreSQL and your
bucket (docs/scale-out.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deploy.local_cluster import LocalDaskCluster, MotoServer, start_postgres  # noqa: E402

NAMESPACE = "demo"
BUCKET = "graphrag-demo"


def _split_into_staves(book: Path, folder: Path) -> int:
    """Shards split a namespace by document, so the one-file sample would land in one shard: the demo
    indexes the book as its front matter and its five staves, six documents."""
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[list[str]] = [[]]
    for line in book.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("STAVE "):
            parts.append([])
        parts[-1].append(line)
    for i, lines in enumerate(parts):
        (folder / f"{i}_{'front_matter' if i == 0 else f'stave_{i}'}.txt").write_text(
            "".join(lines), encoding="utf-8"
        )
    return len(parts)


def _pipeline(env: dict[str, str], *args: str) -> None:
    print(f"\n$ pipeline {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "assets", *args], cwd=ROOT, env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="work folder to keep (default: a temp folder, removed)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="cluster_demo_"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "dagster_home").mkdir(exist_ok=True)
    shutil.copyfile(ROOT / "deploy" / "dagster.cluster.yaml", work / "dagster_home" / "dagster.yaml")

    print(f"work folder: {work}", flush=True)
    pg, urls = start_postgres(work / "pg", ["dagster", "caches"])
    s3 = MotoServer(work / "moto.log", "demo", "demo").start()
    s3.create_bucket(BUCKET)
    endpoint = s3.endpoint_url
    env = {
        **os.environ,
        "DAGSTER_HOME": str(work / "dagster_home"),
        "DAGSTER_PG_URL": urls["dagster"].replace("postgresql://", "postgresql+psycopg2://", 1),
        "PIPELINE_CACHE_URL": urls["caches"],
        "PIPELINE_STORAGE_ROOT": f"s3://{BUCKET}/graphrag",
        "PIPELINE_S3_ENDPOINT_URL": endpoint,
        "PIPELINE_S3_ACCESS_KEY_ID": "demo",
        "PIPELINE_S3_SECRET_ACCESS_KEY": "demo",
        # Every step's stdout/stderr on the same S3 server (deploy/dagster.cluster.yaml's compute logs).
        "DAGSTER_COMPUTE_LOGS_BUCKET": BUCKET,
        "DAGSTER_COMPUTE_LOGS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PIPELINE_SHARDS": str(args.shards),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    try:
        print(
            f"postgres: {work / 'pg'}; s3: {endpoint}/{BUCKET}; starting {args.workers} dask workers",
            flush=True,
        )
        with LocalDaskCluster(n_workers=args.workers, env=env, log_dir=work / "dask") as cluster:
            env["PIPELINE_DASK_SCHEDULER"] = cluster.address
            print(
                f"dask scheduler: {cluster.address}, workers: {sorted(cluster.worker_pids().values())}",
                flush=True,
            )
            started = time.monotonic()
            n = _split_into_staves(ROOT / "samples" / "demo" / "a_christmas_carol.txt", work / "input")
            print(f"{n} documents over {args.shards} shards", flush=True)
            _pipeline(env, "index", "--namespace", NAMESPACE, "--input", str(work / "input"))
            print(f"\nindexed on the cluster in {time.monotonic() - started:.1f}s", flush=True)
        query_env = {k: v for k, v in env.items() if k != "PIPELINE_DASK_SCHEDULER"}
        _pipeline(query_env, "status", "--namespace", NAMESPACE)
        _pipeline(
            query_env, "query", "global", "--namespace", NAMESPACE, "What are the main themes of the story?"
        )
        _pipeline(
            query_env, "query", "local", "--namespace", NAMESPACE, "How is Scrooge related to Bob Cratchit?"
        )
    finally:
        s3.stop()
        pg.cleanup()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
