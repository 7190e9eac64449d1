"""E-book headers and licences stay in `documents` but are not chunked, so nothing downstream sees them."""

from __future__ import annotations

from pathlib import Path

from pipeline.ops.boilerplate import content_span
from pipeline.ops.chunking import chunk_text

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "demo" / "a_christmas_carol.txt"


def test_the_gutenberg_header_and_licence_are_outside_the_content():
    text = SAMPLE.read_text(encoding="utf-8")
    span = content_span(text)
    assert span.removed == ("gutenberg_header", "gutenberg_licence")
    content = text[span.start : span.end]
    assert "Project Gutenberg" not in content  # the story never names the archive
    assert "Marley was dead" in content and "God bless Us, Every One" in content
    assert "Project Gutenberg Literary Archive Foundation" in text[span.end :]
    assert span.outside(len(text)) == len(text) - len(content) > 10_000


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
