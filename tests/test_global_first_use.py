"""Global search on a namespace indexed with PIPELINE_REPORTS=on_demand (issue 62): the first question
that maps a deferred report has the model write it, stores it for every later question, and maps what
the model wrote; a report that fails is named and leaves the answer partial; a cancelled question stores
nothing. Through `pipeline.api.answer`, as every door runs it: the real openai client speaks HTTP to a
scripted OpenAI-compatible server on 127.0.0.1 (`UsageProxy`), which counts the calls; real Parquet and
a committed index version (the query reads its frozen files)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pipeline import api
from pipeline.core import schema
from pipeline.core.report_stand_ins import deferred
from pipeline.index.community_reports import index_community_reports
from pipeline.io.manifest import commit_manifest
from pipeline.io.store import NamespaceStore
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.support.cost_model import ModelLikeModel, UsageProxy, scripted_model_env
from tests.support.env import scoped_env
from tests.support.graph_tables import two_group_graph

PART = re.compile(r"\[Community ID: (\d+) \| summary part \d+\]")
QUESTION = "What do the groups do together?"
NS = "groups"


class _Model(ModelLikeModel):
    """Reports as `ModelLikeModel` writes them; a map point per community whose words and score come from
    the report text it was shown (so a stand-in and a model report map differently); one reduce answer."""

    def __call__(self, request: dict[str, Any]) -> str:
        user = str(request["messages"][-1].get("content", ""))
        if "Partial answers:" in user:
            return "The groups work together [Communities: 1, 2]"
        pieces = PART.split(user)
        if len(pieces) > 1:
            texts = dict(zip((int(c) for c in pieces[1::2]), pieces[2::2], strict=True))
            points = [
                {
                    "description": f"Community {c}: " + " ".join(text.split()[:12]),
                    "score": 10 + len(set(text.split())) % 80,
                    "communities": [c],
                }
                for c, text in sorted(texts.items())
            ]
            return json.dumps({"points": points})
        return super().__call__(request)


def _indexed(root: Path, reports: str) -> Settings:
    """two_group_graph with its reports written under `reports` (eager | on_demand), committed."""
    settings = Settings(storage_root=str(root), reports=reports)
    store = NamespaceStore.from_settings(settings, NS)
    t = two_group_graph().tables()
    for name in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS, schema.COVARIATES):
        store.write_table(name, t[name])
    index_community_reports(store, settings, make_engine(settings), min_entities=0)
    commit_manifest(store)
    return settings


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[dict[str, Any]]:
    model = _Model()
    with UsageProxy(model) as proxy, scoped_env(**scripted_model_env(proxy)):
        # Apart storage roots: apart LLM caches, so each namespace's calls reach the server
        yield {
            "proxy": proxy,
            "model": model,
            "eager": _indexed(tmp_path / "eager", "eager"),
            "on_demand": _indexed(tmp_path / "on_demand", "on_demand"),
        }


def _ask(settings: Settings, **options: Any) -> Any:
    return api.answer("global", NS, QUESTION, settings=settings, level=1, **options)


def _stand_ins(settings: Settings) -> set[int]:
    """The communities whose report, in the committed version a question reads, is still a stand-in."""
    return deferred(NamespaceStore.from_settings(settings, NS).pinned().read_table(schema.COMMUNITY_REPORTS))


def _points(result: Any) -> list[tuple[Any, ...]]:
    return [(tuple(p["community_ids"]), p["description"], p["score"]) for p in result.points]


def test_the_first_question_writes_the_reports_it_maps_and_later_ones_reuse_them(scripted):
    settings, proxy = scripted["on_demand"], scripted["proxy"]
    assert _stand_ins(settings) == {1, 2}
    before = proxy.calls()["community_report"]

    first = _ask(settings)
    assert first.status == "completed", first.reason
    assert first.selection["first_use"] == {"written": [1, 2], "ready": [], "skipped": [], "failed": []}
    assert proxy.calls()["community_report"] - before == 2
    assert first.phases["reports"]["calls"] == 2  # counted in the question's own usage
    assert _stand_ins(settings) == set()

    again = _ask(settings)
    assert proxy.calls()["community_report"] - before == 2  # stored: nobody pays for them twice
    assert "first_use" not in again.selection  # no stand-in left among what it maps: nothing to say
    assert _points(again) == _points(first)


def test_eager_and_on_demand_map_answers_cite_the_same_communities(scripted):
    """Once written, the on-demand reports are the eager ones: the scripted map reads each report's text,
    so the two modes' points agree only if the model's reports, not the stand-ins, were mapped."""
    eager = _ask(scripted["eager"])
    stand_ins = _ask(scripted["on_demand"], seed=1)  # not the same question: no LLM cache hit either way
    on_demand = _ask(scripted["on_demand"])
    assert eager.status == on_demand.status == "completed"
    assert stand_ins.selection["first_use"]["written"] == [1, 2]
    assert _points(on_demand) == _points(eager)
    assert on_demand.cited_communities == eager.cited_communities
    assert {c for p in eager.points for c in p["community_ids"]} == {1, 2}


def _estimate(settings: Settings) -> Any:
    from pipeline.query import registry
    from pipeline.query.estimate import estimate_query

    store = NamespaceStore.from_settings(settings, NS).pinned()
    config = registry.configure("global", settings, {"level": 1})
    return estimate_query(registry.mode("global"), store, QUESTION, settings, None, config)


def test_the_estimate_says_how_many_reports_a_question_may_write(scripted):
    settings = scripted["on_demand"]
    before = _estimate(settings)
    phases = {p.phase: p for p in before.phases}
    assert phases["reports"].calls == 2
    assert any("first use: 2 deferred" in n for n in before.notes)
    _ask(settings)
    assert "reports" not in {p.phase for p in _estimate(settings).phases}
    assert "reports" not in {p.phase for p in _estimate(scripted["eager"]).phases}


def test_eight_concurrent_questions_write_each_report_once(scripted):
    settings, proxy = scripted["on_demand"], scripted["proxy"]
    before = proxy.calls()["community_report"]
    start = threading.Barrier(8)

    def question(_: int) -> Any:
        start.wait()
        return _ask(settings)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(question, range(8)))
    assert proxy.calls()["community_report"] - before == 2
    written = [c for r in results for c in r.selection.get("first_use", {}).get("written", [])]
    assert sorted(written) == [1, 2]
    assert {r.status for r in results} == {"completed"}
    assert len({tuple(_points(r)) for r in results}) == 1  # every one mapped the model's reports


def test_a_report_that_fails_leaves_the_answer_partial_and_named(scripted):
    settings = scripted["on_demand"]
    scripted["model"].on_report = lambda request: "this is not a report"
    result = _ask(settings)
    assert result.status == "partial"
    assert "could not be written on first use" in result.reason
    assert "community 1 (level 1)" in result.reason and "community 2 (level 1)" in result.reason
    assert [f["community"] for f in result.selection["first_use"]["failed"]] == [1, 2]
    assert result.points  # the stand-ins were mapped: an answer, not a gap
    assert _stand_ins(settings) == {1, 2}  # nothing stored


def test_a_cancelled_question_stores_no_half_report(scripted):
    settings = scripted["on_demand"]
    cancel = threading.Event()
    scripted["model"].on_report = lambda request: cancel.set()  # given up while the model writes
    result = _ask(settings, cancel=cancel)
    assert result.status == "cancelled"
    assert _stand_ins(settings) == {1, 2}


def test_saved_global_questions_write_the_stand_ins_their_batches_hold(scripted):
    """The Dagster query assets' batches (`write_global_batches`) are a question too: the writer the asset
    hands in writes the stand-ins first, and the batches saved hold the model's reports."""
    from pipeline.query import registry
    from pipeline.query.saved_questions import write_global_batches
    from pipeline.runtime import report_writer

    settings = scripted["on_demand"]
    store = NamespaceStore.from_settings(settings, NS)
    config = registry.configure("global", settings, {"level": 1})
    engine = make_engine(settings)
    table, totals = write_global_batches(store, [QUESTION], engine, None, config, report_writer(settings))
    assert totals["first_use_written"] == 2 and _stand_ins(settings) == set()
    reports = {r["community"]: r["summary"] for r in store.read_table(schema.COMMUNITY_REPORTS).to_pylist()}
    content = "\n".join(table.column("content").to_pylist())
    assert reports[1] in content and reports[2] in content


