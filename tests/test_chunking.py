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
