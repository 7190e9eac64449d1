"""E-book headers and licences stay in `documents` but are not chunked, so nothing downstream sees them;
front matter inside the content is chunked but blank to extraction."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.boilerplate import content_span, mask
from pipeline.ops.chunking import chunk_text
from pipeline.ops.extraction.offline import extract_unit

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "demo" / "a_christmas_carol.txt"


def test_the_gutenberg_header_and_licence_are_outside_the_content():
    text = SAMPLE.read_text(encoding="utf-8")
    span = content_span(text)
    assert span.removed == ("gutenberg_header", "gutenberg_licence")
    content = text[span.start : span.end]
    assert "Project Gutenberg" not in content  # the story never names the archive
    assert "Marley was dead" in content and "God bless Us, Every One" in content
    assert "Project Gutenberg Literary Archive Foundation" in text[span.end :]
    inside = sum(r.end - r.start for r in span.regions)
    assert span.outside(len(text)) == len(text) - len(content) + inside > 10_000


def test_text_without_markers_or_with_nothing_between_them_is_all_content():
    plain = content_span("Plain notes about a meeting.")
    assert (plain.start, plain.end, plain.removed) == (0, 28, ())
    empty = "*** START OF THE PROJECT GUTENBERG EBOOK X ***\n\n*** END OF THE PROJECT GUTENBERG EBOOK X ***"
    assert (content_span(empty).start, content_span(empty).end) == (0, len(empty))


def test_older_marker_wording_is_recognised_case_insensitively():
    text = "Header\n*** Start of this Project Gutenberg E-book Foo ***\nThe story.\n*** END OF THIS PROJECT GUTENBERG EBOOK FOO ***\nLicence"
    span = content_span(text)
    assert text[span.start : span.end].strip() == "The story."


def test_units_cover_only_the_content_with_offsets_into_the_whole_document():
    text = SAMPLE.read_text(encoding="utf-8")
    span = content_span(text)
    units = chunk_text("doc", text, 300, 50, span=(span.start, span.end))
    assert units[0].start_char >= span.start and units[-1].end_char <= span.end
    assert all(u.text == text[u.start_char : u.end_char] for u in units)
    assert not any("Project Gutenberg" in u.text for u in units)


# ---- front matter inside the content ------------------------------------------------------------------
def _region_text(text: str) -> list[str]:
    return [text[r.start : r.end] for r in content_span(text).regions]


def test_the_books_front_matter_is_found_and_its_story_is_not():
    text = SAMPLE.read_text(encoding="utf-8")
    span = content_span(text)
    regions = _region_text(text)
    kinds = {r.kind for r in span.regions}
    assert {"credits", "heading", "illustration_or_note", "front_section", "note_box"} <= kinds
    flat = " ".join(" ".join(regions).split())
    for front in (
        "Distributed Proofreading Team",
        "LIST OF ILLUSTRATIONS",
        "Tailpiece to Stave One",
        "STAVE THREE",
        "ILLUSTRATED BY ARTHUR RACKHAM",
        "I have endeavoured in this Ghostly",
    ):
        assert front in flat, front
    for story in ("Marley was dead, to begin with", "God bless Us, Every One", "Bob Cratchit, clerk to"):
        assert story not in flat, story  # the story and its list of characters stay
    assert all(span.start <= r.start < r.end <= span.end for r in span.regions)


def test_layout_rules_work_on_text_without_line_breaks():
    text = (
        "Produced by Jane Roe and the Online Distributed Proofreading Team at http://127.0.0.1/proofreaders "
        "(This file was produced from images generously made available by The Internet Archive.) "
        "[Illustration: A ship at sea.] CHAPTER IV THE RISE OF THE HOUSE Louis Papineau spoke first. "
        "Behind_the_Tech_Episode_29.txt KEVIN SCOTT: Yeah, that is right."
    )
    flat = " ".join(_region_text(text))
    assert "Proofreading Team at http://127.0.0.1/proofreaders" in flat and "Internet Archive.)" in flat
    assert "[Illustration: A ship at sea.]" in flat and "CHAPTER IV THE RISE OF THE HOUSE" in flat
    assert "Behind_the_Tech_Episode_29.txt" in flat and "KEVIN SCOTT:" in flat
    assert "Louis Papineau spoke first" not in flat and "Yeah, that is right" not in flat


def test_mask_blanks_regions_in_place_and_fences_them_with_paragraph_breaks():
    text = "He said so.\n\nSTAVE ONE\n\nMarley was dead."
    (region,) = content_span(text).regions
    masked = mask(text, [region])
    assert len(masked) == len(text) and "STAVE" not in masked and masked.endswith("Marley was dead.")
    assert masked[region.start] == masked[region.end - 1] == "\n"
    unit = mask(text[5:], [region], offset=5)  # a unit that starts inside the document
    assert unit == masked[5:]


def test_extraction_sees_no_caption_or_contents_entry():
    text = SAMPLE.read_text(encoding="utf-8")
    span = content_span(text)
    units = chunk_text("doc", text, 1200, 100, span=(span.start, span.end))
    names = set()
    for u in units[:8]:
        masked = mask(u.text, span.regions, u.start_char)
        names |= {e.name for e in extract_unit(masked, text_unit_id=u.id, document_id="doc").entities}
    assert not {"Tailpiece", "Heading", "STAVE THREE", "ARTHUR RACKHAM", "Suzanne Shell"} & names
    assert {"Bob Cratchit", "Ebenezer Scrooge"} <= names  # the list of characters is the book's own
