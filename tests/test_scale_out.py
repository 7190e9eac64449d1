"""Scale-out, end to end: one namespace indexed by `python -m pipeline index` on a dask.distributed
cluster of two worker processes (dagster-dask), with the storage root on an S3-compatible server on
127.0.0.1 (moto), and the Dagster instance and the LLM / embedding caches on PostgreSQL (pgserver).

The LLM is the scripted graph model behind FaultProxy (tests/support/graph_model.py): a paid model
cannot run here, and what is checked is which calls reach the server, not what a model writes.

- The outputs equal those of a local single-process run of the same corpus (SQLite instance, local
  folder, one shard): same tables, same ids, same rows; same text-unit vectors.
- Steps ran in more than one worker process, none in the process that launched the runs.
- A worker killed (SIGKILL) while it extracts a shard: the dask scheduler re-runs the step on a worker,
  the run succeeds, and no extraction call answered and cached before the kill reaches the model again.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assets.launch import run_index
from deploy.local_cluster import LocalDaskCluster, with_database
from pipeline import schema
from pipeline.settings import load_settings
from pipeline.store import NamespaceStore
from tests.conftest import REPO_ROOT
from tests.support.env import scoped_env
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_model import ScriptedGraphModel
from tests.support.pg import pg_dsn  # noqa: F401 - session fixture: a throwaway PostgreSQL server

NAMESPACE = "scale"
N_DOCS = 30
SHARDS = 2
LLM_CONCURRENCY = 2
KILL_AFTER_CALLS = 6  # extraction answers seen before the kill: the shards' extraction is under way

PEOPLE = "Ada Ben Cora Dan Eva Finn Gia Hal Ivy Jon Kai Lea Max Nia Oto Pia".split()
PLACES = "Lisbon Oslo Quito Perth Lagos Hanoi Tunis Lima".split()


def _corpus(folder: Path) -> None:
    for i in range(N_DOCS):
        a, b, c = PEOPLE[i % 16], PEOPLE[(i + 3) % 16], PEOPLE[(i + 7) % 16]
        text = (
            f"{a} Abbot met {b} Brandt in {PLACES[i % 8]} for meeting {i}. "
            f"Later {c} Cole wrote to {a} Abbot about meeting {i} and the {PLACES[(i + 1) % 8]} office.\n"
        )
        (folder / f"doc{i:02d}.txt").write_text(text, encoding="utf-8")


def _llm_env(base_url: str) -> dict[str, str]:
    return {
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": base_url,
        "PIPELINE_LLM_MODEL": "scripted-graph",
        "PIPELINE_LLM_JSON_MODE": "json_object",
        "PIPELINE_LLM_API_KEY_ENV": "SCALE_TEST_KEY",
        "SCALE_TEST_KEY": "test-key",
        "PIPELINE_LLM_CONCURRENCY": str(LLM_CONCURRENCY),
        "PIPELINE_LLM_MAX_RETRIES": "0",
        "PIPELINE_EXTRACTION_MAX_GLEANINGS": "0",  # one extraction call per text unit
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def _create_databases(dsn: str, names: list[str]) -> dict[str, str]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    return {name: with_database(dsn, name) for name in names}


def _tables(store: NamespaceStore) -> dict[str, object]:
    names = [t.name for t in store.tables() if t.kind == "parquet"]
    return {name: store.read_table(name) for name in names}


def _vectors(store: NamespaceStore) -> tuple[list[str], np.ndarray]:
    table = store.open_lance_table(schema.LANCE_TEXT_UNITS).to_arrow().sort_by("id")
    return table.column("id").to_pylist(), np.array(table.column("vector").to_pylist(), dtype=np.float32)


def _index_on_cluster(
    env: dict[str, str], folder: Path, model: ScriptedGraphModel, skip_texts: int, logs: Path
) -> dict:
    """`python -m pipeline index` against two dask workers; SIGKILL the worker that is extracting a
    shard once KILL_AFTER_CALLS extraction answers have gone out."""
    out: dict = {}
    with LocalDaskCluster(n_workers=2, env=env, log_dir=logs) as cluster:
        env = {**env, "PIPELINE_DASK_SCHEDULER": cluster.address}
        out["worker_pids_at_start"] = set(cluster.worker_pids().values())
        cmd = [sys.executable, "-m", "pipeline", "index", "--namespace", NAMESPACE, "--input", str(folder)]
        with open(logs / "index.log", "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=REPO_ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT
            )
            out["launcher_pid"] = proc.pid
            deadline = time.monotonic() + 600
            while proc.poll() is None and time.monotonic() < deadline:
                if "killed" not in out and len(model.extracted_texts) - skip_texts >= KILL_AFTER_CALLS:
                    busy = cluster.busy_workers()
                    extracting = [
                        a for a, keys in busy.items() if any("extracted_graph_shard" in k for k in keys)
                    ]
                    if extracting:
                        pid = cluster.worker_pids()[extracting[0]]
                        os.kill(pid, signal.SIGKILL)
                        out["killed"] = {"pid": pid, "task": busy[extracting[0]]}
                time.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
            out["returncode"] = proc.wait(timeout=60)
        out["log"] = (logs / "index.log").read_text(errors="replace")[-4000:]
        out["worker_pids_at_end"] = set(cluster.worker_pids().values())
    return out


@pytest.fixture(scope="module")
def scale_out(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    dagster_instance,
    s3_bucket,
    pg_dsn,  # noqa: F811
) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("scale_input")
    _corpus(folder)
    out: dict = {}

    # One model server for both runs: the report's `model` column names the endpoint.
    model = ScriptedGraphModel()
    proxy = FaultProxy(None, responder=model, latency_s=0.15).start()
    request.addfinalizer(proxy.stop)

    # 1. The reference: one process, local folder, SQLite instance and caches, one shard.
    local_root = tmp_path_factory.mktemp("scale_local")
    with scoped_env(PIPELINE_STORAGE_ROOT=str(local_root), **_llm_env(proxy.base_url)):
        out["local"] = run_index(NAMESPACE, input_dir=str(folder), instance=dagster_instance)
        local_store = NamespaceStore(local_root, NAMESPACE)
        out["local_tables"] = _tables(local_store)
        out["local_vectors"] = _vectors(local_store)
    out["local_calls"] = model.snapshot()
    n_local_texts = len(model.extracted_texts)

    # 2. The cluster: S3 storage, PostgreSQL instance and caches, two shards, two dask workers.
    urls = _create_databases(pg_dsn, ["scale_dagster", "scale_caches"])
    home = tmp_path_factory.mktemp("scale_dagster_home")
    shutil.copyfile(REPO_ROOT / "deploy" / "dagster.cluster.yaml", home / "dagster.yaml")
    env = {
        **s3_bucket.env("scale-out"),
        **_llm_env(proxy.base_url),
        "PIPELINE_CACHE_URL": urls["scale_caches"],
        "PIPELINE_SHARDS": str(SHARDS),
        "DAGSTER_HOME": str(home),
        # SQLAlchemy 2.1 picks psycopg 3 for a bare postgresql:// URL; dagster-postgres needs psycopg2
        "DAGSTER_PG_URL": urls["scale_dagster"].replace("postgresql://", "postgresql+psycopg2://", 1),
    }
    out.update(_index_on_cluster(env, folder, model, n_local_texts, tmp_path_factory.mktemp("scale_logs")))
    out["calls"] = model.snapshot() - out["local_calls"]
    out["texts"] = model.extracted_texts[n_local_texts:]
    out["n_units"] = out["local_tables"][schema.TEXT_UNITS].num_rows
    with scoped_env(**env):
        store = NamespaceStore.from_settings(load_settings(), NAMESPACE)
        out["cluster_tables"] = _tables(store)
        out["cluster_vectors"] = _vectors(store)
        out["step_pids"] = _step_pids(home)
        out["shard_metadata"] = _materializations(home, "extracted_graph_shard")
    yield out


def _step_pids(home: Path) -> dict[str, list[int]]:
    """job.step -> pid of every STEP_START in the PostgreSQL instance's event log."""
    from dagster import DagsterEventType, DagsterInstance

    pids: dict[str, list[int]] = {}
    with DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START):
                event = entry.get_dagster_event()
                pids.setdefault(f"{run.job_name}.{event.step_key}", []).append(event.pid)
    return pids


