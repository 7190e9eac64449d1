"""End to end through Dagster: documents -> text units -> embeddings for two namespaces.

Real Dagster instance (temp DAGSTER_HOME, SQLite), real Parquet, real LanceDB, real MiniLM embeddings.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assets.launch import run_index
from pipeline.core import schema
from pipeline.core.boilerplate import content_span
from pipeline.core.namespace import InvalidNamespaceError
from pipeline.core.stored_regions import stored_regions
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder
from pipeline.io.store import NamespaceStore
from pipeline.ops.chunking import offset_mismatches
from pipeline.query.retrieval.nearest import text_search, vector_search
from pipeline.runtime import open_embedding_cache
from pipeline.settings import Settings
from tests.conftest import shared_data


def _ws(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dagster_instance):
    storage = tmp_path_factory.mktemp("storage")
    old = os.environ.get("PIPELINE_STORAGE_ROOT")
    os.environ["PIPELINE_STORAGE_ROOT"] = str(storage)

    mixed = tmp_path_factory.mktemp("mixed_input")
    (mixed / "good.txt").write_text(
        "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine in 1843.",
        encoding="utf-8",
    )
    (mixed / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (mixed / "latin1.txt").write_bytes("Un café à Paris, s'il vous plaît.".encode("latin-1"))
    (mixed / "empty.txt").write_text("   \n", encoding="utf-8")

    results = {
        "carol": run_index("carol", input_dir=str(shared_data("christmas_carol")), instance=dagster_instance),
        "mixed": run_index("mixed", input_dir=str(mixed), instance=dagster_instance),
    }
    yield {"storage": storage, "results": results, "instance": dagster_instance}
    if old is None:
        os.environ.pop("PIPELINE_STORAGE_ROOT", None)
    else:
        os.environ["PIPELINE_STORAGE_ROOT"] = old


def _embedder(storage: Path) -> CachedEmbedder:
    # The pipeline's own embedding cache: the vectors the index was built with are already there.
    return CachedEmbedder(LocalMiniLMEmbedder(), open_embedding_cache(Settings(storage_root=str(storage))))


def _step(result, asset: str) -> dict:
    return next(s.metadata for s in result.steps if s.asset == asset)


def test_both_namespaces_materialize_the_indexing_assets(indexed):
    for result in indexed["results"].values():
        assert result.success, result.failures
        assert {s.asset for s in result.steps} >= {
            "input_documents",
            "base_text_units",
            "documents",
            "text_unit_embeddings",
        }


def test_the_ebook_licence_is_kept_in_documents_but_reaches_no_text_unit(indexed):
    store = NamespaceStore(indexed["storage"], "carol")
    (doc,) = [d for d in store.read_table(schema.DOCUMENTS).to_pylist() if d["title"].endswith("24022.txt")]
    assert "Project Gutenberg Literary Archive Foundation" in doc["text"]  # the document is intact
    units = [u for u in store.read_table(schema.TEXT_UNITS).to_pylist() if u["document_id"] == doc["id"]]
    assert units and not any("Project Gutenberg" in u["text"] for u in units)
    meta = _step(indexed["results"]["carol"], "base_text_units")
    outside = len(doc["text"]) - (max(u["end_char"] for u in units) - min(u["start_char"] for u in units))
    inside = sum(r.end - r.start for r in content_span(doc["text"]).regions)  # front matter, chunked
    assert meta["boilerplate_chars_by_document"][doc["id"]] == outside + inside
    assert outside > 10_000 and inside > 1_000
    # The final text units carry the regions chunking found, for the queries that blank front matter.
    stored = stored_regions(store.read_schema(schema.TEXT_UNITS).metadata)
    assert stored is not None and stored[doc["id"]] == content_span(doc["text"]).regions


def test_bad_files_are_reported_with_reasons_and_good_ones_indexed(indexed):
    store = NamespaceStore(indexed["storage"], "mixed")
    errors = {r["source_path"]: r for r in store.read_table(schema.INGEST_ERRORS).to_pylist()}
    assert set(errors) == {"binary.txt", "latin1.txt", "empty.txt"}
    assert errors["binary.txt"]["error_type"] == "binary"
    assert errors["latin1.txt"]["error_type"] == "encoding" and "UTF-8" in errors["latin1.txt"]["reason"]
    assert errors["empty.txt"]["error_type"] == "empty"
    docs = store.read_table(schema.DOCUMENTS).to_pylist()
    assert [d["title"] for d in docs] == ["good.txt"]
    meta = _step(indexed["results"]["mixed"], "input_documents")
    assert meta["documents"] == 1 and meta["errors"] == 3
    assert "latin1.txt" in meta["ingest_errors"]


@pytest.mark.parametrize(
    "sentence",
    [
        "Marley was dead, to begin with. There is no doubt whatever about that.",
        "It _was_ a turkey! He never could have stood upon his legs, that bird.",
    ],
)
def test_vector_search_for_a_sentence_returns_its_chunk(indexed, sentence):
    store = NamespaceStore(indexed["storage"], "carol")
    hits = vector_search(store, _embedder(indexed["storage"]), sentence, k=3)
    assert sentence in _ws(hits[0]["text"])


def test_full_text_search_for_a_rare_word_returns_its_chunk(indexed):
    store = NamespaceStore(indexed["storage"], "carol")
    hits = text_search(store, "grindstone", k=3)
    assert hits and "grindstone" in hits[0]["text"]


def test_offsets_round_trip_for_every_chunk(indexed):
    for ns in ("carol", "mixed"):
        store = NamespaceStore(indexed["storage"], ns)
        docs, units = store.read_table(schema.DOCUMENTS), store.read_table(schema.TEXT_UNITS)
        assert units.num_rows > 0
        assert offset_mismatches(docs, units) == []
        lance = store.open_lance_table(schema.LANCE_TEXT_UNITS).to_arrow().to_pylist()
        text_of = dict(zip(docs.column("id").to_pylist(), docs.column("text").to_pylist(), strict=True))
        assert all(text_of[r["document_id"]][r["start_char"] : r["end_char"]] == r["text"] for r in lance)


def test_documents_gain_text_unit_ids(indexed):
    store = NamespaceStore(indexed["storage"], "carol")
    docs = store.read_table(schema.DOCUMENTS).to_pylist()
    units = store.read_table(schema.TEXT_UNITS)
    assert sorted(i for d in docs for i in d["text_unit_ids"]) == sorted(units.column("id").to_pylist())


def test_search_in_one_namespace_never_returns_another_namespaces_rows(indexed):
    storage = indexed["storage"]
    carol_ids = set(NamespaceStore(storage, "carol").read_table(schema.TEXT_UNITS).column("id").to_pylist())
    mixed = NamespaceStore(storage, "mixed")
    mixed_ids = set(mixed.read_table(schema.TEXT_UNITS).column("id").to_pylist())
    # A question about the book, asked in the other namespace, only sees that namespace's rows.
    hits = vector_search(mixed, _embedder(storage), "Scrooge and the ghost of Marley", k=10)
    assert hits and {h["id"] for h in hits} <= mixed_ids
    assert not {h["id"] for h in hits} & carol_ids
    assert {h["id"] for h in text_search(mixed, "Scrooge", k=10)} <= mixed_ids


def test_invalid_namespace_is_rejected_with_a_clear_error(indexed):
    with pytest.raises(InvalidNamespaceError, match="invalid namespace"):
        NamespaceStore(indexed["storage"], "../carol")
    with pytest.raises(InvalidNamespaceError, match=r"\^\[a-z0-9\]"):
        run_index("Bad Name", instance=indexed["instance"])


def test_rematerializing_unchanged_input_computes_no_embeddings(indexed, tmp_path):
    first = _step(indexed["results"]["carol"], "text_unit_embeddings")
    assert first["embeddings_computed"] == first["pieces"] > 0
    again = run_index("carol", input_dir=str(shared_data("christmas_carol")), instance=indexed["instance"])
    assert again.success
    meta = _step(again, "text_unit_embeddings")
    assert meta["embeddings_computed"] == 0
    assert meta["embedding_cache_hits"] == first["pieces"]


def test_partitions_and_materializations_are_recorded_in_the_dagster_instance(indexed):
    from dagster import AssetKey

    instance = indexed["instance"]
    assert set(instance.get_dynamic_partitions("namespace")) >= {"carol", "mixed"}
    event = instance.get_latest_materialization_event(AssetKey("text_unit_embeddings"))
    assert event is not None
    assert event.asset_materialization.partition in {"carol", "mixed"}
