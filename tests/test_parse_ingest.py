"""Parsed formats through the ingest (pipeline.ops.ingest -> pipeline.ops.parsed_files): every bad input is
its own ingest_errors status while the rest of the folder indexes, the layout map is stored with the
document, parses are cached by the file's bytes, and masked headers reach the chunker's regions."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pipeline.ops.ingest import IngestOptions, documents_table, read_documents
from pipeline.parse import Layout
from tests.conftest import shared_data
from tests.support.documents import (
    encrypted_pdf,
    pdf_pages,
    scanned_pdf,
    text_pdf,
    zero_page_pdf,
    zip_bomb,
)


def _docx(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Notes", level=1)
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _folder(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "in"
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def test_each_bad_input_has_its_status_and_the_other_files_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_OCR", "off")
    good_pdf = text_pdf([[("A page of real text.", 72, 700)], [("A second page.", 72, 700)]])
    root = _folder(
        tmp_path,
        {
            "good.pdf": good_pdf,
            "good.docx": _docx("Word text survives."),
            "page.html": b"<html><body><h1>Web</h1><p>HTML text.</p></body></html>",
            "locked.pdf": encrypted_pdf(),
            "truncated.pdf": good_pdf[: len(good_pdf) // 3],
            "empty_tree.pdf": zero_page_pdf(),
            "bomb.docx": zip_bomb(),
            "saved_as.pdf": b"<!DOCTYPE html><html><body>not a pdf</body></html>",
            "half_scanned.pdf": scanned_pdf(good_pdf, {1}),
        },
    )
    result = read_documents(root, IngestOptions())
    statuses = {(e.source_path, e.error_type) for e in result.errors}
    assert statuses == {
        ("locked.pdf", "encrypted"),
        ("truncated.pdf", "corrupt"),
        ("empty_tree.pdf", "zero_pages"),
        ("bomb.docx", "too_large_expanded"),
        ("saved_as.pdf", "wrong_type"),
        ("half_scanned.pdf", "no_text_layer"),  # page 2 unread; page 1 still indexes
    }
    titles = {d.title for d in result.documents}
    assert titles == {"good.pdf", "good.docx", "page.html", "half_scanned.pdf"}
    assert result.files_rejected == 5
    assert result.rejection_line() == "5 of 9 files rejected (see ingest_errors)"
    row = next(e for e in result.errors if e.error_type == "no_text_layer")
    assert "page 2 " in row.reason


def test_the_layout_map_is_stored_with_the_document(tmp_path: Path) -> None:
    root = _folder(
        tmp_path, {"manual.pdf": pdf_pages(str(shared_data("pdf_manuals", "gnuplot.pdf")), 36, 39)}
    )
    result = read_documents(root, IngestOptions())
    table = documents_table(result.documents)
    assert "layout" in table.schema.names
    (doc,) = result.documents
    layout = Layout.from_json(table.column("layout")[0].as_py())
    assert [p.number for p in layout.pages] == [1, 2, 3, 4]
    assert layout.pages[0].start == 0 and layout.pages[-1].end == len(doc.text)
    assert all(a.end == b.start for a, b in zip(layout.pages, layout.pages[1:], strict=False))
    assert len(layout.masked) == 4  # even and odd pages' headers each recur
    assert json.loads(table.column("metadata")[0].as_py())["pages"] == 4


def test_masked_headers_become_the_chunkers_regions_and_are_blanked(tmp_path: Path) -> None:
    from pipeline.core.boilerplate import mask_text_units
    from pipeline.core.stored_regions import stored_regions
    from pipeline.ops.chunking import chunk_documents_table

    root = _folder(
        tmp_path, {"manual.pdf": pdf_pages(str(shared_data("pdf_manuals", "gnuplot.pdf")), 36, 41)}
    )
    docs = documents_table(read_documents(root, IngestOptions()).documents)
    units, docs, _ = chunk_documents_table(docs, 300, 0, "o200k_base")
    layout = Layout.from_json(docs.column("layout")[0].as_py())
    (regions,) = stored_regions(units.schema.metadata).values()
    spans = {(r.start, r.end) for r in regions}
    assert all(any(s <= m.start and m.end <= e for s, e in spans) for m in layout.masked)
    masked = " ".join(mask_text_units(units, docs).column("text").to_pylist())
    assert "gnuplot 5.4" not in masked  # never extracted, never quoted
    assert "gnuplot 5.4" in " ".join(units.column("text").to_pylist())  # offsets kept


def test_an_unchanged_file_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.ops.parsed_files as files

    root = _folder(tmp_path, {"a.pdf": text_pdf([[("Cached text.", 72, 700)]]), "b.docx": _docx("Word.")})
    opts = IngestOptions(parse_cache_dir=str(tmp_path / "cache"))
    first = read_documents(root, opts)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(files.BoundedParser, "parse", refuse)
    again = read_documents(root, opts)
    assert [d.id for d in again.documents] == [d.id for d in first.documents]
    assert [d.layout for d in again.documents] == [d.layout for d in first.documents]
    (root / "b.docx").write_bytes(_docx("Edited."))  # changed bytes: parsed again, the PDF is not
    edited = read_documents(root, opts)
    assert [d.title for d in edited.documents] == ["a.pdf"]
    assert [(e.source_path, "parsed again" in e.reason) for e in edited.errors] == [("b.docx", True)]


def test_markdown_keeps_its_document_id_and_gains_sections(tmp_path: Path) -> None:
    from pipeline.ops.ingest import document_id

    text = "# Guide\n\nIntro.\n\n## Install\n\nSteps.\n"
    root = _folder(tmp_path, {"guide.md": text.encode(), "notes.rst": b"Title\n=====\n\nBody.\n"})
    docs = {d.title: d for d in read_documents(root, IngestOptions()).documents}
    assert docs["guide.md"].id == document_id(text) and docs["guide.md"].metadata == {"format": "md"}
    sections = Layout.from_json(docs["guide.md"].layout).sections
    assert [s.path for s in sections] == [("Guide",), ("Guide", "Install")]
    assert Layout.from_json(docs["notes.rst"].layout).sections[0].title == "Title"
