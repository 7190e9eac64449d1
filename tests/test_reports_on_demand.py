"""Reports on first use (issue 62): a deferred community's model report is written once under concurrent
first uses, a failed one is named and nothing is stored, and a cancelled query stores no half report.
A real OpenAI-compatible scripted server on 127.0.0.1 (`UsageProxy`) counts the calls; real Parquet."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pipeline.core import schema, tables
from pipeline.engine.offline import OfflineEngine
from pipeline.index.community_reports import index_community_reports
from pipeline.index.community_reports_on_demand import deferred, write_on_demand
from pipeline.io.store import NamespaceStore
from pipeline.ops.reports.build import EXTRACTIVE
from pipeline.query.common.scope import QueryScope
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.support.cost_model import ModelLikeModel, UsageProxy, scripted_model_env
from tests.support.env import scoped_env
from tests.support.graph_tables import two_group_graph


def asking(store: NamespaceStore, engine: Any, **clocks: Any) -> QueryScope:
    """What a question hands the writer: its scope (store, engine, deadline, cancel)."""
    return QueryScope(store, engine, None, **clocks)


@pytest.fixture
def lazy_index(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """two_group_graph indexed with PIPELINE_REPORTS=on_demand: community 0's model report, 1 and 2
    deferred (extractive)."""
    responder = ModelLikeModel()
    with UsageProxy(responder) as proxy:
        env = {"PIPELINE_STORAGE_ROOT": str(tmp_path), "PIPELINE_REPORTS": "on_demand"}
        with scoped_env(**scripted_model_env(proxy), **env):
            settings = Settings()
            store = NamespaceStore.from_settings(settings, "lazy")
            t = two_group_graph().tables()
            for name in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS, schema.COVARIATES):
                store.write_table(name, t[name])
            index_community_reports(store, settings, make_engine(settings), min_entities=0)
            yield {"store": store, "settings": settings, "proxy": proxy, "responder": responder}


def _methods(store: NamespaceStore) -> dict[int, str]:
    rows = store.read_table(schema.COMMUNITY_REPORTS).to_pylist()
    return {r["community"]: r["method"] for r in rows}


def test_the_index_defers_the_deeper_reports(lazy_index):
    store = lazy_index["store"]
    assert _methods(store) == {0: "llm", 1: EXTRACTIVE, 2: EXTRACTIVE}
    assert lazy_index["proxy"].calls()["community_report"] == 1
    assert deferred(store.read_table(schema.COMMUNITY_REPORTS)) == {1, 2}


def test_eight_concurrent_first_uses_write_the_report_once(lazy_index):
    store, settings, proxy = lazy_index["store"], lazy_index["settings"], lazy_index["proxy"]
    before = proxy.calls()["community_report"]
    start = threading.Barrier(8)

    def query(_: int):
        engine = make_engine(settings)
        start.wait()
        return write_on_demand(asking(store, engine), [1], settings=settings)

    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(query, range(8)))
    assert proxy.calls()["community_report"] - before == 1
    assert sorted(len(r.written) for r in runs) == [0] * 7 + [1]
    assert sum(r.ready == [1] for r in runs) == 7
    assert _methods(store) == {0: "llm", 1: "llm", 2: EXTRACTIVE}
    # Stored and reused: a later query asks nothing.
    later = write_on_demand(asking(store, make_engine(settings)), [1, 0], settings=settings)
    assert later.written == [] and proxy.calls()["community_report"] - before == 1


def test_a_failing_report_is_named_and_nothing_is_stored(lazy_index):
    store, settings = lazy_index["store"], lazy_index["settings"]
    lazy_index["responder"].on_report = lambda request: "this is not a report"
    before = store.read_table(schema.COMMUNITY_REPORTS)
    run = write_on_demand(asking(store, make_engine(settings)), [2], settings=settings)
    assert [f.community for f in run.failures] == [2] and run.written == []
    assert run.failures[0].error_type and run.failures[0].reason
    assert store.read_table(schema.COMMUNITY_REPORTS).equals(before)


def test_a_cancelled_query_stores_no_half_report(lazy_index):
    store, settings = lazy_index["store"], lazy_index["settings"]
    cancel = threading.Event()
    lazy_index["responder"].on_report = lambda request: cancel.set()  # given up while the model writes
    before = store.read_table(schema.COMMUNITY_REPORTS)
    run = write_on_demand(asking(store, make_engine(settings), cancel=cancel), [1, 2], settings=settings)
    assert run.cancelled and run.written == []
    assert store.read_table(schema.COMMUNITY_REPORTS).equals(before)
    # The index's, and the abandoned batch's two (1 and 2 are one level: written in one batch)
    assert lazy_index["proxy"].calls()["community_report"] == 3


def test_the_report_budget_and_deadline_bound_what_a_query_writes(lazy_index):
    store, settings = lazy_index["store"], lazy_index["settings"]
    run = write_on_demand(asking(store, make_engine(settings)), [1, 2], settings=settings, max_reports=1)
    assert run.written == [1] and run.skipped == [2]
    late = write_on_demand(asking(store, make_engine(settings), deadline=0.0), [2], settings=settings)
    assert late.written == [] and late.skipped == [2]
    assert json.loads(json.dumps(_methods(store))) == {"0": "llm", "1": "llm", "2": EXTRACTIVE}


def test_a_querys_pinned_view_still_writes_once(lazy_index):
    """A query reads the last committed version's frozen files; its first uses still see each other's
    writes (they go through the current files)."""
    from pipeline.io.manifest import commit_manifest

    store, settings, proxy = lazy_index["store"], lazy_index["settings"], lazy_index["proxy"]
    commit_manifest(store)
    before = proxy.calls()["community_report"]
    start = threading.Barrier(8)

    def query(_: int):
        view, engine = store.pinned(), make_engine(settings)
        assert view.manifest is not None
        start.wait()
        return write_on_demand(asking(view, engine), [2], settings=settings)

    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(query, range(8)))
    assert proxy.calls()["community_report"] - before == 1
    assert sum(len(r.written) for r in runs) == 1
    # Stored into the committed version the queries read, and into the current table for the next run.
    assert _methods(store.pinned())[2] == "llm" and _methods(store)[2] == "llm"


def test_a_report_written_after_a_reindex_began_goes_only_into_the_version_read(lazy_index):
    """A run that replaced the current table since the query's version was committed keeps its own rows:
    community 2 there is another community now, which the first-use report must not overwrite."""
    from pipeline.io.manifest import commit_manifest

    store, settings = lazy_index["store"], lazy_index["settings"]
    commit_manifest(store)
    view = store.pinned()
    rows = store.read_table(schema.COMMUNITY_REPORTS).to_pylist()
    for r in rows:
        r["fingerprint"] = f"{r['fingerprint']}-rerun"  # the re-index's reports: other contexts
    store.write_table(schema.COMMUNITY_REPORTS, tables.to_table(rows, schema.COMMUNITY_REPORTS_SCHEMA))
    after_rerun = store.read_table(schema.COMMUNITY_REPORTS)

    run = write_on_demand(asking(view, make_engine(settings)), [2], settings=settings)
    assert run.written == [2]
    assert _methods(view)[2] == "llm" and _methods(store.pinned())[2] == "llm"
    assert store.read_table(schema.COMMUNITY_REPORTS).equals(after_rerun)


def test_without_a_model_nothing_is_written(lazy_index):
    store, settings = lazy_index["store"], lazy_index["settings"]
    before = store.read_table(schema.COMMUNITY_REPORTS)
    run = write_on_demand(asking(store, OfflineEngine()), [1, 2], settings=settings)
    assert run.written == run.failures == run.skipped == []
    assert store.read_table(schema.COMMUNITY_REPORTS).equals(before)
