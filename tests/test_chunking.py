from __future__ import annotations

import pytest

from pipeline.core.tokens import count_tokens, get_encoding
from pipeline.ops.chunking import chunk_text


def test_offsets_round_trip_including_multibyte_characters():
    text = ("Scrooge signed it. 日本語のテキスト。🎄 Ünïcödé — ‘quotes’. " * 40).strip()
    units = chunk_text("doc", text, chunk_size=37, chunk_overlap=5)
    assert len(units) > 5
    for u in units:
        assert text[u.start_char : u.end_char] == u.text
    assert units[0].start_char == 0 and units[-1].end_char == len(text)


def test_windows_have_the_configured_size_and_overlap():
    text = " ".join(f"word{i}" for i in range(2000))
    units = chunk_text("doc", text, chunk_size=100, chunk_overlap=20)
    assert all(u.n_tokens == 100 for u in units[:-1])
    enc = get_encoding("o200k_base")
    tokens = enc.encode(text)
    # consecutive windows start 80 tokens apart: the first window's last 20 tokens open the second
    overlap = enc.decode(tokens[80:100])
    assert units[0].text.endswith(overlap) and units[1].text.startswith(overlap)
    assert units[1].start_char == len(enc.decode(tokens[:80]))


def test_ids_are_stable_and_distinct_per_document():
    a1 = chunk_text("doc-a", "Same words here. " * 50, 20, 5)
    a2 = chunk_text("doc-a", "Same words here. " * 50, 20, 5)
    b = chunk_text("doc-b", "Same words here. " * 50, 20, 5)
    assert [u.id for u in a1] == [u.id for u in a2]
    assert not {u.id for u in a1} & {u.id for u in b}


def test_short_and_empty_documents():
    assert chunk_text("d", "", 10, 2) == []
    (unit,) = chunk_text("d", "tiny", 10, 2)
    assert unit.text == "tiny" and unit.n_tokens == count_tokens("tiny")


def test_overlap_must_be_smaller_than_size():
    with pytest.raises(ValueError, match="chunk_overlap"):
        chunk_text("d", "text", 10, 10)


def _pages(n: int, sentences: int) -> tuple[str, list[int]]:
    """A paged text: n pages of `sentences` distinct sentences each, and the page starts."""
    text, starts = "", []
    for page in range(1, n + 1):
        starts.append(len(text))
        text += " ".join(f"Page {page} sentence {i} says something." for i in range(sentences)) + "\n\n"
    return text, starts


def _page_of(starts: list[int], offset: int) -> int:
    return max(i for i, s in enumerate(starts) if s <= offset)


def test_a_unit_crosses_at_most_one_page_break():
    # pages of ~70 tokens under 200-token windows: without breaks each unit would cover three or four pages
    text, starts = _pages(12, 8)
    units = chunk_text("doc", text, chunk_size=200, chunk_overlap=20, breaks=starts[1:])
    assert len(units) > 5
    for u in units:
        assert text[u.start_char : u.end_char] == u.text
        first, last = _page_of(starts, u.start_char), _page_of(starts, u.end_char - 1)
        assert last - first <= 1, (u.start_char, u.end_char)
    # the units still cover the whole text, in order, each overlapping or touching the next
    assert units[0].start_char == 0 and units[-1].end_char == len(text)
    for a, b in zip(units, units[1:], strict=False):
        assert a.start_char < b.start_char <= a.end_char < b.end_char
    # a unit cut short ends exactly where a page starts, and the next one opens with that page
    short = [(a, b) for a, b in zip(units, units[1:], strict=False) if a.end_char in starts]
    assert short and all(b.start_char == a.end_char for a, b in short)


def test_breaks_leave_a_window_that_crosses_one_break_whole():
    # pages longer than a window: a window crossing one break keeps its full size and overlap
    text, starts = _pages(3, 40)
    plain = chunk_text("doc", text, chunk_size=100, chunk_overlap=20)
    paged = chunk_text("doc", text, chunk_size=100, chunk_overlap=20, breaks=starts[1:])
    assert [u.n_tokens for u in paged[:-1]] == [100] * (len(paged) - 1)
    assert len(paged) - len(plain) in (0, 1, 2)  # a window may start at a break rather than before it


def test_pages_shorter_than_the_overlap_still_move_forward():
    # empty and near-empty pages: each window must still advance (no endless or repeated windows)
    text, starts = _pages(30, 1)
    breaks = starts[1:] + starts[5:8]  # repeated offsets, as empty pages give
    units = chunk_text("doc", text, chunk_size=50, chunk_overlap=40, breaks=breaks)
    ends = [u.end_char for u in units]
    assert ends == sorted(set(ends)) and ends[-1] == len(text)
    assert all(_page_of(starts, u.end_char - 1) - _page_of(starts, u.start_char) <= 1 for u in units)


