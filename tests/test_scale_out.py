"""Scale-out, end to end: one namespace indexed by `pipeline index` on a dask.distributed
cluster of two worker processes (dagster-dask), with the storage root on an S3-compatible server on
127.0.0.1 (moto), and the Dagster instance and the LLM / embedding caches on PostgreSQL (pgserver).

The LLM is the scripted graph model behind FaultProxy (tests/support/graph_model.py): a paid model
cannot run here, and what is checked is which calls reach the server, not what a model writes.

- The outputs equal those of a local single-process run of the same corpus (SQLite instance, local
  folder, one shard): same tables, same ids, same rows; same text-unit vectors.
- Steps ran in more than one worker process, none in the process that launched the runs.
- A worker killed (SIGKILL) while it extracts a shard: the dask scheduler re-runs the step on a worker,
  the run succeeds, and no extraction call answered and cached before the kill reaches the model again.
  The kill is triggered by events, never by a clock: the proxy holds the KILL_AT_REQUEST-th extraction
  request of the first shard to send that many, and every later one of that shard. Once LLM_CONCURRENCY
  of them are held, all of the step's concurrency slots wait on unanswered requests, so its step cannot
  finish and every earlier call of it is answered and cached; the test SIGKILLs the worker that sent
  them (found by the requests' TCP connections), waits until it is gone, then lets the proxy answer.
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
from pipeline.core import schema
from pipeline.core.shards import shard_of
from pipeline.io.store import NamespaceStore
from pipeline.settings import load_settings
from tests.conftest import REPO_ROOT
from tests.support.env import scoped_env
from tests.support.fault_proxy import FaultProxy, ProxyRequest, client_pid
from tests.support.graph_model import ScriptedGraphModel, extraction_text
from tests.support.pg import pg_dsn  # noqa: F401 - session fixture: a throwaway PostgreSQL server

NAMESPACE = "scale"
N_DOCS = 30
SHARDS = 2
LLM_CONCURRENCY = 2
# The first extraction request the proxy holds, counted within one shard: the KILL_AT_REQUEST - 1 before
# it are answered and cached when the kill lands (> LLM_CONCURRENCY - 1, so at least one is).
KILL_AT_REQUEST = 4
WAIT_S = 600.0  # generous: it only bounds how long a broken run could make the fixture hang

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
        "PIPELINE_EXTRACTION_PACK_TOKENS": "0",
        "PIPELINE_REPORT_MIN_ENTITIES": "0",  # ... each unit alone (packing: test_extraction_packed)
        # a request the proxy holds must not time out meanwhile, however slow the machine
        "PIPELINE_LLM_TIMEOUT_S": "600",
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


def _wait_gone(pid: int, timeout: float = WAIT_S) -> None:
    """Until the process is dead (a zombie its nanny has not reaped yet counts as dead)."""
    import psutil

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.02)
    raise TimeoutError(f"process {pid} still alive {timeout:.0f}s after SIGKILL")


def _index_on_cluster(
    env: dict[str, str], folder: Path, proxy: FaultProxy, shard_by_text: dict[str, int], logs: Path
) -> dict:
    """`pipeline index` against two dask workers; SIGKILL the worker extracting a shard while the proxy
    holds LLM_CONCURRENCY of that shard's extraction requests unanswered (see the module docstring)."""
    out: dict = {}
    seen: Counter[int] = Counter()
    target: list[int] = []

    def of_the_target_shard(request: ProxyRequest) -> bool:  # called one request at a time, in order
        text = extraction_text(request.body)
        if text is None:
            return False
        shard = shard_by_text[text]  # a KeyError is reported by hold.wait_held, the request not held
        seen[shard] += 1
        if not target and seen[shard] == KILL_AT_REQUEST:
            target.append(shard)
        return bool(target) and shard == target[0]

    with LocalDaskCluster(n_workers=2, env=env, log_dir=logs) as cluster:
        env = {**env, "PIPELINE_DASK_SCHEDULER": cluster.address}
        workers = cluster.worker_pids()  # address -> pid
        out["worker_pids_at_start"] = set(workers.values())
        hold = proxy.hold(of_the_target_shard)
        cmd = [sys.executable, "-m", "assets", "index", "--namespace", NAMESPACE, "--input", str(folder)]
        with open(logs / "index.log", "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=REPO_ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT
            )
        out["launcher_pid"] = proc.pid
        try:
            held = hold.wait_held(LLM_CONCURRENCY, WAIT_S, alive=lambda: proc.poll() is None)
            senders = {client_pid(r, workers.values()) for r in held}
            out["killed"] = {
                "shard": target[0],
                "held_texts": [extraction_text(r.body) for r in held],
                "senders": senders,
            }
            if len(senders) == 1 and None not in senders:
                [pid] = senders
                address = next(a for a, p in workers.items() if p == pid)
                out["killed"]["task"] = cluster.busy_workers().get(address, [])
                os.kill(pid, signal.SIGKILL)
                _wait_gone(pid)
                out["killed"]["pid"] = pid
        except TimeoutError as exc:
            out["hold_error"] = str(exc)
        finally:
            hold.release()  # the kill is done: the held requests may be answered now (to no one)
        try:
            out["returncode"] = proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out["returncode"] = proc.wait()
        hold.wait_answered(WAIT_S)
        proxy.wait_idle(WAIT_S)
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
    proxy = FaultProxy(None, responder=model).start()
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
    # Which shard each text unit belongs to (its document's), to count the requests per shard.
    units = out["local_tables"][schema.TEXT_UNITS]
    shard_by_text = {
        text: shard_of(doc, SHARDS)
        for text, doc in zip(
            units.column("text").to_pylist(), units.column("document_id").to_pylist(), strict=True
        )
    }
    assert set(model.extracted_texts) == set(shard_by_text), "extraction requests name their text units"
    per_shard = Counter(shard_by_text.values())
    assert len(per_shard) == SHARDS and min(per_shard.values()) >= KILL_AT_REQUEST + LLM_CONCURRENCY - 1

    # 2. The cluster: S3 storage, PostgreSQL instance and caches, two shards, two dask workers.
    urls = _create_databases(pg_dsn, ["scale_dagster", "scale_caches"])
    home = tmp_path_factory.mktemp("scale_dagster_home")
    shutil.copyfile(REPO_ROOT / "deploy" / "dagster.cluster.yaml", home / "dagster.yaml")
    env = {
        **s3_bucket.env("scale-out"),
        **s3_bucket.compute_logs_env(),
        **_llm_env(proxy.base_url),
        "PIPELINE_CACHE_URL": urls["scale_caches"],
        "PIPELINE_SHARDS": str(SHARDS),
        "DAGSTER_HOME": str(home),
        # SQLAlchemy 2.1 picks psycopg 3 for a bare postgresql:// URL; dagster-postgres needs psycopg2
        "DAGSTER_PG_URL": urls["scale_dagster"].replace("postgresql://", "postgresql+psycopg2://", 1),
    }
    out.update(_index_on_cluster(env, folder, proxy, shard_by_text, tmp_path_factory.mktemp("scale_logs")))
    # Nothing below can be read from a failed run: say why it failed instead.
    assert out["returncode"] == 0, f"the cluster run failed ({out.get('hold_error')}):\n{out['log']}"
    out["calls"] = model.snapshot() - out["local_calls"]
    out["texts"] = model.extracted_texts[n_local_texts:]
    out["n_units"] = out["local_tables"][schema.TEXT_UNITS].num_rows
    with scoped_env(**env):
        store = NamespaceStore.from_settings(load_settings(), NAMESPACE)
        out["cluster_tables"] = _tables(store)
        out["cluster_vectors"] = _vectors(store)
        out["step_pids"] = _step_pids(home)
        out["shard_metadata"] = _materializations(home, "extracted_graph_shard")
        out["step_logs"] = _step_logs(home)
        out["s3_log_objects"] = _s3_objects(s3_bucket, "dagster-compute-logs/")
    yield out


