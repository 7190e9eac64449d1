"""Issue 72's ingest probes as tests: every hostile file (tests/support/hostile.py, generated, none
committed) is an ingest_errors row naming the budget it broke, through the same ingest `pipeline index`
runs (read_documents, each file parsed in the bounded worker), and the files beside it still index.

Nothing here passes or fails on a clock: where a budget is small enough to trip quickly it is set small
(a page cap, an OCR page budget, a memory or output limit), and the reason row names the limit. A stand-in
`tesseract` (a shell script on PATH) makes the OCR paths deterministic and fast; it reports the dpi and
pixels it was handed, so the scaled render can be checked.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import psutil
import pytest

from pipeline.ops.ingest import IngestOptions, IngestResult, read_documents
from pipeline.parse import OcrPolicy, ParseError, ParseLimits, parse_bytes
from pipeline.parse.safexml import check_entities
from pipeline.parse.zipread import read_zip
from tests.support.documents import docx_file, epub, text_pdf, zip_bomb
from tests.support.hostile import (
    billion_laughs_epub,
    image_page_pdf,
    lying_docx,
    page_tree_pdf,
    xml_heavy_docx,
    xxe_epub,
    xxe_html,
)

GOOD_PDF = text_pdf([[("A page of real text about lighthouses.", 72, 700)]])


def _ingest(tmp_path: Path, files: dict[str, bytes], **limits: object) -> IngestResult:
    root = tmp_path / "in"
    root.mkdir(exist_ok=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    run = {k: limits.pop(k) for k in ("ocr_run_max_pages", "ocr_run_max_seconds") if k in limits}
    return read_documents(root, IngestOptions(parse_limits=ParseLimits(**limits), **run))  # type: ignore[arg-type]


def _errors(result: IngestResult) -> dict[str, tuple[str, str]]:
    return {e.source_path: (e.error_type, e.reason) for e in result.errors}


@pytest.fixture
def fake_tesseract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `tesseract` on PATH that 'reads' every page as one line naming the dpi and the PGM's size, and
    records its pid (for the test that kills it)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "tesseract"
    script.write_text(
        "#!/bin/sh\n"
        f'echo $$ >> "{folder}/pids"\n'
        f'if [ -f "{folder}/sleep" ]; then sleep 60; fi\n'
        'echo "Scanned page read at $6 dpi, $(head -2 "$1" | tail -1) pixels"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PIPELINE_OCR", "auto")
    assert OcrPolicy.from_env().binary == str(script)
    return folder


# -- zip-based files ------------------------------------------------------------------------------------


def test_a_docx_whose_headers_lie_is_refused_as_it_inflates(tmp_path: Path) -> None:
    # 1 MB on disk, a 1,000-byte document.xml declared, 1 GiB of zeros inside. A 256 MB worker would
    # die of a MemoryError (a reason naming parse_memory_mb) had the member been inflated whole.
    result = _ingest(tmp_path, {"lying.docx": lying_docx(), "good.docx": docx_file(["Kept."])}, memory_mb=256)
    status, reason = _errors(result)["lying.docx"]
    assert status == "too_large_expanded"
    assert "inflates past the 1,000 bytes its header declares" in reason
    assert [d.title for d in result.documents] == ["good.docx"]


def test_inflated_bytes_are_counted_not_declared() -> None:
    honest = lying_docx(inflated=8 << 20, declared=8 << 20)  # 8 MiB declared and inflated
    with pytest.raises(ParseError) as err:
        read_zip(honest, ParseLimits(max_expanded_mb=5))
    assert err.value.error_type == "too_large_expanded" and "parse_max_expanded_mb" in err.value.reason
    assert "declares" in err.value.reason  # refused from the central directory, before inflating
    with pytest.raises(ParseError) as err:
        read_zip(zip_bomb(size=20_000_000), ParseLimits(max_expansion_ratio=1e9, max_expanded_mb=10))
    assert err.value.error_type == "too_large_expanded"


def test_a_docx_of_9_mb_of_xml_is_a_zip_bomb_by_its_ratio(tmp_path: Path) -> None:
    data = xml_heavy_docx(9)
    assert len(data) < 100_000
    result = _ingest(tmp_path, {"heavy.docx": data, "good.pdf": GOOD_PDF})
    status, reason = _errors(result)["heavy.docx"]
    assert status == "too_large_expanded" and "parse_max_expansion_ratio" in reason
    assert [d.title for d in result.documents] == ["good.pdf"]


def test_a_docx_of_many_paragraphs_parses_whole_when_its_ratio_is_allowed() -> None:
    # python-docx looked each paragraph's style up among all styles: 1 MB of XML took 55 s
    parsed = parse_bytes(xml_heavy_docx(1), "docx", limits=ParseLimits(max_expansion_ratio=1e9))
    assert parsed.text.split("\n\n")[1:4] == ["word", "word", "word"]
    assert len(parsed.text.split("\n\n")) == 1_000_000 // len(b"<w:p><w:r><w:t>word</w:t></w:r></w:p>") + 1


# -- XML entities -------------------------------------------------------------------------------------------


def test_a_billion_laughs_epub_is_named_as_one(tmp_path: Path) -> None:
    result = _ingest(tmp_path, {"laughs.epub": billion_laughs_epub(), "good.pdf": GOOD_PDF})
    status, reason = _errors(result)["laughs.epub"]
    assert status == "unsafe_xml" and "billion laughs" in reason and "content.opf" in reason
    assert [d.title for d in result.documents] == ["good.pdf"]


@pytest.mark.parametrize(("name", "make"), [("xxe.html", xxe_html), ("xxe.epub", xxe_epub)])
def test_xxe_never_reaches_a_document(tmp_path: Path, name: str, make) -> None:  # noqa: ANN001
    result = _ingest(tmp_path, {name: make(), "good.pdf": GOOD_PDF})
    status, reason = _errors(result)[name]
    assert status == "unsafe_xml" and "XXE" in reason and "file:///etc/passwd" in reason
    assert [d.title for d in result.documents] == ["good.pdf"]
    assert not any("&xxe;" in d.text or "]>" in d.text or "root:" in d.text for d in result.documents)


def test_entity_checks_read_utf16_and_leave_plain_doctypes_alone() -> None:
    laughs = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE a [<!ENTITY a "x"><!ENTITY b "&a;&a;">]><a/>'
    with pytest.raises(ParseError, match="billion laughs"):
        check_entities(laughs.encode("utf-16"), "a.xml")
    with pytest.raises(ParseError, match="declares XML entities"):
        check_entities(b'<!DOCTYPE a [<!ENTITY who "me">]><a>&who;</a>', "a.xml")
    xhtml = (
        b'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">'
        b"<html><body><p>A &lt;!ENTITY&gt; in the text is no declaration.</p></body></html>"
    )
    check_entities(xhtml, "c.xhtml")
    chapters = [("c1.xhtml", "<h1>One</h1><p>Plain XHTML with a DOCTYPE reads as before.</p>")]
    assert "reads as before" in parse_bytes(epub(chapters), "epub").text


# -- PDF pages --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("levels", "pages"), [(4, 10_000), (6, 1_000_000)])
def test_a_page_tree_past_the_cap_is_refused_before_any_page_is_read(
    tmp_path: Path, fake_tesseract: Path, levels: int, pages: int
) -> None:
    data = page_tree_pdf(levels)
    assert len(data) < 2_000
    result = _ingest(tmp_path, {"tree.pdf": data, "good.pdf": GOOD_PDF})
    status, reason = _errors(result)["tree.pdf"]
    assert status == "too_many_pages" and f"{pages:,} pages" in reason and "parse_max_pages" in reason
    assert not (fake_tesseract / "pids").exists()  # not one page went to OCR
    assert [d.title for d in result.documents] == ["good.pdf"]


@pytest.mark.parametrize("points", [5000, 14_400])
def test_a_huge_image_page_is_refused_before_it_is_rendered(
    tmp_path: Path, fake_tesseract: Path, points: int
) -> None:
    data = image_page_pdf(points)
    assert len(data) < 1_000
    result = _ingest(tmp_path, {"huge.pdf": data, "good.pdf": GOOD_PDF})
    status, reason = _errors(result)["huge.pdf"]
    assert (
        status == "page_too_large" and "ocr_max_pixels" in reason and f"{points:,} x {points:,} pt" in reason
    )
    assert not (fake_tesseract / "pids").exists()
    assert [d.title for d in result.documents] == ["good.pdf"]


def test_a_page_past_the_point_cap_is_not_read(tmp_path: Path) -> None:
    result = _ingest(tmp_path, {"big.pdf": image_page_pdf(20_000)})
    assert _errors(result)["big.pdf"][0] == "page_too_large"
    assert "parse_max_page_points" in _errors(result)["big.pdf"][1]


def test_a_large_page_that_still_reads_is_scaled_down_for_ocr(tmp_path: Path, fake_tesseract: Path) -> None:
    # 3,000 pt square is 156 million pixels at 300 dpi: rendered at ~120 dpi instead
    result = _ingest(tmp_path, {"a0.pdf": page_tree_pdf(0, size=3000)}, ocr_max_pixels=25_000_000)
    (doc,) = result.documents
    dpi = int(doc.text.split(" at ")[1].split()[0])
    width, height = (int(v) for v in doc.text.split("dpi, ")[1].split()[:2])
    assert 100 <= dpi < 300 and width * height <= 25_000_000
    assert not result.errors


def test_ocr_stops_at_the_documents_page_budget(tmp_path: Path, fake_tesseract: Path) -> None:
    result = _ingest(tmp_path, {"scans.pdf": page_tree_pdf(2, fan=3)}, ocr_max_pages=4)  # 9 scanned pages
    (doc,) = result.documents
    assert doc.text.count("Scanned page") == 4
    status, reason = _errors(result)["scans.pdf"]
    assert status == "ocr_budget" and reason.startswith("pages 5-9 not read") and "ocr_max_pages" in reason


def test_a_document_no_page_of_which_ocr_may_read_is_refused_as_ocr_budget(
    tmp_path: Path, fake_tesseract: Path
) -> None:
    result = _ingest(
        tmp_path, {"scans.pdf": page_tree_pdf(1, fan=3), "good.pdf": GOOD_PDF}, ocr_max_seconds=0
    )
    status, reason = _errors(result)["scans.pdf"]
    assert status == "ocr_budget" and "no page was read; pages 1-3" in reason
    assert [d.title for d in result.documents] == ["good.pdf"]


def test_the_runs_ocr_budget_spans_its_documents(tmp_path: Path, fake_tesseract: Path) -> None:
    three = page_tree_pdf(1, fan=3)
    result = _ingest(tmp_path, {"a.pdf": three, "b.pdf": three + b"\n% another file\n"}, ocr_run_max_pages=4)
    texts = {d.title: d.text for d in result.documents}
    assert texts["a.pdf"].count("Scanned page") == 3 and texts["b.pdf"].count("Scanned page") == 1
    assert _errors(result) == {"b.pdf": ("ocr_budget", _errors(result)["b.pdf"][1])}
    assert _errors(result)["b.pdf"][1].startswith("pages 2-3 not read")


# -- the worker's own limits ----------------------------------------------------------------------------------


def test_a_parse_past_its_cpu_time_is_a_parse_timeout_and_the_next_file_parses(tmp_path: Path) -> None:
    # ~8 s of CPU (9 MB of XML, allowed by its ratio) against a 1 s limit: RLIMIT_CPU ends the worker
    result = _ingest(
        tmp_path,
        {"a_heavy.docx": xml_heavy_docx(9), "b_good.pdf": GOOD_PDF},
        max_expansion_ratio=1e9,
        cpu_seconds=1,
    )
    status, reason = _errors(result)["a_heavy.docx"]
    assert status == "parse_timeout" and "parse_cpu_seconds" in reason
    assert [d.title for d in result.documents] == ["b_good.pdf"]


def test_the_wall_clock_deadline_kills_the_worker_and_its_tesseract(
    tmp_path: Path, fake_tesseract: Path
) -> None:
    # the stand-in sleeps a minute; the deadline is two seconds, and the worker is already up (the good
    # file goes first), so those seconds are the scanned page's: its render and Tesseract's start
    (fake_tesseract / "sleep").touch()
    result = _ingest(tmp_path, {"a_good.pdf": GOOD_PDF, "b_scan.pdf": page_tree_pdf(0)}, wall_seconds=2)
    status, reason = _errors(result)["b_scan.pdf"]
    assert status == "parse_timeout" and "parse_wall_seconds" in reason
    assert [d.title for d in result.documents] == ["a_good.pdf"]
    (pid,) = (int(p) for p in (fake_tesseract / "pids").read_text().split())
    bound = time.monotonic() + 30  # only keeps a broken build from hanging; the kill is immediate
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < bound, "the worker's tesseract outlived its deadline"
        time.sleep(0.05)


def test_a_parse_past_its_memory_is_refused_and_the_next_file_parses(tmp_path: Path) -> None:
    result = _ingest(
        tmp_path,
        {"a_heavy.docx": xml_heavy_docx(9), "b_good.pdf": GOOD_PDF},
        max_expansion_ratio=1e9,
        memory_mb=150,
    )
    status, reason = _errors(result)["a_heavy.docx"]
    assert status in ("too_large_expanded", "corrupt") and "parse_memory_mb" in reason
    assert [d.title for d in result.documents] == ["b_good.pdf"]


def test_an_answer_past_the_output_limit_is_refused(tmp_path: Path) -> None:
    page = "<html><body>" + "<p>A long page of text that goes on.</p>" * 40_000 + "</body></html>"
    result = _ingest(tmp_path, {"long.html": page.encode(), "good.pdf": GOOD_PDF}, max_output_mb=1)
    status, reason = _errors(result)["long.html"]
    assert status == "too_large" and "parse_max_output_mb" in reason
    assert [d.title for d in result.documents] == ["good.pdf"]


def test_the_worker_is_reused_across_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.parse import worker

    started: list[int] = []
    start = worker.ParseWorker._start

    def counting(self: worker.ParseWorker):  # noqa: ANN202
        proc = start(self)
        started.append(proc.pid)
        return proc

    monkeypatch.setattr(worker.ParseWorker, "_start", counting)
    files = {f"doc{k}.pdf": text_pdf([[(f"Document number {k}.", 72, 700)]]) for k in range(5)}
    result = _ingest(tmp_path, files)
    assert len(result.documents) == 5 and len(started) == 1
    assert not psutil.pid_exists(started[0]) or psutil.Process(started[0]).status() == psutil.STATUS_ZOMBIE


# -- the whole folder -------------------------------------------------------------------------------------------


def test_the_index_ingest_of_a_hostile_folder_indexes_its_good_files(
    tmp_path: Path, storage_root: Path, fake_tesseract: Path
) -> None:
    from pipeline.index.input_documents import ingest_options
    from pipeline.settings import load_settings

    hostile = {
        "lying.docx": lying_docx(),
        "page_5000pt.pdf": image_page_pdf(5000),
        "page_14400pt.pdf": image_page_pdf(14_400),
        "tree_10k.pdf": page_tree_pdf(4),
        "tree_1m.pdf": page_tree_pdf(6),
        "xml_9mb.docx": xml_heavy_docx(9),
        "laughs.epub": billion_laughs_epub(),
        "xxe.html": xxe_html(),
        "xxe.epub": xxe_epub(),
    }
    good = {
        "good.pdf": GOOD_PDF,
        "good.docx": docx_file(["Word text survives."]),
        "notes.md": b"# Notes\n\nKept.\n",
    }
    root = tmp_path / "in"
    root.mkdir()
    for name, data in {**hostile, **good}.items():
        (root / name).write_bytes(data)
    result = read_documents(root, ingest_options(load_settings()))
    assert sorted(d.title for d in result.documents) == sorted(good)
    assert {k: v[0] for k, v in _errors(result).items()} == {
        "lying.docx": "too_large_expanded",
        "page_5000pt.pdf": "page_too_large",
        "page_14400pt.pdf": "page_too_large",
        "tree_10k.pdf": "too_many_pages",
        "tree_1m.pdf": "too_many_pages",
        "xml_9mb.docx": "too_large_expanded",
        "laughs.epub": "unsafe_xml",
        "xxe.html": "unsafe_xml",
        "xxe.epub": "unsafe_xml",
    }
    assert (
        result.rejection_line()
        == f"{len(hostile)} of {len(hostile) + len(good)} files rejected (see ingest_errors)"
    )
