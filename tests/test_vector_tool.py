"""The vector query tool over real LanceDB tables and the real MiniLM embedder: contract, overrides,
tenant resolvers, filters, rerankers (the LLM one through the fault proxy's scripted model over HTTP),
degradation, the graph tool and the CLI."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys

import pytest

from pipeline.llm import LLMClient
from pipeline.llm.retry import Backoff
from pipeline.vector_tool import (
    OVERRIDE_KEYS,
    EmbeddingRelevanceScorer,
    LanceDBStore,
    LLMRelevanceScorer,
    RRFHybridReranker,
    StoreResolverError,
    WeightedReranker,
    coerce_top_k,
    create_graph_rag_tool,
    create_vector_query_tool,
    resolve_store,
)
from tests.conftest import REPO_ROOT
from tests.support.fault_proxy import FaultProxy
from tests.support.vector_corpus import CORPORA, write_corpus


@pytest.fixture(scope="module")
def root(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("storage")
    for namespace in CORPORA:
        write_corpus(root, namespace, embedder)
    return root


@pytest.fixture
def acme(root):
    return LanceDBStore.at(root, "acme")


def ask(tool, query="when does the ferry stop?", context=None, **input):
    return tool.execute({"query_text": query, "top_k": input.pop("top_k", 3), **input}, context)


def ids(result):
    return [s["id"] for s in result["sources"]]


# ---- contract ----------------------------------------------------------------------------------------
def test_result_has_context_and_sources_best_first(embedder, acme):
    out = ask(create_vector_query_tool("text_units", embedder, store=acme))
    assert set(out) == {"relevant_context", "sources"}
    assert out["sources"][0]["id"] == "acme-harbour.txt-1"  # the ferry sentence
    assert [s["score"] for s in out["sources"]] == sorted((s["score"] for s in out["sources"]), reverse=True)
    assert out["relevant_context"][0]["text"].startswith("In winter the ferry")
    assert out["sources"][0]["vector"] == [] and out["sources"][0]["document"].startswith("In winter")


def test_schemas_and_openai_export(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store_name="lake", enable_filter=True)
    spec = tool.openai_tool()
    assert spec["type"] == "function" and spec["function"]["name"] == "VectorQuery_lake_text_units_Tool"
    params = spec["function"]["parameters"]
    assert set(params["properties"]) == {"query_text", "top_k", "filter"}
    assert "filter" not in create_vector_query_tool("t", embedder, store=acme).input_schema["properties"]
    json.dumps(spec)  # serialisable as sent to the API


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        ("4", 4),
        (" 5 ", 5),
        (2.7, 3),  # a fraction rounds up: at least what was asked
        (0.5, 1),  # Mastra accepts any finite value > 0
        ("0.5", 1),
        (0, 10),
        (-1, 10),
        (float("nan"), 10),
        (float("inf"), 10),
        (True, 10),
        ("x", 10),
        (None, 10),
    ],
)
def test_top_k_takes_any_finite_positive_number_and_anything_else_gives_10(value, expected):
    assert coerce_top_k(value) == expected


def test_mastra_field_names_are_accepted_and_offered_to_agents(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme, enable_filter=True)
    ours = tool.execute({"query_text": "ferry in winter", "top_k": 2})
    theirs = tool.execute({"queryText": "ferry in winter", "topK": 2, "filter": "{}"})
    assert theirs == ours and len(ours["relevant_context"]) == 2
    agent = tool.execute_agent({"queryText": "ferry in winter", "topK": 2})
    assert (
        set(agent) == {"relevantContext", "sources"} and agent["relevantContext"] == ours["relevant_context"]
    )
    params = tool.openai_tool(mastra_names=True)["function"]["parameters"]
    assert set(params["properties"]) == {"queryText", "topK", "filter"}
    assert params["required"] == ["queryText", "topK", "filter"]


def test_an_unsupported_filter_operator_is_named_with_the_store(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme, enable_filter=True)
    out = tool.execute({"query_text": "ferry", "top_k": 2, "filter": '{"document_title": {"$regex": "^h"}}'})
    assert out["relevant_context"] == [] and "'$regex'" in out["error"] and "'lancedb' store" in out["error"]


def test_numeric_string_top_k_reaches_the_store(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    assert len(ask(tool, top_k="2")["sources"]) == 2
    assert len(ask(tool, top_k="lots")["sources"]) == 7  # invalid -> 10, and acme has 7 units


def test_missing_index_name_is_an_error_at_construction(embedder, acme):
    with pytest.raises(ValueError, match="index_name is required"):
        create_vector_query_tool("", embedder, store=acme)


# ---- filters -------------------------------------------------------------------------------------------
def test_filter_restricts_rows(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme, enable_filter=True)
    out = ask(tool, "apples", top_k=10, filter='{"document_title": "harbour.txt", "n_tokens": {"$gte": 10}}')
    assert out["sources"] and all(c["document_title"] == "harbour.txt" for c in out["relevant_context"])
    assert all(c["n_tokens"] >= 10 for c in out["relevant_context"])


def test_filter_is_ignored_unless_enabled(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    out = ask(tool, "apples", top_k=10, filter='{"document_title": "harbour.txt"}')
    assert {c["document_title"] for c in out["relevant_context"]} == {"harbour.txt", "orchard.txt"}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "Invalid filter format"),
        ("[1, 2]", "must be a JSON object"),
        ('{"a": {"$regex": "x"}}', "$regex"),
    ],
)
def test_bad_filter_is_a_clear_error_in_the_result(embedder, acme, bad, message):
    tool = create_vector_query_tool("text_units", embedder, store=acme, enable_filter=True)
    out = ask(tool, filter=bad)
    assert out["sources"] == [] and out["relevant_context"] == []
    assert "FilterError" in out["error"] and message in out["error"]


# ---- per-request overrides: each replaces the whole value -------------------------------------------------
def test_override_index_name(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    out = ask(tool, context={"index_name": "text_unit_pieces"})
    assert out["sources"] and all(":" in i for i in ids(out))  # piece ids are "<unit id>:<offset>"
    assert "error" in ask(tool, context={"index_name": "no_such_index"})


def test_override_store_name(embedder, root):
    stores = {"acme": LanceDBStore.at(root, "acme"), "globex": LanceDBStore.at(root, "globex")}
    tool = create_vector_query_tool("text_units", embedder, store_name="acme", stores=stores)
    assert all(i.startswith("acme-") for i in ids(ask(tool)))
    assert all(i.startswith("globex-") for i in ids(ask(tool, context={"store_name": "globex"})))
    missing = ask(tool, context={"store_name": "initech"})
    assert missing["sources"] == [] and "not found" in missing["error"]


def test_override_include_vectors_and_sources(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    with_vectors = ask(tool, context={"include_vectors": True})
    assert len(with_vectors["sources"][0]["vector"]) == 384
    no_sources = ask(tool, context={"include_sources": False})
    assert no_sources["sources"] == [] and no_sources["relevant_context"]
    tool2 = create_vector_query_tool(
        "text_units", embedder, store=acme, include_vectors=True, include_sources=False
    )
    flipped = ask(tool2, context={"include_vectors": False, "include_sources": True})
    assert flipped["sources"] and flipped["sources"][0]["vector"] == []


def test_override_top_k_wins_over_input(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    assert len(ask(tool, top_k=5, context={"top_k": "2"})["sources"]) == 2


def test_override_filter_replaces_and_enables_filtering(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme, enable_filter=True)
    out = ask(
        tool,
        "apples",
        top_k=10,
        filter='{"document_title": "orchard.txt"}',
        context={"filter": {"document_title": "harbour.txt"}},
    )
    assert {c["document_title"] for c in out["relevant_context"]} == {"harbour.txt"}  # replaced, not ANDed
    forced = create_vector_query_tool("text_units", embedder, store=acme)  # filtering off at construction
    out = ask(forced, "apples", top_k=10, context={"filter": '{"document_title": "harbour.txt"}'})
    assert {c["document_title"] for c in out["relevant_context"]} == {"harbour.txt"}


def test_override_database_config_replaces_not_merges(embedder, acme):
    tool = create_vector_query_tool(
        "text_units",
        embedder,
        store=acme,
        database_config={"lancedb": {"where": "document_title = 'orchard.txt'", "distance": "cosine"}},
    )
    assert {c["document_title"] for c in ask(tool, top_k=10)["relevant_context"]} == {"orchard.txt"}
    # The request's config has no `where`: a merge would keep the orchard prefilter, a replace drops it.
    out = ask(tool, top_k=10, context={"database_config": {"lancedb": {"distance": "cosine"}}})
    assert {c["document_title"] for c in out["relevant_context"]} == {"orchard.txt", "harbour.txt"}


class FailingReranker:
    async def rerank(self, *args, **kwargs):
        raise RuntimeError("reranking service is down")


def test_override_reranker_replaces_and_none_falls_through_to_the_tools_own(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme, reranker=FailingReranker())
    assert "warnings" in ask(tool)
    assert "warnings" in ask(tool, context={"reranker": None})  # Mastra: context.get(key) ?? option
    hybrid = ask(tool, "herring quay", context={"reranker": RRFHybridReranker()})
    assert "warnings" not in hybrid and hybrid["sources"][0]["id"] == "acme-harbour.txt-3"


def test_every_override_key_is_covered():
    assert set(OVERRIDE_KEYS) == {
        "index_name",
        "store_name",
        "include_vectors",
        "include_sources",
        "reranker",
        "database_config",
        "top_k",
        "filter",
        "model",
    }


# ---- tenant resolvers ------------------------------------------------------------------------------------
def test_resolver_per_tenant_returns_only_that_tenants_rows(embedder, root):
    seen = []

    async def resolver(context):  # async, as a resolver that looks tenants up may be
        seen.append(context["tenant_id"])
        return LanceDBStore.at(root, context["tenant_id"])

    tool = create_vector_query_tool("text_units", embedder, store=resolver)
    acme = ask(tool, "who signed the burial register?", top_k=10, context={"tenant_id": "acme"})
    globex = ask(tool, "who signed the burial register?", top_k=10, context={"tenant_id": "globex"})
    assert len(acme["sources"]) == 7 and all(i.startswith("acme-") for i in ids(acme))
    assert len(globex["sources"]) == 3 and all(i.startswith("globex-") for i in ids(globex))
    assert seen == ["acme", "globex"]


def test_sync_resolver_works_too(embedder, root):
    tool = create_vector_query_tool(
        "text_units", embedder, store=lambda ctx: LanceDBStore.at(root, ctx["ns"])
    )
    assert all(i.startswith("globex-") for i in ids(ask(tool, context={"ns": "globex"})))


def test_invalid_resolver_result_names_store_and_tenant(embedder):
    context = {"tenant_id": "acme", "schema_id": "tenant_acme"}
    with pytest.raises(StoreResolverError) as err:
        asyncio.run(resolve_store(lambda ctx: None, context, store_name="pg"))
    message = str(err.value)
    assert "got None" in message and "store_name='pg'" in message
    assert "tenant_id='acme'" in message and "schema_id='tenant_acme'" in message
    tool = create_vector_query_tool(
        "text_units", embedder, store=lambda ctx: {"not": "a store"}, store_name="pg"
    )
    out = ask(tool, context=context)
    assert out["sources"] == [] and "got dict" in out["error"] and "tenant_id='acme'" in out["error"]


# ---- rerankers -------------------------------------------------------------------------------------------
def test_rrf_hybrid_reranker_fuses_vector_and_full_text_ranks(embedder, acme):
    query = "apples cider press"
    plain = ids(ask(create_vector_query_tool("text_units", embedder, store=acme), query, top_k=7))
    text = [r.id for r in acme.text_query("text_units", query, 7)]
    hybrid = ask(
        create_vector_query_tool("text_units", embedder, store=acme, reranker=RRFHybridReranker()),
        query,
        top_k=7,
    )
    expected = {
        i: sum(1 / (60 + ranking.index(i) + 1) for ranking in (plain, text) if i in ranking)
        for i in plain + text
    }
    assert text and set(text) < set(plain)  # full text matches only the rows with these words
    assert [s["score"] for s in hybrid["sources"]] == pytest.approx([expected[i] for i in ids(hybrid)])
    assert ids(hybrid) == sorted(expected, key=lambda i: -expected[i])


def test_weighted_reranker_weights_must_sum_to_one(embedder):
    scorer = EmbeddingRelevanceScorer(embedder)
    assert (
        WeightedReranker(scorer, {"semantic": 0.1, "vector": 0.2, "position": 0.7}).weights["position"] == 0.7
    )
    with pytest.raises(ValueError, match="add up to 1"):
        WeightedReranker(scorer, {"semantic": 0.5, "vector": 0.5, "position": 0.5})


def test_weighted_reranker_scores_are_the_weighted_sum(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    plain = ask(tool, top_k=3)["sources"]
    scorer = EmbeddingRelevanceScorer(embedder)
    reranked = ask(tool, top_k=3, context={"reranker": WeightedReranker(scorer)})["sources"]
    by_id = {s["id"]: (i, s["score"]) for i, s in enumerate(plain)}
    for s in reranked:
        i, vector_score = by_id[s["id"]]
        semantic = scorer.score("when does the ferry stop?", s["document"])
        assert s["score"] == pytest.approx(0.4 * semantic + 0.4 * vector_score + 0.2 * (1 - i / 3), abs=1e-5)


def llm_client(base_url):
    backoff = Backoff(initial_s=0.01, max_s=0.05)
    return LLMClient(model="scripted", api_key="test-key", base_url=base_url, max_retries=0, backoff=backoff)


def test_llm_relevance_reranker_reorders_by_the_models_scores(embedder, acme, tmp_path):
    def model(request):  # a scripted model: rates the orchard passages relevant, the rest not
        return json.dumps({"score": 1.0 if "apple" in request["messages"][-1]["content"] else 0.0})

    tool = create_vector_query_tool("text_units", embedder, store=acme)
    with FaultProxy(None, responder=model) as proxy:
        reranker = WeightedReranker(
            LLMRelevanceScorer(llm_client(proxy.base_url)),
            {"semantic": 0.9, "vector": 0.05, "position": 0.05},
        )
        out = ask(tool, "ships and ferries", top_k=7, context={"reranker": reranker})
        assert proxy.received == 7  # one relevance call per result
    assert "warnings" not in out
    assert {c["document_title"] for c in out["relevant_context"][:3]} == {"orchard.txt"}


def test_failing_llm_reranker_falls_back_to_unreranked_results(embedder, acme, tmp_path, caplog):
    tool = create_vector_query_tool("text_units", embedder, store=acme)
    expected = ids(ask(tool, top_k=4))
    with FaultProxy(None, responder=lambda request: "not a number") as proxy:
        reranker = WeightedReranker(LLMRelevanceScorer(llm_client(proxy.base_url)))
        with caplog.at_level(logging.WARNING):
            out = ask(tool, top_k=4, context={"reranker": reranker})
    assert ids(out) == expected  # Mastra returns nothing here
    assert "un-reranked" in out["warnings"][0] and "reranker failed" in caplog.text


# ---- degradation -----------------------------------------------------------------------------------------
def test_store_failure_degrades_to_an_empty_result_with_error(embedder, tmp_path, caplog):
    tool = create_vector_query_tool("text_units", embedder, store=LanceDBStore.at(tmp_path, "empty"))
    with caplog.at_level(logging.ERROR):
        out = ask(tool)
    assert out["relevant_context"] == [] and out["sources"] == []
    assert "TableNotFoundError" in out["error"] and "materialize" in out["error"]
    assert "failed" in caplog.text


def test_unknown_store_name_degrades(embedder):
    out = ask(create_vector_query_tool("text_units", embedder, store_name="nowhere"))
    assert out == {"relevant_context": [], "sources": [], "error": "vector store not found: 'nowhere'"}


# ---- graph tool ------------------------------------------------------------------------------------------
def test_graph_tool_keeps_tenants_apart_and_rebuilds_when_the_index_changes(embedder, tmp_path):
    root = tmp_path / "storage"
    for namespace in CORPORA:
        write_corpus(root, namespace, embedder)
    tool = create_graph_rag_tool(
        "text_units", embedder, store=lambda ctx: LanceDBStore.at(root, ctx["tenant_id"]), threshold=0.3
    )
    acme = ask(tool, "apples", top_k=10, context={"tenant_id": "acme"})
    globex = ask(tool, "apples", top_k=10, context={"tenant_id": "globex"})
    assert all(i.startswith("acme-") for i in ids(acme)) and len(acme["sources"]) >= 3
    assert all(i.startswith("globex-") for i in ids(globex))
    assert isinstance(acme["relevant_context"][0], str) and tool.graphs.builds == 2
    ask(tool, "pears", context={"tenant_id": "acme"})
    assert tool.graphs.builds == 2  # unchanged index: cached graph

    write_corpus(root, "acme", embedder, {**CORPORA["acme"], "pier.txt": ["A new pier was built at Halvik."]})
    after = ask(tool, "the new pier at Halvik", top_k=10, context={"tenant_id": "acme"})
    assert tool.graphs.builds == 3 and "acme-pier.txt-0" in ids(after)


def test_graph_tool_filters_by_equality(embedder, acme):
    tool = create_graph_rag_tool("text_units", embedder, store=acme, enable_filter=True, threshold=0.3)
    out = ask(tool, "apples", top_k=10, filter='{"document_title": "harbour.txt"}')
    assert out["sources"] and {s["metadata"]["document_title"] for s in out["sources"]} == {"harbour.txt"}
    assert "equality only" in ask(tool, filter='{"n_tokens": {"$gt": 3}}')["error"]


# ---- CLI -------------------------------------------------------------------------------------------------
def run_cli(root, *args):
    env = {**__import__("os").environ, "PIPELINE_STORAGE_ROOT": str(root)}
    cmd = [sys.executable, "-m", "assets", "query", "vector", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300)


def test_cli_lancedb_top_k_filter_json(root):
    out = run_cli(
        root,
        "--namespace",
        "acme",
        "--top-k",
        "2",
        "--filter",
        '{"document_title": "orchard.txt"}',
        "--json",
        "cider",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    hits = json.loads(out.stdout)
    assert len(hits) == 2 and hits[0]["id"] == "acme-orchard.txt-2"
    assert all(h["document_title"] == "orchard.txt" for h in hits)
    bad = run_cli(root, "--namespace", "acme", "--filter", "[1]", "cider")
    assert bad.returncode == 2 and "must be a JSON object" in bad.stderr


def test_mastra_reranker_configuration_is_accepted_and_validated(embedder, acme):
    config = {
        "model": embedder,
        "options": {"weights": {"semantic": 0.5, "vector": 0.3, "position": 0.2}, "topK": 2},
    }
    tool = create_vector_query_tool("text_units", embedder, store=acme, reranker=config)
    out = ask(tool, "ferry in winter", top_k=5)
    assert "warnings" not in out and len(out["sources"]) == 2  # the reranker's own topK
    assert all(0.0 <= s["score"] <= 1.0 for s in out["sources"])
    per_request = ask(
        create_vector_query_tool("text_units", embedder, store=acme),
        "ferry",
        top_k=5,
        context={"reranker": {"model": "embedding", "options": {"topK": 1}}},
    )
    assert len(per_request["sources"]) == 1
    with pytest.raises(ValueError, match="must add up to 1"):
        create_vector_query_tool(
            "text_units",
            embedder,
            store=acme,
            reranker={"model": embedder, "options": {"weights": {"semantic": 0.9}}},
        )
    with pytest.raises(ValueError, match=r"numbers in \[0, 1\]"):
        create_vector_query_tool(
            "text_units",
            embedder,
            store=acme,
            reranker={
                "model": embedder,
                "options": {"weights": {"semantic": 1.5, "vector": -0.3, "position": -0.2}},
            },
        )
    with pytest.raises(ValueError, match="unknown reranker options"):
        create_vector_query_tool(
            "text_units", embedder, store=acme, reranker={"model": embedder, "options": {"k": 1}}
        )


class _Shifted:
    """Another configured model: the same vectors, reversed (so its nearest neighbours differ)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = "shifted"

    def embed(self, texts):
        return -self.inner.embed(texts)


def test_a_request_may_pick_one_of_the_configured_embedders(embedder, acme):
    tool = create_vector_query_tool("text_units", embedder, store=acme, embedders={"far": _Shifted(embedder)})
    near = ids(ask(tool, "ferry in winter", top_k=2))
    far = ids(ask(tool, "ferry in winter", top_k=2, context={"model": "far"}))
    assert near != far and ids(ask(tool, "ferry in winter", top_k=2, context={"model": None})) == near
    unknown = ask(tool, "ferry", context={"model": "gpt-x"})
    assert (
        unknown["sources"] == [] and "'gpt-x' is not one of this tool's embedders ['far']" in unknown["error"]
    )
    options = ask(tool, "ferry", context={"providerOptions": {"dimensions": 64}})
    assert "providerOptions are not supported" in options["error"]
