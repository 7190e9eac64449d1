"""DOCX, PPTX, HTML, EPUB, Markdown and reStructuredText into text and a layout map (pipeline.parse),
each file built by the real library that writes the format."""

from __future__ import annotations

import io

import pytest

from pipeline.parse import Parsed, ParseError, parse_bytes
from tests.support.documents import epub, zip_bomb


def _png() -> bytes:
    from PIL import Image  # python-pptx's own dependency

    out = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(out, "PNG")
    return out.getvalue()


def _section(parsed: Parsed, title: str):
    return next(s for s in parsed.layout.sections if s.title == title)


def test_docx_headings_tables_and_alt_text() -> None:
    import docx

    document = docx.Document()
    document.add_heading("Installation", level=1)
    document.add_paragraph("Run the ﬁrst installer.")  # a ligature, normalised by NFKC
    document.add_heading("Requirements", level=2)
    table = document.add_table(rows=2, cols=3)
    for r, row in enumerate([("os", "cpu", "ram"), ("linux", "x86", "4 GB")]):
        for col, value in enumerate(row):
            table.cell(r, col).text = value
    document.add_picture(io.BytesIO(_png()))
    document.inline_shapes[0]._inline.docPr.set("descr", "A diagram of the installer")
    document.add_paragraph("Figure 1: the installer", style="Caption")
    document.add_heading("Usage", level=1)
    document.add_paragraph("Start it.")
    out = io.BytesIO()
    document.save(out)

    parsed = parse_bytes(out.getvalue(), "docx")
    assert "Run the first installer." in parsed.text
    assert "os\tcpu\tram\nlinux\tx86\t4 GB" in parsed.text
    assert "A diagram of the installer" in parsed.text and "Figure 1: the installer" in parsed.text
    req = _section(parsed, "Requirements")
    assert req.path == ("Installation", "Requirements")
    assert parsed.text[req.start : req.end].rstrip().endswith("Figure 1: the installer")
    usage = _section(parsed, "Usage")
    assert usage.path == ("Usage",) and _section(parsed, "Installation").end == usage.start
    assert parsed.layout.pages == []  # a .docx has no physical pages until it is laid out


def test_docx_pages_break_where_the_file_says() -> None:
    """Explicit page breaks, pageBreakBefore, and Word's rendered break inside a paragraph each start a
    page; an explicit break followed by Word's rendered mark for the same place makes one page."""
    import docx
    from docx.oxml import OxmlElement

    document = docx.Document()
    document.add_heading("Installation", level=1)
    document.add_paragraph("Run the first installer.")
    document.add_page_break()  # a paragraph holding <w:br w:type="page"/>
    second = document.add_paragraph("Page two opens here.")
    second.runs[0]._r.insert(0, OxmlElement("w:lastRenderedPageBreak"))  # Word's mark, same place
    split = document.add_paragraph("The end of page two ")
    run = split.add_run("and the start of page three.")
    run._r.insert(0, OxmlElement("w:lastRenderedPageBreak"))
    fourth = document.add_paragraph("Page four stands alone.")
    fourth.paragraph_format.page_break_before = True
    out = io.BytesIO()
    document.save(out)

    parsed = parse_bytes(out.getvalue(), "docx")
    text, pages = parsed.text, parsed.layout.pages
    assert [p.number for p in pages] == [1, 2, 3, 4]
    assert text[pages[0].start : pages[0].end].split() == [
        "Installation",
        "Run",
        "the",
        "first",
        "installer.",
    ]
    assert text[pages[1].start :].startswith("Page two opens here.")
    assert text[pages[1].start : pages[1].end].rstrip().endswith("The end of page two")
    assert text[pages[2].start :].startswith("and the start of page three.")
    assert text[pages[3].start :].startswith("Page four stands alone.")
    assert parsed.layout.page_at(text.index("Installation")) == 1


def test_pptx_slides_are_pages_with_titles_tables_pictures_and_notes() -> None:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly results"
    first.placeholders[1].text = "Revenue grew 12%"
    first.notes_slide.notes_text_frame.text = "Mention the new office."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Regions"
    shape = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1))
    for r, row in enumerate([("region", "sales"), ("north", "40")]):
        for col, value in enumerate(row):
            shape.table.cell(r, col).text = value
    picture = second.shapes.add_picture(io.BytesIO(_png()), Inches(1), Inches(4))
    picture._element.nvPicPr.cNvPr.set("descr", "Map of the regions")
    out = io.BytesIO()
    deck.save(out)

    parsed = parse_bytes(out.getvalue(), "pptx")
    pages = parsed.layout.pages
    assert [p.number for p in pages] == [1, 2]
    one, two = (parsed.text[p.start : p.end] for p in pages)
    assert one.startswith("Quarterly results") and "Revenue grew 12%" in one and "new office" in one
    assert two.startswith("Regions") and "region\tsales\nnorth\t40" in two and "Map of the regions" in two
    assert [s.title for s in parsed.layout.sections] == ["Quarterly results", "Regions"]
    assert _section(parsed, "Regions").start == pages[1].start