def test_no_breaks_and_breaks_outside_the_span_chunk_as_before():
    text = " ".join(f"word{i}" for i in range(3000))
    before = chunk_text("doc", text, 100, 20, span=(500, 9000))
    assert chunk_text("doc", text, 100, 20, span=(500, 9000), breaks=[10, 400, 500, 9000, 12000]) == before
    assert chunk_text("doc", text, 100, 20, breaks=[]) == chunk_text("doc", text, 100, 20)


def _documents():
    from pipeline.ops.ingest import Document, document_id, documents_table

    book = (
        "The Project Gutenberg eBook of Tests\n\n*** START OF THE PROJECT GUTENBERG EBOOK TESTS ***\n\n"
        + "Scrooge counted his coins by candlelight while Marley's ghost rattled its chains. " * 60
        + "\n\n*** END OF THE PROJECT GUTENBERG EBOOK TESTS ***\nLicence text follows here."
    )
    plain = "Ada Abbot met Ben Brandt in Lisbon, and they spoke of ships for an hour. " * 40
    other = "A third document, short."
    return documents_table(
        [
            Document(document_id(x), t, x, f"{t}.txt", len(x.encode()), "2026-12-03T00:00:00Z")
            for t, x in (("book", book), ("plain", plain), ("other", other))
        ]
    )


def test_a_rechunk_reusing_the_previous_table_equals_a_fresh_one():
    from pipeline.ops.chunking import chunk_documents_table

    docs = _documents()
    first, _, _ = chunk_documents_table(docs.slice(0, 2), 200, 20, "o200k_base")
    fresh, fresh_docs, fresh_outside = chunk_documents_table(docs, 200, 20, "o200k_base")
    # the previous run held two of the three documents, in the other order
    previous, _, _ = chunk_documents_table(docs.take([1, 0]), 200, 20, "o200k_base")
    again, again_docs, again_outside = chunk_documents_table(docs, 200, 20, "o200k_base", previous)
    assert fresh_outside and again_outside == fresh_outside  # the book's header and licence, from metadata
    assert again.equals(fresh) and again.schema.metadata == fresh.schema.metadata
    assert again_docs.equals(fresh_docs)
    assert first.num_rows < fresh.num_rows


def test_previous_rows_are_taken_only_under_the_same_chunking():
    import pyarrow as pa

    from pipeline.ops.chunking import chunk_documents_table

    docs = _documents()
    previous, _, _ = chunk_documents_table(docs, 200, 20, "o200k_base")
    marked = previous.set_column(
        previous.schema.get_field_index("text"), "text", pa.array(["MARK"] * previous.num_rows)
    )
    # same settings: the stored rows are taken as they are (the marks show it) ...
    same, _, _ = chunk_documents_table(docs, 200, 20, "o200k_base", marked)
    assert set(same.column("text").to_pylist()) == {"MARK"}
    # ... other settings, or a table without the chunking tag, cut the documents again
    for size, table in ((300, marked), (200, marked.replace_schema_metadata({}))):
        cut, _, _ = chunk_documents_table(docs, size, 20, "o200k_base", table)
        assert "MARK" not in cut.column("text").to_pylist()


def test_front_matter_regions_are_stored_with_the_units_and_carried_on_reuse(monkeypatch):
    import pipeline.ops.chunking as chunking
    from pipeline.core.boilerplate import content_span
    from pipeline.core.stored_regions import REGIONS_KEY, stored_regions
    from pipeline.ops.ingest import Document, document_id, documents_table

    texts = {
        "captioned": "Marley was dead.\n\n[Illustration: a door knocker]\n\n" + "Scrooge sat alone. " * 80,
        "plain": "Ada Abbot met Ben Brandt in Lisbon, and they spoke of ships for an hour. " * 40,
    }
    docs = documents_table(
        [
            Document(document_id(x), t, x, f"{t}.txt", len(x.encode()), "2026-12-06T00:00:00Z")
            for t, x in texts.items()
        ]
    )
    fresh, _, _ = chunking.chunk_documents_table(docs, 200, 20, "o200k_base")
    expected = {document_id(x): content_span(x).regions for x in texts.values()}
    assert expected[document_id(texts["captioned"])] and not expected[document_id(texts["plain"])]
    assert stored_regions(fresh.schema.metadata) == {k: v for k, v in expected.items() if v}

    calls = []
    monkeypatch.setattr(chunking, "content_span", lambda text: calls.append(text) or content_span(text))
    again, _, _ = chunking.chunk_documents_table(docs, 200, 20, "o200k_base", fresh)
    assert calls == [] and again.schema.metadata == fresh.schema.metadata  # reused: the rules never ran
    # A table cut before the regions were stored is cut again, once, so that they are stored.
    older = fresh.replace_schema_metadata(
        {k: v for k, v in fresh.schema.metadata.items() if k != REGIONS_KEY}
    )
    upgraded, _, _ = chunking.chunk_documents_table(docs, 200, 20, "o200k_base", older)
    assert len(calls) == 2 and upgraded.equals(fresh) and upgraded.schema.metadata == fresh.schema.metadata