def test_without_a_model_a_question_maps_the_stand_ins_and_writes_nothing(scripted):
    settings = scripted["on_demand"].model_copy(update={"llm_provider": "offline"})
    before = sum(scripted["proxy"].calls().values())
    result = _ask(settings)
    assert result.status == "completed" and "first_use" not in result.selection
    assert "reports" not in result.phases or result.phases["reports"]["calls"] == 0
    assert _stand_ins(settings) == {1, 2}
    assert sum(scripted["proxy"].calls().values()) == before


def test_reports_eager_afterwards_reuses_what_first_use_wrote(scripted):
    """`pipeline index --reports eager` (the reports stage under eager) asks again only for what changed:
    the root, whose children's reports the first use replaced; the leaves it wrote are reused."""
    settings, proxy = scripted["on_demand"], scripted["proxy"]
    _ask(settings)
    before = proxy.calls()["community_report"]
    eager = settings.model_copy(update={"reports": "eager"})
    store = NamespaceStore.from_settings(eager, NS)
    run = index_community_reports(store, eager, make_engine(eager), min_entities=0)
    assert proxy.calls()["community_report"] - before == 1
    assert run.reused == 2 and deferred(store.read_table(schema.COMMUNITY_REPORTS)) == set()


def test_the_cli_says_what_a_question_wrote_on_first_use(scripted, capsys):
    from assets.cli import main

    root = str(scripted["on_demand"].storage_root)
    with scoped_env(PIPELINE_STORAGE_ROOT=root):
        code = main(["query", "global", "--namespace", NS, "--level", "1", QUESTION])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[reports on first use: 2 written]" in out
    assert _stand_ins(scripted["on_demand"]) == set()