def _s3_objects(bucket, prefix: str) -> dict[str, str]:  # noqa: ANN001 - tests.support.s3_server.S3Bucket
    """key -> text of every object under `prefix` in the test bucket."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=bucket.endpoint_url,
        aws_access_key_id=bucket.access_key_id,
        aws_secret_access_key=bucket.secret_access_key,
        region_name=bucket.region,
    )
    keys = [
        o["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket.bucket, Prefix=prefix)
        for o in page.get("Contents", [])
    ]
    return {
        k: client.get_object(Bucket=bucket.bucket, Key=k)["Body"].read().decode(errors="replace")
        for k in keys
    }


def _step_logs(home: Path) -> dict[str, dict]:
    """job -> the captured stdout/stderr of its steps, read back through the instance (from S3) by this
    process, which ran none of them, with the pids that wrote them."""
    from dagster import DagsterEventType, DagsterInstance

    out: dict[str, dict] = {}
    with DagsterInstance.from_config(str(home)) as instance:
        manager = instance.compute_log_manager
        for run in instance.get_runs():
            for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.LOGS_CAPTURED):
                event = entry.get_dagster_event()
                data = event.event_specific_data
                log_key = manager.build_log_key_for_run(run.run_id, data.file_key)
                captured = manager.get_log_data(log_key)
                text = (captured.stdout or b"").decode(errors="replace") + (captured.stderr or b"").decode(
                    errors="replace"
                )
                job = out.setdefault(
                    run.job_name, {"text": "", "pids": set(), "steps": set(), "manager": type(manager)}
                )
                job["text"] += text
                job["pids"].add(event.pid)
                job["steps"] |= set(data.step_keys or [])
    return out


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


def test_a_worker_steps_logs_are_readable_through_the_instance_from_s3(scale_out):
    """The shard steps ran on dask workers; their stdout/stderr was uploaded to the S3 bucket and reads
    back here through the instance's compute log manager, as the UI reads it."""
    from dagster_aws.s3.compute_log_manager import S3ComputeLogManager

    shards = scale_out["step_logs"]["index_shards"]
    assert shards["manager"] is S3ComputeLogManager
    assert {"extracted_graph_shard", "text_unit_embeddings_shard"} <= shards["steps"]
    assert scale_out["launcher_pid"] not in shards["pids"]  # captured by the workers, not the launcher
    assert "extracted_graph_shard" in shards["text"] and "STEP_SUCCESS" in shards["text"]
    # and the bytes are in the bucket, where any machine's webserver reads them
    uploaded = "".join(scale_out["s3_log_objects"].values())
    assert "extracted_graph_shard" in uploaded and "STEP_SUCCESS" in uploaded


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
    assert killed is not None, scale_out.get("hold_error")
    assert "pid" in killed, f"the held requests came from one worker process: {killed}"
    # the worker killed was running the extraction step, its last requests still unanswered
    assert any("extracted_graph_shard" in k for k in killed["task"]), killed
    assert killed["pid"] not in scale_out["worker_pids_at_end"]  # the nanny started a new process
    # the step the dead worker held started again, on a live worker; the other shard's step ran once
    assert len(scale_out["step_pids"]["index_shards.extracted_graph_shard"]) == SHARDS + 1
    counts = Counter(scale_out["texts"])
    repeated = {t for t, n in counts.items() if n > 1}
    # asked again: exactly the calls the dead worker had in flight (held unanswered at the kill)
    assert repeated == set(killed["held_texts"]) and len(repeated) == LLM_CONCURRENCY
    assert all(counts[t] == 2 for t in repeated)
    assert scale_out["calls"]["extract_graph"] == scale_out["n_units"] + LLM_CONCURRENCY
    assert scale_out["calls"]["extract_graph"] - len(repeated) == scale_out["local_calls"]["extract_graph"]
    # the re-run of the dead worker's shard found the calls it had finished in the PostgreSQL cache
    shards = scale_out["shard_metadata"]
    assert sorted(m["shard"] for m in shards) == list(range(SHARDS))  # one materialization per shard
    by_shard = {m["shard"]: m for m in shards}
    assert by_shard[killed["shard"]]["llm_cache_hits"] == KILL_AT_REQUEST - 1
    assert sum(m["llm_cache_hits"] for m in shards) == KILL_AT_REQUEST - 1
    assert (
        sum(m["llm_calls"] for m in shards) + sum(m["llm_cache_hits"] for m in shards) == scale_out["n_units"]
    )
