"""Pages and sections from parsed files to citations (issue 58): text units carry their pages and section
path, a long section starts a unit, a quoted sentence cites its own page, the CLI names the page and
section, and plain-text documents keep today's output.

A small real corpus (a PDF through PDFium, a DOCX through python-docx, a Markdown file and a plain text
file) is indexed once for the module through the Dagster job, offline."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.ops.chunking import chunk_documents_table, chunking_config
from pipeline.parse.layout import Layout, Page, Section
from pipeline.query.answer.pages import cite_line
from tests.conftest import make_dagster_home
from tests.support.documents import docx_file, text_pdf

CHUNK = {"PIPELINE_CHUNK_SIZE": "200", "PIPELINE_CHUNK_OVERLAP": "20"}


def _page_lines(n: int) -> list[tuple]:
    """Page n of the manual: distinct sentences naming their page, so a question finds one page."""
    lines: list[tuple] = []
    if n == 1:
        lines.append(("1 Plotting basics", 72, 740, 20))
    if n == 4:
        lines.append(("2 Arrays and matrices", 72, 740, 20))
    y = 700
    for i in range(10):
        lines.append((f"Topic {n}{i} is described in detail here with its options and defaults.", 72, y))
        y -= 40
    if n == 5:
        lines.append(("The eigenvalue routine of the matrix facilities returns a list of values.", 72, y))
    lines.append((f"Manual page {n}", 280, 40, 9))  # a running footer: masked, never quoted
    return lines


@dataclass(frozen=True)
class Corpus:
    store: NamespaceStore
    root: Path  # the storage root the api and the CLI are handed


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    from dagster import DagsterInstance

    from assets.launch import run_index

    root = tmp_path_factory.mktemp("paged_input")
    (root / "manual.pdf").write_bytes(text_pdf([_page_lines(n) for n in range(1, 7)]))
    (root / "notes.docx").write_bytes(
        docx_file(
            ["The colour palette command sets the map of gradients used by surface plots."], "Release notes"
        )
    )
    (root / "guide.md").write_text("# Guide\n\n## Install\n\nRun the installer and wait for the prompt.\n")
    (root / "plain.txt").write_text(
        "A plain text file about the fog that settles over the harbour at dawn.\n"
    )
    storage = tmp_path_factory.mktemp("paged_storage")
    home = make_dagster_home(tmp_path_factory.mktemp("paged_dagster"))
    env = {"PIPELINE_STORAGE_ROOT": str(storage), "DAGSTER_HOME": str(home), "PIPELINE_OCR": "off", **CHUNK}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    instance = DagsterInstance.get()
    try:
        result = run_index("paged", input_dir=str(root), instance=instance)
        assert result.success, result.failures
        yield Corpus(NamespaceStore(storage, "paged"), storage)
    finally:
        instance.dispose()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _titles(store: NamespaceStore) -> dict[str, str]:
    docs = store.read_table(schema.DOCUMENTS, columns=["id", "title"]).to_pylist()
    return {d["id"]: d["title"] for d in docs}


def test_text_units_carry_their_pages_and_section_path(corpus: Corpus) -> None:
    titles = _titles(corpus.store)
    units = corpus.store.read_table(schema.TEXT_UNITS).to_pylist()
    pdf_units = [u for u in units if titles[u["document_id"]] == "manual.pdf"]
    assert len(pdf_units) > 2
    for u in pdf_units:
        assert 1 <= u["page_start"] <= u["page_end"] <= 6
        assert u["section"] in ("1 Plotting basics", "2 Arrays and matrices")
    # the section "2 Arrays and matrices" is long enough to fill a unit: its heading starts one
    assert any(u["text"].startswith("2 Arrays and matrices") for u in pdf_units)
    assert [u["page_start"] for u in pdf_units] == sorted(u["page_start"] for u in pdf_units)
    (md,) = [u for u in units if titles[u["document_id"]] == "guide.md"]
    assert md["page_start"] is None and md["page_end"] is None and md["section"].startswith("Guide")
    (txt,) = [u for u in units if titles[u["document_id"]] == "plain.txt"]
    assert (txt["page_start"], txt["page_end"], txt["section"]) == (None, None, None)


def test_a_long_section_starts_a_unit_and_a_short_one_does_not() -> None:
    text = "A" * 50 + "\n" + "short heading\n" + "b " * 40 + "\n" + "long heading\n" + "c " * 600
    short_at = text.index("short heading")
    long_at = text.index("long heading")
    layout = Layout(
        pages=[Page(1, 0, long_at), Page(2, long_at, len(text))],
        sections=[
            Section("short heading", 1, ("short heading",), short_at, long_at),
            Section("long heading", 1, ("long heading",), long_at, len(text)),
        ],
    )
    docs = pa.table(
        {
            "id": ["d"],
            "text": [text],
            "text_unit_ids": pa.array([[]], type=pa.list_(pa.string())),
            "layout": [layout.to_json()],
        }
    )
    units, _, _ = chunk_documents_table(docs, 200, 20, "o200k_base")
    starts = units.column("start_char").to_pylist()
    assert long_at in starts and short_at not in starts
    first_long = starts.index(long_at)
    assert units.column("section").to_pylist()[first_long] == "long heading"
    assert units.column("page_start").to_pylist()[first_long] == 2
    assert units.column("chunk_index").to_pylist() == list(range(units.num_rows))


def test_chunking_config_changes_with_the_parsers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.parse

    before = chunking_config(200, 20, "o200k_base")
    fake = tmp_path / "parse"
    fake.mkdir()
    for source in Path(pipeline.parse.__file__).parent.glob("*.py"):
        (fake / source.name).write_bytes(source.read_bytes())
    (fake / "pdf.py").write_text((fake / "pdf.py").read_text() + "\n# an edited rule\n")
    monkeypatch.setattr(pipeline.parse, "__file__", str(fake / "__init__.py"))
    assert chunking_config(200, 20, "o200k_base") != before


def _basic(root: Path, question: str):  # noqa: ANN202 - BasicSearchResult
    from pipeline.api import basic_search
    from pipeline.settings import Settings

    return basic_search("paged", question, settings=Settings(storage_root=root))


def test_a_quoted_sentence_cites_its_own_page_and_citations_name_pages(corpus: Corpus) -> None:
    result = _basic(corpus.root, "What does the eigenvalue routine of the matrix facilities return?")
    assert result.status == "completed" and result.quotes
    doc_text = corpus.store.read_table(schema.DOCUMENTS, columns=["title", "text", "layout"]).to_pylist()
    manual = next(d for d in doc_text if d["title"] == "manual.pdf")
    layout = Layout.from_json(manual["layout"])
    eigen = [q for q in result.quotes if "eigenvalue routine" in q["text"]]
    assert eigen and eigen[0]["page_start"] == eigen[0]["page_end"] == 5
    for q in result.quotes:
        assert manual["text"][q["start_char"] : q["end_char"]].split() == q["text"].split()
        assert q["page_start"] == layout.page_at(q["start_char"])
        assert "Manual page" not in q["text"]
    pdf_cited = [c for c in result.citations if c["document_title"] == "manual.pdf"]
    assert pdf_cited and all(c["page_start"] <= c["page_end"] for c in pdf_cited)
    assert pdf_cited[0]["document_section"] in ("1 Plotting basics", "2 Arrays and matrices")
    assert all("page_start" in s for s in result.sources if s["document_title"] == "manual.pdf")


def test_global_quotes_its_points_where_their_communities_passages_say_them(corpus: Corpus) -> None:
    from pipeline.api import global_search
    from pipeline.settings import Settings

    settings = Settings(storage_root=corpus.root)
    result = global_search(
        "paged", "Which topics are described in detail with their options and defaults?", settings=settings
    )
    assert result.status == "completed" and result.quotes, result.reason
    docs = corpus.store.read_table(schema.DOCUMENTS, columns=["id", "title", "text", "layout"]).to_pylist()
    by_id = {d["id"]: d for d in docs}
    communities = {
        c["community"]: set(c["text_unit_ids"])
        for c in corpus.store.read_table(schema.COMMUNITIES).to_pylist()
    }
    units = {u["id"]: u for u in corpus.store.read_table(schema.TEXT_UNITS).to_pylist()}
    for q in result.quotes:
        doc = by_id[q["document_id"]]
        assert doc["text"][q["start_char"] : q["end_char"]].split() == q["text"].split()
        assert q["community"] in {c for p in result.points for c in p["community_ids"]}
        # found inside a passage of the community that gave the point
        assert any(
            units[u]["start_char"] <= q["start_char"] and q["end_char"] <= units[u]["end_char"]
            for u in communities[q["community"]]
        )
        if doc["title"] == "manual.pdf":
            assert (
                q["page_start"] == q["page_end"] == Layout.from_json(doc["layout"]).page_at(q["start_char"])
            )
            assert q["document_section"] and "Manual page" not in q["text"]
    assert any(q["document_title"] == "manual.pdf" for q in result.quotes)


def test_drift_source_citations_name_their_pages_and_section(corpus: Corpus) -> None:
    from pipeline.api import drift_search
    from pipeline.settings import Settings

    settings = Settings(storage_root=corpus.root)
    result = drift_search("paged", "What is described about arrays and matrices?", settings=settings)
    # the reduced answer cites passages of its steps' contexts, resolved anew: they name their place too
    sources = [c for c in result.citations if c["section"] == "sources"]
    assert result.status == "completed" and sources, (result.status, result.reason, result.citations)
    for c in sources:
        if c["document_title"] != "plain.txt":
            assert c["document_section"], c
        if c["document_title"] == "manual.pdf":
            assert 1 <= c["page_start"] <= c["page_end"] <= 6


def test_plain_text_citations_keep_todays_shape(corpus: Corpus) -> None:
    result = _basic(corpus.root, "What settles over the harbour at dawn?")
    plain = [c for c in result.citations if c["document_title"] == "plain.txt"]
    assert plain and all("page_start" not in c and "document_section" not in c for c in plain)
    assert cite_line(plain[0]) == f"plain.txt [{plain[0]['start_char']}:{plain[0]['end_char']}]"


def test_cite_line_names_page_range_and_innermost_section() -> None:
    row = {
        "document_title": "R-intro.pdf",
        "start_char": 20077,
        "end_char": 20180,
        "page_start": 37,
        "page_end": 37,
        "document_section": "5 Arrays and matrices › 5.7 Matrix facilities › 5.7.3 Eigenvalues and eigenvectors",
    }
    assert cite_line(row) == "R-intro.pdf p. 37 · 5.7.3 Eigenvalues and eigenvectors [20077:20180]"
    assert cite_line({**row, "page_end": 38}).startswith("R-intro.pdf p. 37–38 · 5.7.3")
    no_pages = {k: v for k, v in row.items() if k not in ("page_start", "page_end")}
    assert cite_line(no_pages) == "R-intro.pdf 5.7.3 Eigenvalues and eigenvectors [20077:20180]"


def test_cli_prints_the_quoted_sentence_with_its_page(
    corpus: Corpus, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from assets.cli import main

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(corpus.root))
    code = main(["query", "basic", "--namespace", "paged", "What does the eigenvalue routine return?"])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"\[sources \d+\] manual\.pdf p\. 5 · 2 Arrays and matrices \[\d+:\d+\]", out), out


def test_show_prints_the_cited_page_with_the_span_marked(
    corpus: Corpus, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from assets.cli import main

    result = _basic(corpus.root, "What does the eigenvalue routine of the matrix facilities return?")
    quote = next(q for q in result.quotes if "eigenvalue routine" in q["text"])
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(corpus.root))
    span = f"{quote['start_char']}:{quote['end_char']}"
    argv = ["show", "--namespace", "paged", "--document", "manual.pdf", "--page", "5", "--span", span]
    assert main(argv) == 0
    out = capsys.readouterr().out
    head, body = out.split("\n\n", 1)
    assert head.startswith("manual.pdf p. 5 of 6 · 2 Arrays and matrices [")
    assert f"⟦{quote['text']}⟧" in " ".join(body.split(" "))
    assert "Topic 50 is described" in body and "Topic 40" not in body  # that page, no other
    assert main([*argv[:-2], "--span", "0:10"]) == 2  # a span on another page
    assert "not on page 5" in capsys.readouterr().err
    assert main(["show", "--namespace", "paged", "--document", "plain.txt", "--page", "1"]) == 2
    assert "has no pages" in capsys.readouterr().err


def test_eval_page_recall_counts_a_gold_page_among_the_first_five_cited_places() -> None:
    from pipeline.eval.metrics import Scored, aggregate
    from pipeline.eval.pages import page_scores
    from pipeline.eval.questions import QuestionsError, parse_row

    q = parse_row({"question": "q?", "gold_pages": [{"document": "gnuplot.pdf", "page": 37}]}, 1)
    assert q.gold_pages == (("gnuplot.pdf", 37),)
    with pytest.raises(QuestionsError):
        parse_row({"question": "q?", "gold_pages": [{"document": "gnuplot.pdf", "page": "37"}]}, 2)

    def cite(page: int, last: int | None = None, doc: str = "gnuplot.pdf") -> dict:
        return {"section": "sources", "document_title": doc, "page_start": page, "page_end": last or page}

    far = [cite(p) for p in (1, 2, 3, 4, 5)]
    assert page_scores(q.gold_pages, {"citations": [*far, cite(37)]})[0] == 0.0  # sixth: too late
    assert page_scores(q.gold_pages, {"citations": [cite(36, 38)]}) == (1.0, [3])
    assert page_scores(q.gold_pages, {"citations": far, "quotes": [cite(37)]})[0] == 1.0
    assert page_scores(q.gold_pages, {"citations": [cite(37, doc="other.pdf")]})[0] == 0.0
    auto = {"route": "basic", "result": {"citations": [cite(37)], "quotes": []}}
    assert page_scores(q.gold_pages, auto)[0] == 1.0
    rows = [
        Scored("a", "Fact", "basic", "q", "completed", page_hit=1.0, page_spans=[1, 2, 3]),
        Scored("b", "Fact", "basic", "q", "completed", page_hit=0.0, page_spans=[2]),
    ]
    summary = aggregate(rows)
    assert summary["page_recall_at_5"] == 50.0 and summary["median_page_span"] == 2.0
