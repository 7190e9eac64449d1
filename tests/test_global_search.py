"""Global search: batching, map-reduce status rules and the offline engine, on synthetic namespaces."""

from __future__ import annotations

import re

import pytest

from pipeline.core import schema, tables
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore
from pipeline.query.answer.prompt_text import skeleton_text
from pipeline.query.answer.token_budget import BudgetError
from pipeline.query.common.scope import QueryScope
from pipeline.query.global_.batches import build_batches
from pipeline.query.global_.context import GlobalContextError, ReportContext, load_report_contexts
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async, plan_batches
from pipeline.query.global_.tasks import map_messages
from tests.support.community_reports import write_reports


@pytest.fixture
def store(tmp_path):
    s = NamespaceStore(tmp_path / "storage", "synthetic")
    write_reports(s)
    return s


HEADER = re.compile(r"^\[Community ID: (\d+) \| summary part (\d+)\]$", re.M)


def parts_by_community(batches) -> dict[int, list[tuple[int, str]]]:
    found: dict[int, list[tuple[int, str]]] = {}
    for b in batches:
        pieces = HEADER.split(b.content)
        # split -> ['', id, part, text, id, part, text, ...]
        for cid, part, text in zip(pieces[1::3], pieces[2::3], pieces[3::3], strict=True):
            found.setdefault(int(cid), []).append((int(part), text.removeprefix("\n").removesuffix("\n")))
    return found


def test_small_budget_forces_batches_and_every_report_appears_exactly_once(store):
    config = GlobalSearchConfig(map_budget=700, map_reserve=100)
    batches = plan_batches(store, "What happened to the harbour?", config)
    assert len(batches) > 3
    reports = {r.community: r.text for r in load_report_contexts(store)}
    parts = parts_by_community(batches)
    assert set(parts) == set(reports)
    for cid, found in parts.items():
        numbers = [n for n, _ in found]
        assert numbers == list(range(1, len(found) + 1)), f"community {cid} parts out of order: {numbers}"
        assert "".join(text for _, text in found) == reports[cid]
    assert len(parts[7]) > 1  # the oversized report was split into labeled parts
    assert all(len(parts[c]) == 1 for c in parts if c != 7)
    skeleton = skeleton_text(map_messages("What happened to the harbour?", ""))
    from pipeline.core.tokens import count_tokens

    assert all(count_tokens(skeleton + "\n" + b.content) <= 600 for b in batches)
    assert all(
        b.community_ids == list(dict.fromkeys(int(c) for c, _ in HEADER.findall(b.content))) for b in batches
    )


def test_shuffle_is_reproducible_under_a_seed(store):
    a = plan_batches(store, "q", GlobalSearchConfig(map_budget=700, map_reserve=100, seed=3))
    b = plan_batches(store, "q", GlobalSearchConfig(map_budget=700, map_reserve=100, seed=3))
    c = plan_batches(store, "q", GlobalSearchConfig(map_budget=700, map_reserve=100, seed=4))
    assert [x.content for x in a] == [x.content for x in b]
    assert [x.community_ids for x in a] != [x.community_ids for x in c]


def test_budget_that_cannot_fit_the_prompt_is_a_clear_error():
    report = ReportContext(1, 0, "t", 0.0, "text")
    with pytest.raises(BudgetError, match="cannot fit the map prompt"):
        build_batches([report], "word " * 200, budget=150, reserve=10)
    with pytest.raises(BudgetError, match="must exceed its output reserve"):
        build_batches([report], "x", budget=100, reserve=100)


def test_level_selection_is_validated(tmp_path):
    s = NamespaceStore(tmp_path / "st", "levels")
    write_reports(s, n=6, oversized=None, levels=True)
    assert {r.community for r in load_report_contexts(s)} == set(range(6))  # leaves by default
    assert {r.community for r in load_report_contexts(s, level=0)} == {1000, 1001}
    with pytest.raises(GlobalContextError, match="does not exist"):
        load_report_contexts(s, level=5)
    with pytest.raises(GlobalContextError, match="non-negative"):
        load_report_contexts(s, level=-1)


@pytest.fixture(scope="module")
def minilm():
    from pipeline.embeddings.minilm import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder()


def run(store, question, minilm, **cfg):
    import asyncio

    result = asyncio.run(
        global_search_async(QueryScope(store, OfflineEngine(), minilm), question, GlobalSearchConfig(**cfg))
    )
    return result, result.usage