def _materializations(home: Path, asset: str) -> list[dict]:
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(AssetKey(asset), limit=100).records
        return [
            {k: getattr(v, "value", v) for k, v in r.asset_materialization.metadata.items()} for r in records
        ]


def test_cluster_run_succeeds_on_s3_and_postgres(scale_out):
    assert scale_out["local"].success, scale_out["local"].failures
    assert scale_out["returncode"] == 0, scale_out["log"]


def test_cluster_outputs_equal_the_local_single_process_run_with_the_scripted_model(scale_out):
    local, cluster = scale_out["local_tables"], scale_out["cluster_tables"]
    assert sorted(cluster) == sorted(local)
    assert schema.COMMUNITY_REPORTS in local and schema.ENTITIES in local
    for name, table in local.items():
        assert cluster[name].num_rows == table.num_rows, name
        assert cluster[name].equals(table), f"{name} differs between the cluster and the local run"
    local_ids, local_vectors = scale_out["local_vectors"]
    cluster_ids, cluster_vectors = scale_out["cluster_vectors"]
    assert cluster_ids == local_ids
    np.testing.assert_allclose(cluster_vectors, local_vectors, atol=1e-5)


def test_steps_ran_in_more_than_one_worker_process(scale_out):
    pids = scale_out["step_pids"]
    shard_steps = [k for k in pids if k.startswith("index_shards.")]
    assert {"index_shards.extracted_graph_shard", "index_shards.text_unit_embeddings_shard"} <= set(
        shard_steps
    )
    every_pid = {p for ps in pids.values() for p in ps}
    assert len(every_pid) >= 2
    assert scale_out["launcher_pid"] not in every_pid
    workers = (
        scale_out["worker_pids_at_start"] | scale_out["worker_pids_at_end"] | {scale_out["killed"]["pid"]}
    )
    assert every_pid <= workers, "every step ran in a dask worker process"