def test_html_sections_tables_alt_text_and_captions() -> None:
    html = """<!DOCTYPE html><html><head><title>Guide</title><style>p{color:red}</style></head><body>
    <h1>Setup</h1><p>Install the <b>tool</b> ﬁrst.</p><script>var hidden = 1;</script>
    <h2>Options</h2><table><tr><th>flag</th><th>meaning</th></tr><tr><td>-v</td><td>verbose</td></tr></table>
    <figure><img src="a.png" alt="The options dialog"><figcaption>Figure 2: options</figcaption></figure>
    <h1>Running</h1><p>Run it.</p></body></html>"""
    parsed = parse_bytes(html.encode("utf-8"), "html")
    assert parsed.title == "Guide"
    assert "Install the tool first." in parsed.text
    assert "hidden" not in parsed.text and "color" not in parsed.text
    assert "flag\tmeaning\n-v\tverbose" in parsed.text
    assert "The options dialog" in parsed.text and "Figure 2: options" in parsed.text
    options = _section(parsed, "Options")
    assert options.path == ("Setup", "Options")
    assert parsed.text[options.start :].startswith("Options")
    assert options.end == _section(parsed, "Running").start


def test_html_site_navigation_and_page_chrome_are_masked_not_sections() -> None:
    html = b"""<html><body><header><a href="/">Site name</a></header>
    <nav><h2>Menu</h2><ul><li>Home</li><li>Pricing</li></ul></nav>
    <main><article><header><h1>Release notes</h1><p>By the team</p></header><p>Version 2 is out.</p>
    </article></main><footer>Copyright 2026 Example Ltd</footer></body></html>"""
    parsed = parse_bytes(html, "html")
    masked = {parsed.text[r.start : r.end]: r.kind for r in parsed.layout.masked}
    assert masked == {
        "Site name": "page_header",
        "Menu": "navigation",
        "Home": "navigation",
        "Pricing": "navigation",
        "Copyright 2026 Example Ltd": "page_footer",
    }
    assert [s.title for s in parsed.layout.sections] == ["Release notes"]  # the menu's h2 is no section
    assert "By the team" in parsed.text and "Version 2 is out." in parsed.text


def test_epub_chapters_take_their_titles_from_the_table_of_contents() -> None:
    data = epub(
        [
            ("one.xhtml", "<h1>The Beginning</h1><p>It was a dark night.</p><h2>Later</h2><p>Then dawn.</p>"),
            ("two.xhtml", "<p>The second chapter has no heading.</p>"),
        ]
    )
    parsed = parse_bytes(data, "epub")
    assert parsed.title == "A Book"
    titles = [(s.title, s.path) for s in parsed.layout.sections]
    assert titles == [
        ("Chapter 1", ("Chapter 1",)),
        ("The Beginning", ("Chapter 1", "The Beginning")),  # a heading unlike its contents entry nests
        ("Later", ("Chapter 1", "The Beginning", "Later")),
        ("Chapter 2", ("Chapter 2",)),
    ]
    two = _section(parsed, "Chapter 2")
    assert parsed.text[two.start : two.end] == "The second chapter has no heading."
    assert "It was a dark night." in parsed.text[_section(parsed, "Chapter 1").start : two.start]


def test_markdown_headings_keep_the_text_as_it_is() -> None:
    text = "# Title\n\nIntro.\n\n## Part A\n\n```\n# not a heading\n```\n\nSetext\n------\n\nBody.\n"
    parsed = parse_bytes(text.encode(), "md", text=text)
    assert parsed.text == text  # the document id (sha256 of the text) is unchanged by sections
    got = [(s.title, s.path, text[s.start : s.start + len(s.title)]) for s in parsed.layout.sections]
    assert got == [
        ("Title", ("Title",), "Title"),
        ("Part A", ("Title", "Part A"), "Part A"),
        ("Setext", ("Title", "Setext"), "Setext"),
    ]


def test_rst_heading_levels_follow_the_order_styles_appear() -> None:
    text = "=====\nGuide\n=====\n\nIntro.\n\nInstall\n-------\n\nSteps.\n\nLinux\n~~~~~\n\nApt.\n\nUse\n---\n\nRun.\n"
    parsed = parse_bytes(text.encode(), "rst", text=text)
    got = [(s.title, s.path) for s in parsed.layout.sections]
    assert got == [
        ("Guide", ("Guide",)),
        ("Install", ("Guide", "Install")),
        ("Linux", ("Guide", "Install", "Linux")),
        ("Use", ("Guide", "Use")),
    ]


@pytest.mark.parametrize(
    ("fmt", "data", "status"),
    [
        ("docx", zip_bomb(), "too_large_expanded"),
        ("docx", b"PK\x03\x04" + b"\x00" * 200, "corrupt"),
        ("pptx", b"%PDF-1.4 not a deck", "wrong_type"),
        ("epub", b"<html><body>a page saved as .epub</body></html>", "wrong_type"),
        ("epub", zip_bomb("OEBPS/one.xhtml"), "too_large_expanded"),
    ],
    ids=["docx_bomb", "docx_truncated", "pdf_named_pptx", "html_named_epub", "epub_bomb"],
)
def test_bad_office_and_epub_files_get_a_clear_status(fmt: str, data: bytes, status: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_bytes(data, fmt)
    assert err.value.error_type == status
