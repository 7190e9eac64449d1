"""Parsing speed and memory per format (pipeline.parse); prints JSON.

    .venv/bin/python bench/bench_parse.py [--skip-ocr] [--skip-pdfminer]

Each case runs in its own child process pinned to one core, so its pages per second are one core's and
its peak RSS (ru_maxrss) is that parse's alone, next to the same child's RSS before parsing (imports
only). PDF: the three dev manuals (../shared/data/pdf_manuals), and pdfminer.six on the first 60
gnuplot pages as the candidate it was measured against (when installed; it is not a dependency).
DOCX, PPTX, HTML and EPUB: generated with the real libraries from the gnuplot manual's text (one page
of the PDF per paragraph group, slide or chapter), so their sizes are comparable. OCR: one scanned
letter-size page at 300 dpi. `ingest`: the three manuals through the ingest (`read_documents`, no parse
cache), which parses each file in the bounded worker process (pipeline.parse.worker): what `pipeline
index` pays per page, worker start and transfer included.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MANUALS = ROOT.parent / "shared" / "data" / "pdf_manuals"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _gnuplot_pages(n: int) -> list[str]:
    from pipeline.parse import OcrPolicy, parse_bytes

    parsed = parse_bytes((MANUALS / "gnuplot.pdf").read_bytes(), "pdf", OcrPolicy(False))
    return [parsed.text[p.start : p.end] for p in parsed.layout.pages[:n]]


def _make(fmt: str) -> tuple[bytes, int]:
    """(file bytes, pages or their stand-in) for a generated format."""
    pages = _gnuplot_pages(100)
    out = io.BytesIO()
    if fmt == "docx":
        import docx

        d = docx.Document()
        for k, page in enumerate(pages):
            d.add_heading(f"Page {k + 1}", level=2)
            for para in page.split("\n\n"):
                d.add_paragraph(para)
        d.save(out)
    elif fmt == "pptx":
        import pptx

        deck = pptx.Presentation()
        for k, page in enumerate(pages):
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = f"Slide {k + 1}"
            slide.placeholders[1].text = page[:1500]
        deck.save(out)
    elif fmt == "html":
        from html import escape

        body = "".join(
            f"<h2>Page {k + 1}</h2>" + "".join(f"<p>{escape(p)}</p>" for p in page.split("\n\n"))
            for k, page in enumerate(pages)
        )
        out.write(f"<html><body>{body}</body></html>".encode())
    elif fmt == "epub":
        from html import escape

        from tests.support.documents import epub

        chapters = [
            (f"c{k}.xhtml", "".join(f"<p>{escape(p)}</p>" for p in page.split("\n\n")))
            for k, page in enumerate(pages)
        ]
        out.write(epub(chapters))
    return out.getvalue(), len(pages)


def one(case: str) -> dict:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from pipeline.parse import OcrPolicy, parse_bytes

    if case.startswith("pdf:"):
        data, fmt = (MANUALS / case[4:]).read_bytes(), "pdf"
        before = _rss_mb()
        start = time.perf_counter()
        parsed = parse_bytes(data, fmt, OcrPolicy(False))
        seconds = time.perf_counter() - start
        pages = len(parsed.layout.pages)
    elif case == "pdfminer":
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LTTextContainer

        before = _rss_mb()
        start, words, pages = time.perf_counter(), 0, 0
        for page in extract_pages(str(MANUALS / "gnuplot.pdf"), maxpages=60):
            pages += 1
            words += sum(len(el.get_text().split()) for el in page if isinstance(el, LTTextContainer))
        seconds = time.perf_counter() - start
        ours = parse_bytes((MANUALS / "gnuplot.pdf").read_bytes(), "pdf", OcrPolicy(False))
        ours_words = len(ours.text[: ours.layout.pages[pages - 1].end].split())
        return {
            "pages": pages,
            "seconds": round(seconds, 2),
            "pages_per_s": round(pages / seconds, 1),
            "words": words,
            "pypdfium2_words_same_pages": ours_words,
            "rss_before_mb": round(before),
            "peak_rss_mb": round(_rss_mb()),
        }
    elif case == "ingest":
        import shutil
        import tempfile

        from pipeline.ops.ingest import read_documents

        folder = Path(tempfile.mkdtemp(prefix="bench_parse_"))
        try:
            for pdf in sorted(MANUALS.glob("*.pdf")):
                shutil.copy(pdf, folder / pdf.name)
            before = _rss_mb()
            start = time.perf_counter()
            result = read_documents(folder)
            seconds = time.perf_counter() - start
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        pages = sum(d.metadata.get("pages", 0) for d in result.documents)
        return {
            "pages": pages,
            "documents": len(result.documents),
            "seconds": round(seconds, 3),
            "pages_per_s": round(pages / seconds, 1),
            "rss_before_mb": round(before),
            "peak_rss_mb": round(_rss_mb()),
            # the worker's own peak (its process has ended by now)
            "children_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        }
    elif case == "ocr":
        from tests.support.documents import pdf_pages, scanned_pdf

        data = scanned_pdf(pdf_pages(str(MANUALS / "gnuplot.pdf"), 37, 37), {0}, scale=300 / 72)
        before = _rss_mb()
        start = time.perf_counter()
        parsed = parse_bytes(data, "pdf", OcrPolicy.from_env())
        seconds = time.perf_counter() - start
        pages = len(parsed.layout.ocr_pages)
    else:
        data, pages = _make(case)
        before = _rss_mb()
        start = time.perf_counter()
        parsed = parse_bytes(data, case)
        seconds = time.perf_counter() - start
    return {
        "pages": pages,
        "bytes": len(data),
        "seconds": round(seconds, 3),
        "pages_per_s": round(pages / seconds, 1) if seconds else None,
        "chars": len(parsed.text),
        "words": len(parsed.text.split()),
        "sections": len(parsed.layout.sections),
        "masked": len(parsed.layout.masked),
        "rss_before_mb": round(before),
        "peak_rss_mb": round(_rss_mb()),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--skip-ocr", action="store_true")
    parser.add_argument("--skip-pdfminer", action="store_true")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    cases = [f"pdf:{p.name}" for p in sorted(MANUALS.glob("*.pdf"))] + ["docx", "pptx", "html", "epub"]
    cases.append("ingest")
    if not args.skip_pdfminer and importlib.util.find_spec("pdfminer") is not None:  # not a dependency
        cases.append("pdfminer")
    if not args.skip_ocr:
        cases.append("ocr")
    results = {}
    for case in cases:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", case], capture_output=True, text=True, cwd=ROOT, check=False
        )
        try:
            results[case] = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            results[case] = {"error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-1500:]}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