def test_killed_worker_is_survived_without_paying_a_completed_scripted_model_call_twice(scale_out):
    killed = scale_out.get("killed")
    assert killed is not None, "the kill must land while a worker extracts a shard"
    assert killed["pid"] not in scale_out["worker_pids_at_end"]  # the nanny started a new process
    # the step the dead worker held started again, on a live worker
    assert len(scale_out["step_pids"]["index_shards.extracted_graph_shard"]) == SHARDS + 1
    counts = Counter(scale_out["texts"])
    repeated = {t for t, n in counts.items() if n > 1}
    # asked again: only the calls the dead worker had in flight (answered, maybe, but not yet cached)
    assert len(repeated) <= LLM_CONCURRENCY
    assert scale_out["calls"]["extract_graph"] == scale_out["n_units"] + sum(counts[t] - 1 for t in repeated)
    assert scale_out["calls"]["extract_graph"] - len(repeated) == scale_out["local_calls"]["extract_graph"]
    # the re-run of the dead worker's shard found the calls it had finished in the PostgreSQL cache
    shards = scale_out["shard_metadata"]
    assert len(shards) == SHARDS
    assert sum(m["llm_cache_hits"] for m in shards) >= 1
    assert (
        sum(m["llm_calls"] for m in shards) + sum(m["llm_cache_hits"] for m in shards) == scale_out["n_units"]
    )
