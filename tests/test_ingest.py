from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.ops.ingest import IngestOptions, document_id, read_documents


def test_text_and_markdown_files_become_documents_with_content_hash_ids(tmp_path):
    (tmp_path / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# Beta\n\nBody.", encoding="utf-8")
    result = read_documents(tmp_path)
    assert [d.title for d in result.documents] == ["a.txt", "sub/b.md"]
    assert result.documents[0].id == document_id("Alpha text.")
    assert result.errors == []


def test_bad_files_get_one_clear_error_each_and_do_not_stop_the_rest(tmp_path):
    (tmp_path / "ok.txt").write_text("Fine.", encoding="utf-8")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin.txt").write_bytes("naïve café".encode("latin-1"))
    (tmp_path / "empty.md").write_text("\n\n", encoding="utf-8")
    (tmp_path / "huge.txt").write_text("x" * 200, encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    result = read_documents(tmp_path, IngestOptions(max_document_bytes=100))
    kinds = {e.source_path: e.error_type for e in result.errors}
    assert kinds == {
        "bin.txt": "binary",
        "latin.txt": "encoding",
        "empty.md": "empty",
        "huge.txt": "too_large",
        "image.png": "unsupported",
    }
    latin = next(e for e in result.errors if e.source_path == "latin.txt")
    assert "offset 2" in latin.reason and "PIPELINE_FALLBACK_ENCODINGS" in latin.reason
    assert [d.title for d in result.documents] == ["ok.txt"]


def test_fallback_encoding_decodes_latin1_when_configured(tmp_path):
    (tmp_path / "latin.txt").write_bytes("naïve café".encode("latin-1"))
    result = read_documents(tmp_path, IngestOptions(fallback_encodings=("latin-1",)))
    assert result.documents[0].text == "naïve café"


def test_row_files_yield_one_document_per_row_with_row_level_errors(tmp_path):
    (tmp_path / "rows.json").write_text(
        json.dumps(
            [{"id": "x1", "title": "One", "text": "First row."}, {"title": "No text"}, {"text": "Third."}]
        ),
        encoding="utf-8",
    )
    (tmp_path / "rows.jsonl").write_text('{"text": "Line one."}\n{broken\n', encoding="utf-8")
    (tmp_path / "rows.csv").write_text("id,title,text\nc1,Csv,From CSV.\n", encoding="utf-8")
    pq.write_table(
        pa.table({"id": ["p1"], "title": ["Pq"], "text": ["From Parquet."]}), tmp_path / "rows.parquet"
    )
    result = read_documents(tmp_path)
    titles = sorted(d.title for d in result.documents)
    assert titles == ["Csv", "One", "Pq", "rows.json#2", "rows.jsonl#0"]
    one = next(d for d in result.documents if d.title == "One")
    assert one.metadata == {"format": "json", "row": 0, "source_id": "x1"}
    errors = {(e.source_path, e.row, e.error_type) for e in result.errors}
    assert ("rows.json", 1, "missing_text") in errors
    # a malformed JSONL line costs that row only, with the line number in the reason
    jsonl = next(e for e in result.errors if e.source_path == "rows.jsonl")
    assert (jsonl.row, jsonl.error_type) == (1, "malformed") and "line 2" in jsonl.reason


def test_configurable_columns(tmp_path):
    (tmp_path / "rows.json").write_text(json.dumps([{"name": "N", "body": "Body text."}]), encoding="utf-8")
    result = read_documents(tmp_path, IngestOptions(title_column="name", text_column="body"))
    assert [(d.title, d.text) for d in result.documents] == [("N", "Body text.")]


def test_same_text_twice_is_one_document(tmp_path):
    (tmp_path / "a.txt").write_text("Same.", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Same.", encoding="utf-8")
    result = read_documents(tmp_path)
    assert len(result.documents) == 1 and result.duplicates == 1


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_documents(tmp_path / "nope")
