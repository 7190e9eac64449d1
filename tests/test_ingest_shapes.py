"""Input shapes a migrating user brings, and an input folder that yields nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core import schema
from pipeline.index import input_documents
from pipeline.index.context import IndexContext
from pipeline.index.input_documents import NoDocumentsError
from pipeline.io.store import NamespaceStore
from pipeline.ops.ingest import read_documents
from pipeline.settings import Settings


def test_a_title_to_sentences_corpus_is_one_document_per_title(tmp_path: Path):
    corpus = {
        "Alan Turing": ["Alan Turing was a mathematician.", " He broke Enigma."],
        "Enigma": ["A cipher."],
    }
    (tmp_path / "hotpot_corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    result = read_documents(tmp_path)
    assert result.errors == []
    docs = {d.title: d.text for d in result.documents}
    assert docs == {"Alan Turing": "Alan Turing was a mathematician. He broke Enigma.", "Enigma": "A cipher."}


def test_an_object_with_a_text_column_is_still_one_record(tmp_path: Path):
    (tmp_path / "one.json").write_text(json.dumps({"title": "T", "text": "Body."}), encoding="utf-8")
    assert [(d.title, d.text) for d in read_documents(tmp_path).documents] == [("T", "Body.")]


def _ctx(tmp_path: Path) -> IndexContext:
    settings = Settings(storage_root=tmp_path / "storage")
    return IndexContext(NamespaceStore(settings.storage_root, "ns"), settings, None, None)  # type: ignore[arg-type]


def test_a_folder_whose_every_item_is_rejected_fails_the_run_with_the_errors(tmp_path: Path):
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "rows.json").write_text(
        json.dumps([{"body": "no text column"}, {"title": "x"}]), encoding="utf-8"
    )
    (folder / "empty.txt").write_text("", encoding="utf-8")
    ctx = _ctx(tmp_path)
    with pytest.raises(NoDocumentsError) as err:
        input_documents.run(ctx, folder)
    message = str(err.value)
    assert message.startswith("2 of 2 files rejected (see ingest_errors): ")
    assert "3 input item(s) and none became a document" in message
    assert "rows.json row 0: missing_text" in message and "empty.txt: empty" in message
    assert ctx.store.read_table(schema.INGEST_ERRORS).num_rows == 3  # kept for inspection
    assert not ctx.store.has_table(schema.INPUT_DOCUMENTS)


def test_an_empty_folder_indexes_nothing_without_failing(tmp_path: Path):
    folder = tmp_path / "input"
    folder.mkdir()
    report = input_documents.run(_ctx(tmp_path), folder)
    assert report.rows == 0


def test_queries_on_a_namespace_indexed_from_an_empty_folder_find_nothing_without_error(tmp_path: Path):
    """An empty folder indexes nothing; its empty LanceDB tables have no full-text index, and a search of
    them is an empty answer, not LanceDB's 'Cannot perform full text search' error."""
    from pipeline.query.retrieval.nearest import text_search
    from pipeline.vector_tool import LanceDBStore

    store = NamespaceStore(tmp_path / "storage", "empty")
    empty = schema.lance_text_units_schema(384).empty_table()
    store.replace_lance_table(schema.LANCE_TEXT_UNITS, empty, fts_columns=["text"])
    assert text_search(store, "scrooge", k=3) == []
    assert LanceDBStore(store).text_query(schema.LANCE_TEXT_UNITS, "scrooge", 3) == []
