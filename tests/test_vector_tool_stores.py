"""Each store's database_config options change what the real store returns: LanceDB on disk,
PostgreSQL 16 + pgvector started by pgserver, embedded Chroma. Queries here use synthetic vectors; the
embedder is a lookup table from query text to vector (the store, not the embedding, is under test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from pipeline.io.store import NamespaceStore
from pipeline.vector_tool import (
    ChromaStore,
    LanceDBStore,
    PgVectorStore,
    create_vector_query_tool,
    store_query_params,
    sync_text_units,
)
from tests.conftest import REPO_ROOT
from tests.support.pg import pg_dsn  # noqa: F401 - session fixture: a throwaway PostgreSQL server

N, DIM = 1000, 8
RNG = np.random.default_rng(7)
VECTORS = RNG.normal(size=(N, DIM)).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)
IDS = [f"r{i:04d}" for i in range(N)]
WORDS = ("apple", "harbour", "lantern", "meadow")
DOCS = [f"row {i} about the {WORDS[i % 4]}" for i in range(N)]
META = [{"group": "even" if i % 2 == 0 else "odd", "i": i, "word": WORDS[i % 4]} for i in range(N)]
QUERIES = {f"q{n}": VECTORS[n] * 0.8 + RNG.normal(size=DIM).astype(np.float32) * 0.2 for n in range(5)}
QUERIES["lantern"] = QUERIES["q0"]


class LookupEmbedder:
    dimension = DIM

    def embed(self, texts):
        return np.stack([QUERIES[t] for t in texts])


def exact_top(query, k):
    q = query / np.linalg.norm(query)
    return [IDS[i] for i in np.argsort(-(VECTORS @ q), kind="stable")[:k]]


def run(store, database_config=None, query="q0", top_k=40, filter=None, index="items"):
    tool = create_vector_query_tool(
        index, LookupEmbedder(), store=store, database_config=database_config, enable_filter=True
    )
    out = tool.execute({"query_text": query, "top_k": top_k, "filter": json.dumps(filter or {})})
    assert "error" not in out, out.get("error")
    return out["sources"]


def ids(sources):
    return [s["id"] for s in sources]


# ---- database_config mapping ---------------------------------------------------------------------------
def test_each_store_receives_only_its_own_options():
    config = {
        "lancedb": {"nprobes": 4},
        "pgvector": {"minScore": 0.5, "ef": 40, "probes": 3, "typo": 1},
        "chroma": {"where": {"a": 1}, "whereDocument": {"$contains": "x"}},
        "pinecone": {"namespace": "ns1"},
    }
    assert store_query_params("pgvector", config) == {
        "namespace": "ns1",
        "min_score": 0.5,
        "ef": 40,
        "probes": 3,
    }
    assert store_query_params("chroma", config) == {
        "namespace": "ns1",
        "where": {"a": 1},
        "where_document": {"$contains": "x"},
    }
    assert store_query_params("lancedb", config) == {"namespace": "ns1", "nprobes": 4}
    assert store_query_params("custom", {"custom": {"x": 1}}) == {"x": 1}
    assert store_query_params("lancedb", None) == {}


# ---- LanceDB ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lance(tmp_path_factory):
    ns = NamespaceStore(tmp_path_factory.mktemp("lance"), "items-ns")
    table = pa.table(
        {
            "id": IDS,
            "text": DOCS,
            "group": [m["group"] for m in META],
            "i": [m["i"] for m in META],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(VECTORS.reshape(-1)), DIM),
        }
    )
    ns.replace_lance_table("items", table, fts_columns=("text",))
    from lancedb.index import IvfFlat, IvfPq

    ns.replace_lance_table("items_ivf", table).create_index(
        "vector", config=IvfFlat(distance_type="cosine", num_partitions=8)
    )
    ns.replace_lance_table("items_pq", table).create_index(
        "vector", config=IvfPq(distance_type="cosine", num_partitions=2, num_sub_vectors=2)
    )
    return LanceDBStore(ns)


def test_lancedb_exact_search_matches_numpy(lance):
    assert ids(run(lance, top_k=10)) == exact_top(QUERIES["q0"], 10)


def test_lancedb_where_prefilters_rows(lance):
    got = run(lance, {"lancedb": {"where": "i < 100 AND \"group\" = 'odd'"}}, top_k=30)
    assert len(got) == 30 and all(s["metadata"]["i"] < 100 and s["metadata"]["group"] == "odd" for s in got)


def test_lancedb_nprobes_trades_recall(lance):
    def recall(nprobes):
        found = []
        for q in QUERIES:
            tool = create_vector_query_tool(
                "items_ivf", LookupEmbedder(), store=lance, database_config={"lancedb": {"nprobes": nprobes}}
            )
            out = tool.execute({"query_text": q, "top_k": 20})
            found.append(len(set(ids(out["sources"])) & set(exact_top(QUERIES[q], 20))) / 20)
        return float(np.mean(found))

    assert recall(8) == 1.0  # every partition searched: exact
    assert recall(1) < 0.9


def test_lancedb_refine_factor_gives_exact_scores(lance):
    exact = {s["id"]: s["score"] for s in run(lance, top_k=40)}  # flat table: exact cosine
    raw = run(lance, None, top_k=5, index="items_pq")
    refined = run(lance, {"lancedb": {"refine_factor": 20}}, top_k=5, index="items_pq")
    assert max(abs(s["score"] - exact.get(s["id"], 9.0)) for s in raw) > 1e-3  # PQ scores are approximate
    assert [s["score"] for s in refined] == pytest.approx([exact[i] for i in ids(refined)], abs=1e-5)
    assert ids(refined) == ids(run(lance, top_k=5))


def test_lancedb_distance_option_changes_the_metric(lance):
    cosine = run(lance, {"lancedb": {"distance": "cosine"}}, top_k=5)
    l2 = run(lance, {"lancedb": {"distance": "l2"}}, top_k=5)
    assert ids(cosine) == ids(l2)  # unit vectors: same order ...
    assert cosine[0]["score"] != pytest.approx(l2[0]["score"])  # ... on another scale (1 / (1 + squared l2))
    assert cosine[0]["score"] == pytest.approx(
        float(VECTORS[IDS.index(cosine[0]["id"])] @ (QUERIES["q0"] / np.linalg.norm(QUERIES["q0"]))), abs=1e-5
    )


def test_lancedb_hybrid_adds_full_text_matches(lance):
    def lanterns(sources):
        return sum(s["document"].endswith("lantern") for s in sources)

    plain = run(lance, query="lantern", top_k=10)  # "lantern" embeds as q0 (see QUERIES)
    hybrid = run(lance, {"lancedb": {"hybrid": True}}, query="lantern", top_k=10)
    assert lanterns(hybrid) > lanterns(plain)


def test_lancedb_tool_filter_and_where_are_anded(lance):
    got = run(
        lance, {"lancedb": {"where": "i < 200"}}, top_k=50, filter={"group": "even", "i": {"$gte": 100}}
    )
    assert got and all(100 <= s["metadata"]["i"] < 200 and s["metadata"]["group"] == "even" for s in got)


# ---- pgvector --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pg(pg_dsn):  # noqa: F811
    stores = {}
    for kind in ("none", "hnsw", "ivfflat"):
        store = PgVectorStore(pg_dsn, schema=f"opts_{kind}")
        store.create_index("items", DIM, index_type=kind, lists=10)
        store.upsert("items", IDS, VECTORS, META, DOCS)
        stores[kind] = store
    yield stores
    for store in stores.values():
        store.close()


def test_pgvector_exact_search_matches_numpy(pg):
    assert ids(run(pg["none"], top_k=10)) == exact_top(QUERIES["q0"], 10)


def test_pgvector_min_score_drops_low_scoring_rows(pg):
    everything = run(pg["none"], top_k=40)
    kept = run(pg["none"], {"pgvector": {"min_score": 0.7}}, top_k=40)
    assert min(s["score"] for s in everything) < 0.7
    assert kept and all(s["score"] >= 0.7 for s in kept)
    assert ids(kept) == [i for i in ids(everything) if i in set(ids(kept))]
    assert len(kept) == sum(1 for s in everything if s["score"] >= 0.7)


def test_pgvector_ef_bounds_an_hnsw_scan(pg):
    assert len(run(pg["hnsw"], {"pgvector": {"ef": 5}}, top_k=40)) == 5  # hnsw returns at most ef_search rows
    assert len(run(pg["hnsw"], {"pgvector": {"ef": 100}}, top_k=40)) == 40


def test_pgvector_probes_widen_an_ivfflat_scan(pg):
    exact = set(exact_top(QUERIES["q0"], 40))
    one = set(ids(run(pg["ivfflat"], {"pgvector": {"probes": 1}}, top_k=40)))
    every = set(ids(run(pg["ivfflat"], {"pgvector": {"probes": 10}}, top_k=40)))
    assert every == exact and len(one & exact) < 40


def test_pgvector_filters(pg):
    got = run(
        pg["none"],
        top_k=20,
        filter={"group": "odd", "i": {"$lt": 300}, "word": {"$in": ["apple", "harbour"]}},
    )
    assert got and all(
        s["metadata"]["group"] == "odd"
        and s["metadata"]["i"] < 300
        and s["metadata"]["word"] in ("apple", "harbour")
        for s in got
    )
    either = run(pg["none"], top_k=20, filter={"$or": [{"i": 3}, {"i": {"$gte": 998}}]})
    assert sorted(ids(either)) == ["r0003", "r0998", "r0999"]
    quoted = run(pg["none"], top_k=5, filter={"word": "50% o'clock"})
    assert quoted == []


def test_pgvector_resolver_schema_per_tenant(pg_dsn):  # noqa: F811
    for tenant, rows in (("acme", range(0, 10)), ("globex", range(10, 20))):
        store = PgVectorStore(pg_dsn, schema=f"tenant_{tenant}")
        store.create_index("items", DIM, index_type="none")
        store.upsert(
            "items",
            [IDS[i] for i in rows],
            VECTORS[list(rows)],
            [META[i] for i in rows],
            [DOCS[i] for i in rows],
        )
        store.close()
    tool = create_vector_query_tool(
        "items",
        LookupEmbedder(),
        store=lambda ctx: PgVectorStore(pg_dsn, schema=f"tenant_{ctx['tenant_id']}"),
    )
    acme = tool.execute({"query_text": "q0", "top_k": 50}, {"tenant_id": "acme"})
    globex = tool.execute({"query_text": "q0", "top_k": 50}, {"tenant_id": "globex"})
    assert sorted(ids(acme["sources"])) == IDS[0:10]
    assert sorted(ids(globex["sources"])) == IDS[10:20]


def test_pgvector_include_vectors_and_missing_index(pg):
    tool = create_vector_query_tool("items", LookupEmbedder(), store=pg["none"], include_vectors=True)
    out = tool.execute({"query_text": "q0", "top_k": 1})
    assert out["sources"][0]["vector"] == pytest.approx(
        VECTORS[IDS.index(out["sources"][0]["id"])].tolist(), abs=1e-6
    )
    missing = tool.execute({"query_text": "q0", "top_k": 1}, {"index_name": "nothing_here"})
    assert missing["sources"] == [] and "no such index" in missing["error"]


# ---- Chroma ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    store = ChromaStore(tmp_path_factory.mktemp("chroma"))
    store.create_index("items")
    store.upsert("items", IDS, VECTORS, META, DOCS)
    return store


def test_chroma_search_matches_numpy(chroma):
    got = run(chroma, top_k=10)
    assert ids(got) == exact_top(QUERIES["q0"], 10)


def test_chroma_where_and_where_document(chroma):
    got = run(chroma, {"chroma": {"where": {"group": "odd"}}}, top_k=20)
    assert len(got) == 20 and all(s["metadata"]["group"] == "odd" for s in got)
    got = run(chroma, {"chroma": {"where_document": {"$contains": "lantern"}}}, top_k=20)
    assert len(got) == 20 and all(s["document"].endswith("lantern") for s in got)
    both = run(chroma, {"chroma": {"where": {"i": {"$lt": 100}}}}, top_k=20, filter={"word": "meadow"})
    assert both and all(s["metadata"]["i"] < 100 and s["metadata"]["word"] == "meadow" for s in both)


# ---- syncing a namespace's text units, and the CLI over each store ----------------------------------------
@pytest.fixture(scope="module")
def indexed_ns(tmp_path_factory):
    """A namespace indexed by the real pipeline functions (MiniLM vectors, pieces, FTS)."""
    from pipeline.caches.sqlite_embedding import EmbeddingCache
    from pipeline.embeddings.cached import CachedEmbedder
    from pipeline.embeddings.minilm import LocalMiniLMEmbedder
    from tests.support.vector_corpus import write_corpus

    root = tmp_path_factory.mktemp("sync")
    embedder = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(root / "_cache" / "embeddings.sqlite"))
    return root, write_corpus(root, "acme", embedder)


def test_sync_text_units_copies_rows_and_drops_stale_ones(indexed_ns, pg_dsn, tmp_path):  # noqa: F811
    root, ns = indexed_ns
    lance_rows = LanceDBStore(ns).index_rows("text_units")
    for target in (PgVectorStore(pg_dsn, schema="sync_acme"), ChromaStore(tmp_path / "chroma")):
        target.create_index("text_units", 384)
        target.upsert("text_units", ["stale"], np.ones((1, 384), np.float32), [{}], ["gone"])
        assert sync_text_units(target, ns) == len(lance_rows.ids)
        rows = target.index_rows("text_units")
        assert rows.ids == sorted(lance_rows.ids)
        order = [lance_rows.ids.index(i) for i in rows.ids]
        assert np.allclose(rows.vectors, lance_rows.vectors[order], atol=1e-6)
        assert rows.metadata[0]["document_title"] == lance_rows.metadata[order[0]]["document_title"]


@pytest.mark.parametrize("kind", ["pgvector", "chroma"])
def test_cli_queries_other_stores(indexed_ns, pg_dsn, kind):  # noqa: F811
    root, _ = indexed_ns
    env = {**os.environ, "PIPELINE_STORAGE_ROOT": str(root), "PIPELINE_PGVECTOR_DSN": pg_dsn}
    cmd = [sys.executable, "-m", "assets", "query", "vector", "--namespace", "acme", "--store", kind]
    out = subprocess.run(
        [
            *cmd,
            "--top-k",
            "3",
            "--filter",
            '{"document_title": "harbour.txt"}',
            "--json",
            "when does the ferry stop?",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    hits = json.loads(out.stdout)
    assert len(hits) == 3 and hits[0]["id"] == "acme-harbour.txt-1"
    assert all(h["document_title"] == "harbour.txt" for h in hits)
