"""Nothing an answer quotes is anything but the document's prose (issue 71): no running header or footer,
page number or contents line in an answer's sentences, its highlighted quotes, or the entity
descriptions, claims and reports those come from; sentences are not cut at a page reference; missing
glyphs are mended at parse time; a contents passage ranks below the body.

The end-to-end test indexes a real dev manual (the GNU Libtasn1 manual, 36 pages, with a dotted table of
contents, 'Chapter 4: Function reference 9' headers and page numbers) offline, and asks its dev questions
in basic, local, DRIFT and global."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.core import schema
from pipeline.core.boilerplate import content_span
from pipeline.core.sentences import split_sentences
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import normalize
from tests.conftest import shared_data
from tests.support.quoted_prose import QuotedProse, documents_lines

MODES = ("basic", "local", "drift", "global")


# ---- glyphs mended at parse time --------------------------------------------------------------------
def test_a_missing_glyph_opening_a_line_is_a_bullet_and_elsewhere_is_dropped() -> None:
    # gnuplot's manual: PDFium reads its list bullet as the C1 control U+0088
    assert normalize("\x88 All evaluation of expressions") == "• All evaluation of expressions"
    assert normalize("  \uf0b7 Symbol-font bullet") == "  • Symbol-font bullet"
    assert normalize("a box\ufffd here and \ue000there") == "a box here and there"
    assert normalize("no\x07 bell") == "no bell"
    assert normalize("line one\n\ufffd line two") == "line one\n• line two"


def test_ligatures_and_detached_accents_are_mended() -> None:
    assert normalize("the ﬁle and the ﬂow, eﬀect") == "the file and the flow, effect"
    # LaTeX accents come out as a spacing accent before the letter (NFKC makes it space + combining)
    assert (
        normalize("Hans-Bernhard Br\u00a8oker, P\u00b4eter Juh\u00b4asz")
        == "Hans-Bernhard Bröker, Péter Juhász"
    )
    assert normalize("J\u00b4er\u02c6ome Lodewyck") == "Jérôme Lodewyck"
    assert normalize("a caret ^ and x \u02c6 y stay") == "a caret ^ and x \u02c6 y stay"


# ---- sentences are not cut at a page reference --------------------------------------------------------
def _texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


def test_a_page_reference_in_parentheses_does_not_end_a_sentence() -> None:
    text = (
        "To end it from a script, see pause mouse close (p. 164). Other terminals differ.\n"
        "Commenting out a continued line comments out the whole command (see comments (p. 33)). But "
        "note the error."
    )
    assert _texts(text) == [
        "To end it from a script, see pause mouse close (p. 164).",
        "Other terminals differ.",
        "Commenting out a continued line comments out the whole command (see comments (p. 33)).",
        "But note the error.",
    ]


def test_p_and_pp_are_abbreviations_and_a_bracket_left_open_changes_nothing() -> None:
    assert _texts("As shown on p. 12 and pp. 14-15 of it. Next.") == [
        "As shown on p. 12 and pp. 14-15 of it.",
        "Next.",
    ]
    # an opening parenthesis with no close nearby does not swallow the sentences after it
    assert _texts("Items (a, b. One more. Another.") == ["Items (a, b.", "One more.", "Another."]


# ---- contents lines are front matter ----------------------------------------------------------------
def test_spaced_dot_leaders_make_a_contents_list() -> None:
    text = (
        "Table of Contents\n\n1 Introduction . . . . . . . . . . . . 1\n\n2 ASN.1 structure handling . . . . 2\n"
        "2.1 ASN.1 syntax . . . . . . . . . . 2\n2.2 Naming . . . . . . . . . . . . 3\n\n"
        "1 Introduction\n\nThis document describes the Libtasn1 library.\n"
    )
    contents = [r for r in content_span(text).regions if r.kind == "contents"]
    assert len(contents) == 1
    masked = text[contents[0].start : contents[0].end]
    assert "Naming" in masked and "This document" not in masked


def test_a_tabbed_list_after_a_contents_heading_is_contents_but_a_tabbed_table_is_not() -> None:
    toc = "Contents\n\nI Gnuplot\t21\n\nCopyright\t21\n\nIntroduction\t21\nNew features\t23\n\nBody text here.\n"
    spans = [toc[r.start : r.end] for r in content_span(toc).regions if r.kind == "contents"]
    assert spans and "New features" in spans[0] and "Body" not in spans[0]
    table = "The widths:\n\nsmall\t10\nmedium\t20\nlarge\t30\n\nThat is all.\n"
    assert not [r for r in content_span(table).regions if r.kind == "contents"]


# ---- the dev manual end to end --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """libtasn1.pdf indexed offline (the default engine and method) into a storage root of its own."""
    from pipeline.index.run import index_folder
    from pipeline.settings import Settings

    folder = tmp_path_factory.mktemp("manual")
    (folder / "libtasn1.pdf").write_bytes(shared_data("pdf_manuals", "libtasn1.pdf").read_bytes())
    root = tmp_path_factory.mktemp("storage")
    index_folder("manual", folder, settings=Settings(storage_root=root), log=lambda m: None)
    lines = shared_data("pdf_manuals", "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [q["question"] for q in map(json.loads, lines) if "libtasn1.pdf" in q["gold_documents"]]
    assert questions
    return root, questions


def _documents(root: Path) -> QuotedProse:
    store = NamespaceStore(root, "manual")
    docs = documents_lines(store.read_table(schema.DOCUMENTS, columns=["id", "text", "layout"]).to_pylist())
    found = QuotedProse(docs)
    assert found.headers and found.toc_lines  # the manual has both: the check below can fail
    return found


def test_descriptions_claims_and_reports_hold_no_header_or_contents_line(manual) -> None:
    root, _ = manual
    found = _documents(root)
    store = NamespaceStore(root, "manual")
    columns = {
        schema.ENTITIES: ["description"],
        schema.RELATIONSHIPS: ["description"],
        schema.COVARIATES: ["description", "source_text"],
        schema.COMMUNITY_REPORTS: ["summary", "full_content"],
    }
    for table, names in columns.items():
        for row in store.read_table(table, columns=names).to_pylist():
            for text in row.values():
                found.add(SimpleNamespace(answer=text or ""))
    assert found.counts["sentences"] > 100
    assert (found.counts["header_footer"], found.counts["toc"]) == (0, 0), found.examples


@pytest.mark.parametrize("mode", MODES)
def test_answers_quote_no_header_footer_or_contents_line(manual, mode: str) -> None:
    from pipeline.api import answer
    from pipeline.settings import Settings

    root, questions = manual
    found = _documents(root)
    for question in questions:
        found.add(answer(mode, "manual", question, settings=Settings(storage_root=root)))
    assert found.counts["sentences"] >= len(questions)
    bad = {
        k: found.counts[k] for k in ("header_footer", "toc", "quotes_boilerplate", "truncated_at_citation")
    }
    assert bad == dict.fromkeys(bad, 0), found.examples
    if mode == "basic":  # the contents page ranks below the body: no answer opens with it
        assert found.counts["first_citation_front"] == 0