def test_offline_global_search_answers_with_cited_communities(store, minilm):
    result, tasks = run(
        store, "What did the flood destroy in the city?", minilm, map_budget=700, map_reserve=100
    )
    assert result.status == "completed", result.reason
    assert "harbour" in result.answer.lower()
    flood_communities = {i for i in range(40) if i % 4 == 1}
    assert set(result.cited_communities) & flood_communities
    assert re.search(r"\[Community ID: \d+\]", result.answer)
    assert tasks["map_calls"] == result.batches and tasks["reduce_calls"] == 1
    assert all(0 < p["score"] <= 100 for p in result.points)
    ordered = [p["score"] for p in result.points]
    assert ordered == sorted(ordered, reverse=True)
    # One point per selected sentence, citing the one community it came from.
    assert all(len(p["community_ids"]) == 1 for p in result.points)
    # Each point states some of the question's words; the same statement from several batches is one.
    assert all(re.search(r"flood|destroy|city", p["description"], re.I) for p in result.points)
    # A question whose words are in a different sentence of every report gets the best of several batches.
    result, _ = run(store, "What detail does each report add?", minilm, map_budget=700, map_reserve=100)
    assert len({p["batch"] for p in result.points}) > 1


def test_offline_irrelevant_question_is_no_results_without_a_reduce(store, minilm):
    result, tasks = run(store, "zzqx vlorp gribble?", minilm, map_budget=700, map_reserve=100)
    assert result.status == "no_results" and "no point scored above 0" in result.reason
    assert tasks["reduce_calls"] == 0


def test_a_level_the_graph_does_not_have_is_no_results_with_the_reason(store, minilm):
    result, tasks = run(store, "What did the flood destroy?", minilm, level=7)
    assert result.status == "no_results" and "community level 7 does not exist" in result.reason
    assert tasks["map_calls"] == 0 and tasks["reduce_calls"] == 0


def test_empty_namespace_is_no_results(tmp_path, minilm):
    s = NamespaceStore(tmp_path / "st", "empty")
    s.write_table(schema.COMMUNITIES, tables.to_table([], schema.COMMUNITIES_SCHEMA))
    s.write_table(schema.COMMUNITY_REPORTS, tables.to_table([], schema.COMMUNITY_REPORTS_SCHEMA))
    result, _ = run(s, "anything?", minilm)
    assert result.status == "no_results" and result.batches == 0


def test_query_assets_materialize_batches_map_answers_and_answers(tmp_path, monkeypatch, dagster_instance):
    from assets.definitions import defs
    from assets.launch import add_namespace

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tmp_path / "storage"))
    store = NamespaceStore(tmp_path / "storage", "saved-questions")
    write_reports(store, n=12, oversized=None)
    questions = ["What did the flood destroy?", "Which players came from the academy?"]
    cfg = {"questions": questions, "level": None, "seed": 0}
    add_namespace(dagster_instance, "saved-questions")
    result = defs.resolve_job_def("answer_saved_questions").execute_in_process(
        partition_key="saved-questions",
        instance=dagster_instance,
        run_config={
            "ops": {
                n: {"config": cfg} for n in ("global_map_batches", "global_map_answers", "global_answers")
            }
        },
    )
    assert result.success
    batches = store.read_table(schema.QUERY_GLOBAL_BATCHES).to_pylist()
    maps = store.read_table(schema.QUERY_GLOBAL_MAP_ANSWERS).to_pylist()
    answers = store.read_table(schema.QUERY_GLOBAL_ANSWERS).to_pylist()
    assert {b["question"] for b in batches} == set(questions)
    assert len(maps) == len(batches)  # one map answer per batch and question
    assert {(m["question"], m["batch"]) for m in maps} == {(b["question"], b["batch"]) for b in batches}
    for m in maps:  # its points cite communities of its own batch, and top_score is the best of them
        assert all(set(p["communities"]) <= set(m["community_ids"]) for p in m["points"])
        assert m["top_score"] == max((p["score"] for p in m["points"]), default=0.0)
    assert [a["question"] for a in answers] == questions
    assert all(a["status"] == "completed" for a in answers)
    assert "harbour" in answers[0]["answer"].lower()
    mats = {
        e.asset_key.to_user_string(): e
        for e in result.get_asset_materialization_events()
        for e in [e.materialization]
    }
    assert "What did the flood destroy?" in mats["global_answers"].metadata["answers"].value
    meta = mats["global_map_answers"].metadata
    assert meta["points"].value == sum(len(m["points"]) for m in maps) > 0
    assert meta["with_points"].value == sum(1 for m in maps if m["points"])
    assert mats["global_answers"].metadata["points_used"].value == sum(a["points_used"] for a in answers) > 0
