"""Local search through the LLM client over real HTTP, against a scripted OpenAI-compatible server (the
fault proxy answering itself): the question parse, the community selection and the cited answer; their
failures; and the answer prompt, as the server receives it, measured against the token budget on the
sample book (samples/demo, indexed offline)."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from pipeline.api import local_search
from pipeline.core import schema
from pipeline.core.tokens import count_tokens
from pipeline.io.store import NamespaceStore
from pipeline.query.common.scope import QueryScope
from pipeline.query.local.search import LocalSearchConfig, local_search_async
from pipeline.query.retrieval.intent import offline_intent
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_engines import scripted_engine
from tests.support.scripted_local_model import QUESTION, TASKS, ScriptedModel, table

REPO = Path(__file__).resolve().parent.parent


def run(store, model: ScriptedModel, embedder, tmp_path, *faults: str, cancel=None, hold=None):
    with FaultProxy(None, responder=model) as proxy:
        proxy.script(*faults)
        engine = scripted_engine(proxy.base_url, tmp_path)
        coro = local_search_async(
            QueryScope(store, engine, embedder, cancel=cancel), QUESTION, LocalSearchConfig()
        )
        if hold is None:
            return asyncio.run(coro)
        return hold(proxy, coro)


def test_scripted_model_parses_selects_and_answers_with_citations_that_resolve(tiny, embedder, tmp_path):
    model = ScriptedModel(select=lambda offered: [4] if 4 in offered else [])
    result = run(tiny, model, embedder, tmp_path)
    assert result.status == "completed" and result.fallbacks == {}
    assert result.intent == model.intent and result.selection == "llm"
    assert [c["id"] for c in result.communities] == [4]
    assert {len(model.requests[t]) for t in TASKS} == {1}
    # The prompt the server received is the one the context was measured on, within the budget.
    prompt = model.answer_prompt()
    assert count_tokens(prompt) == result.context["prompt_tokens"] <= result.context["budget"] == 12_000
    entity_ids = set(tiny.read_table(schema.ENTITIES).column("id").to_pylist())
    hrids = set(tiny.read_table(schema.RELATIONSHIPS).column("human_readable_id").to_pylist())
    by_section = defaultdict(list)
    for c in result.citations:
        by_section[c["section"]].append(c)
    assert len(by_section["entities"]) == 2 and {c["entity_id"] for c in by_section["entities"]} <= entity_ids
    assert by_section["relationships"][0]["id"] in hrids
    (source,) = by_section["sources"]
    assert source["document_id"] and source["end_char"] > source["start_char"]
    assert result.unresolved_citations == ["Entities (99999)"]


def test_an_intent_call_that_fails_degrades_to_the_offline_parse_and_says_why(tiny, embedder, tmp_path):
    model = ScriptedModel()
    result = run(tiny, model, embedder, tmp_path, "500")
    assert result.status == "completed" and result.answer
    assert result.intent == offline_intent(QUESTION).model_dump()
    assert "LLMCallError" in result.fallbacks["intent"] and "offline" in result.fallbacks["intent"]
    assert model.requests["intent"] == []  # the 500 never reached the model


def test_an_intent_reply_missing_a_required_field_degrades_to_the_offline_parse(tiny, embedder, tmp_path):
    model = ScriptedModel(intent={"entities": ["Scrooge"]})  # keywords and themes left out, every time
    result = run(tiny, model, embedder, tmp_path)
    assert result.status == "completed"
    assert len(model.requests["intent"]) == 2  # the reply and its one repair
    assert "LLMValidationError" in result.fallbacks["intent"]
    assert result.intent == offline_intent(QUESTION).model_dump()


@pytest.mark.parametrize(
    ("select", "faults", "why"),
    [
        (lambda offered: [], ("ok",), "chose none of the candidates"),
        (lambda offered: [max(offered) + 100], ("ok",), "chose none of the candidates"),
        (lambda offered: offered, ("ok", "500"), "community selection failed (LLMCallError"),
    ],
    ids=["empty", "unknown-ids", "http-500"],
)
def test_an_empty_or_failed_selection_falls_back_to_the_ranking_and_says_why(
    tiny, embedder, tmp_path, select, faults, why
):
    model = ScriptedModel(select=select)
    result = run(tiny, model, embedder, tmp_path, *faults)
    assert result.status == "completed" and result.selection == "fallback"
    assert why in result.fallbacks["selection"] and "ranking" in result.fallbacks["selection"]
    assert "intent" not in result.fallbacks
    assert len(result.communities) > 1  # the whole ranking
    assert result.context["section_rows"]["reports"] == len(result.communities)


def test_a_cancelled_intent_call_cancels_the_search_instead_of_falling_back(tiny, embedder, tmp_path):
    model = ScriptedModel()
    cancel = threading.Event()

    def cancel_while_held(proxy, coro):
        held = proxy.hold(from_nth=1)
        out: dict = {}
        worker = threading.Thread(target=lambda: out.setdefault("result", asyncio.run(coro)))
        worker.start()
        held.wait_held(1)
        cancel.set()
        held.release()
        worker.join()
        return out["result"]

    result = run(tiny, model, embedder, tmp_path, cancel=cancel, hold=cancel_while_held)
    assert result.status == "cancelled" and result.fallbacks == {}
    assert model.requests["answer"] == []


# ---- the sample book --------------------------------------------------------------------------------
@pytest.mark.parametrize("budget", [12_000, 6_000])
def test_on_the_sample_book_the_answer_prompt_fills_its_budget_with_entity_and_relationship_rows(
    sample_book, budget, tmp_path, monkeypatch
):
    from pipeline.runtime import cached_embedder

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    model = ScriptedModel()
    with FaultProxy(None, responder=model) as proxy:
        settings = Settings(
            storage_root=sample_book,
            cache_dir=str(tmp_path / "cache"),  # the LLM cache: fresh, so every call reaches the server
            llm_provider="openai",
            llm_base_url=proxy.base_url,
            llm_max_retries=0,
            local_context_max_tokens=budget,
        )
        embedder = cached_embedder(Settings(storage_root=sample_book))  # the index's own vectors
        result = local_search("demo", QUESTION, settings=settings, embedder=embedder)
    assert result.status == "completed" and result.fallbacks == {}, result.fallbacks
    prompt = model.answer_prompt()
    tokens = count_tokens(prompt)
    assert 0.95 * budget <= tokens <= budget, tokens
    assert result.context["prompt_tokens"] == tokens and result.context["budget"] == budget
    store = NamespaceStore(sample_book, "demo")
    user = model.requests["answer"][0]["messages"][1]["content"]
    entity_rows, relationship_rows = table(user, "Entities"), table(user, "Relationships")
    assert entity_rows and relationship_rows
    entities = {e["human_readable_id"]: e for e in store.read_table(schema.ENTITIES).to_pylist()}
    relationships = {r["human_readable_id"]: r for r in store.read_table(schema.RELATIONSHIPS).to_pylist()}
    for row in entity_rows:
        assert entities[int(row[0])]["title"] == row[1]
    for row in relationship_rows:
        assert (relationships[int(row[0])]["source"], relationships[int(row[0])]["target"]) == (
            row[1],
            row[2],
        )
    # The matched entities lead the entities table, and the answer's citations resolve to rows.
    titles = [row[1] for row in entity_rows]
    matched = [s["title"] for s in result.seeds if s["title"] in titles]
    # 'Scrooge' matches the entity titled by his full name ('Scrooge' is one of its aliases)
    assert {"Ebenezer Scrooge", "Bob Cratchit"} <= set(matched) and titles[: len(matched)] == matched
    assert {c["section"] for c in result.citations} == {"entities", "relationships", "sources"}
    assert result.unresolved_citations == ["Entities (99999)"]
