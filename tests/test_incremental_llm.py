"""The LLM path of a re-index, counted at the server: FaultProxy with a scripted model in front of the
real LLM client, a real Dagster instance, real Parquet / LanceDB / MiniLM.

- Changing 1 of 50 documents costs exactly its text unit's extraction call plus one call per report
  whose fingerprint changed: nothing else reaches the server.
- kill -9 of `pipeline index` during extraction, then a re-run: every call answered before
  the kill comes from the LLM cache, and the finished index has no duplicate rows. The kill is
  triggered by an event, not a clock: the proxy holds the 12th extraction request (and the next)
  unanswered, the test kills the process while they are held, then lets the proxy answer them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from dagster import DagsterRunStatus, RunsFilter

from assets.launch import run_index
from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.runtime import open_llm_cache
from pipeline.settings import Settings
from tests.conftest import REPO_ROOT
from tests.support.env import scoped_env
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_model import ScriptedGraphModel, extraction_text
from tests.support.meeting_corpus import meeting_corpus, scripted_llm_env


def _meta(result, asset: str) -> dict:
    return next(s.metadata for s in result.steps if s.asset == asset)


@pytest.fixture(scope="module")
def one_of_fifty(tmp_path_factory: pytest.TempPathFactory, dagster_instance) -> Iterator[dict]:
    storage = tmp_path_factory.mktemp("fifty_storage")
    folder = tmp_path_factory.mktemp("fifty_input")
    docs = meeting_corpus(50)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = NamespaceStore(storage, "fifty")
    model = ScriptedGraphModel()
    out: dict = {"store": store, "model": model}
    with FaultProxy(None, responder=model) as proxy, scoped_env(**scripted_llm_env(storage, proxy.base_url)):
        out["first"] = run_index("fifty", input_dir=str(folder), instance=dagster_instance)
        out["calls_first"] = model.snapshot()
        out["fingerprints_first"] = set(
            store.read_table(schema.COMMUNITY_REPORTS).column("fingerprint").to_pylist()
        )
        out["units_first"] = set(store.read_table(schema.TEXT_UNITS).column("id").to_pylist())
        edited = docs["doc17.txt"].rstrip("\n") + " Zed Quorra joined them.\n"
        (folder / "doc17.txt").write_text(edited, encoding="utf-8")
        texts_before = len(model.extracted_texts)
        out["second"] = run_index("fifty", input_dir=str(folder), instance=dagster_instance)
        out["calls_second"] = model.snapshot() - out["calls_first"]
        out["texts_second"] = model.extracted_texts[texts_before:]
        out["received_second"] = proxy.received
    out["fingerprints_second"] = store.read_table(schema.COMMUNITY_REPORTS).column("fingerprint").to_pylist()
    out["units_second"] = set(store.read_table(schema.TEXT_UNITS).column("id").to_pylist())
    yield out


def test_first_index_pays_once_per_text_unit_and_report(one_of_fifty):
    first = one_of_fifty["first"]
    assert first.success, first.failures
    calls = one_of_fifty["calls_first"]
    assert calls["extract_graph"] == 50 == _meta(first, "extracted_graph")["llm_calls"]
    reports = _meta(first, "community_reports")
    assert calls["community_report"] == reports["reports"] == reports["llm_calls"] > 1
    assert calls["summarize_descriptions"] == 0 and calls["other"] == 0


def test_changing_1_of_50_documents_pays_only_for_its_unit_and_changed_reports(one_of_fifty):
    second = one_of_fifty["second"]
    assert second.success, second.failures
    new_units = one_of_fifty["units_second"] - one_of_fifty["units_first"]
    changed_reports = [
        f for f in one_of_fifty["fingerprints_second"] if f not in one_of_fifty["fingerprints_first"]
    ]
    calls = one_of_fifty["calls_second"]
    assert len(new_units) == 1
    assert calls["extract_graph"] == 1 and "Zed Quorra" in one_of_fifty["texts_second"][0]
    assert calls["community_report"] == len(changed_reports) > 0
    assert sum(calls.values()) == len(new_units) + len(changed_reports)  # nothing more reached the server
    x = _meta(second, "extracted_graph")
    assert (x["llm_calls"], x["llm_cache_hits"]) == (1, 49)
    r = _meta(second, "community_reports")
    assert r["generated"] == r["llm_calls"] == len(changed_reports)
    assert r["reused"] == r["reports"] - len(changed_reports) > 0
    assert _meta(second, "text_unit_embeddings")["embeddings_computed"] == 1


N_CRASH_DOCS = 40
CRASH_CONCURRENCY = 2
KILL_AT_REQUEST = 12  # the extraction request the proxy holds first: the kill lands mid-extraction
WAIT_S = 300.0  # generous: it only bounds how long a broken run could make the fixture hang


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory, dagster_instance) -> Iterator[dict]:
    storage = tmp_path_factory.mktemp("crash_storage")
    folder = tmp_path_factory.mktemp("crash_input")
    log_path = tmp_path_factory.mktemp("crash_logs") / "index.log"
    for name, text in meeting_corpus(N_CRASH_DOCS).items():
        (folder / name).write_text(text, encoding="utf-8")
    model = ScriptedGraphModel()
    out: dict = {"store": NamespaceStore(storage, "crash"), "model": model}
    with FaultProxy(None, responder=model) as proxy:
        # Hold the 12th extraction request and every later one. Once CRASH_CONCURRENCY requests are held,
        # each of the process's concurrency slots waits on an unanswered request: every earlier call was
        # answered and stored (a slot is only taken again after its call's answer is in the cache), and
        # nothing else can be on its way. Kill it then, and only then let the proxy answer (to no one).
        hold = proxy.hold(lambda r: extraction_text(r.body) is not None, from_nth=KILL_AT_REQUEST)
        env = {**os.environ, **scripted_llm_env(storage, proxy.base_url, concurrency=CRASH_CONCURRENCY)}
        cmd = [sys.executable, "-m", "assets", "index", "--namespace", "crash", "--input", str(folder)]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            try:
                held = hold.wait_held(CRASH_CONCURRENCY, WAIT_S, alive=lambda: proc.poll() is None)
            except TimeoutError as exc:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise AssertionError(
                    f"the index never held {CRASH_CONCURRENCY} requests: {exc}\n{tail}"
                ) from exc
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=WAIT_S)
        finally:
            hold.release()  # the kill is done: the held requests may be answered now
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        hold.wait_answered(WAIT_S)
        proxy.wait_idle(WAIT_S)
        out["returncode"] = proc.returncode
        out["held_texts"] = [extraction_text(r.body) for r in held]
        out["answered_before_kill"] = model.snapshot()["extract_graph"]
        out["texts_before_kill"] = list(model.extracted_texts)
        pipeline_cache = open_llm_cache(Settings(storage_root=str(storage)))
        out["cached_before_resume"] = pipeline_cache.count("extract_graph")
        n_before = len(model.extracted_texts)
        with scoped_env(**scripted_llm_env(storage, proxy.base_url, concurrency=CRASH_CONCURRENCY)):
            out["resume"] = run_index("crash", input_dir=str(folder), instance=dagster_instance)
        out["texts_resume"] = model.extracted_texts[n_before:]
        out["runs"] = dagster_instance.get_runs(filters=RunsFilter(tags={"dagster/partition": "crash"}))
    yield out


def test_kill_during_extraction_then_resume_pays_no_completed_call_again(crash):
    assert crash["returncode"] == -signal.SIGKILL
    answered, cached = crash["answered_before_kill"], crash["cached_before_resume"]
    # every request the process sent was answered, the held ones after the kill
    assert answered == KILL_AT_REQUEST + CRASH_CONCURRENCY - 1 < N_CRASH_DOCS
    assert len(set(crash["texts_before_kill"])) == answered
    # what was answered before the kill was stored; only the held (in-flight) calls were lost
    assert cached == KILL_AT_REQUEST - 1 == answered - CRASH_CONCURRENCY
    resume = crash["resume"]
    assert resume.success, resume.failures
    # the killed process's run was left STARTED; the resume marked it failed instead of waiting on it
    killed = [r for r in crash["runs"] if r.run_id not in resume.run_ids]
    assert [r.status for r in killed] == [DagsterRunStatus.FAILURE]
    x = _meta(resume, "extracted_graph")
    assert len(crash["texts_resume"]) == x["llm_calls"] == N_CRASH_DOCS - cached
    assert x["llm_cache_hits"] == cached
    repeated = set(crash["texts_resume"]) & set(crash["texts_before_kill"])
    assert repeated == set(crash["held_texts"])  # only answers the killed process never stored
    assert len(repeated) == CRASH_CONCURRENCY


def test_no_duplicate_rows_after_resume(crash):
    store: NamespaceStore = crash["store"]
    units = store.read_table(schema.TEXT_UNITS).column("id").to_pylist()
    assert len(units) == len(set(units)) == 40
    for table in (schema.DOCUMENTS, schema.ENTITIES, schema.RELATIONSHIPS, schema.COMMUNITIES):
        ids = store.read_table(table).column("id").to_pylist()
        assert len(ids) == len(set(ids)), table
    extracted = store.read_table(schema.EXTRACTED_GRAPH).column("text_unit_id").to_pylist()
    assert sorted(extracted) == sorted(units)
    lance = store.open_lance_table(schema.LANCE_TEXT_UNITS).to_arrow().column("id").to_pylist()
    assert sorted(lance) == sorted(units)
    assert not list(store.root.glob(".*.tmp"))  # no half-written Parquet left behind
