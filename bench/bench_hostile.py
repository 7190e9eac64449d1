"""Hostile documents through the index's ingest (issue 72); prints JSON.

    .venv/bin/python bench/bench_hostile.py [--only NAME,...] [--second-line] [--log]

Each file of tests/support/hostile.py (generated, none committed), and then all of them in one folder
beside three good files, is ingested by `read_documents` with the settings `pipeline index` uses
(`pipeline.index.input_documents.ingest_options`: the defaults, OCR on where Tesseract is installed), in
a child process of its own so that its figures are its alone:
- `outcome`: the ingest_errors status and reason, or the document it gave;
- `seconds`: wall time of the ingest;
- `tree_peak_rss_mb`: the process tree's RSS (the ingest process, its parse worker, their Tesseract),
  summed and sampled every 20 ms with psutil;
- `self_maxrss_mb`: the ingest process's own peak (`ru_maxrss`); `descendants_peak_rss_mb`: the most,
  over the samples, of the peaks (VmHWM) of the descendants alive together (the worker and its
  Tesseract); `bound_rss_mb` = the two added, a bound on the tree's peak that a spike between samples
  cannot slip under (bar a last one in a process's final 20 ms). RUSAGE_CHILDREN's `ru_maxrss` is
  not used: a child spawned by fork or vfork carries the parent's RSS at the spawn into its peak, so it
  reads the ingest process's size, not the worker's.
`ok` says whether every file stayed under the issue's bound: 1 GB of RSS and 60 s.

`--second-line` adds files with their first budget lifted through its setting, to measure what stands
behind it: the 9 MB-XML DOCX with no ratio check (the parse itself), and the 10,000-page tree with no
page cap and 20 OCR pages per document (the OCR budget).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LIMIT_MB = 1024
LIMIT_S = 60.0
SECOND_LINE = {
    "xml_9mb.docx, no ratio check": ("xml_9mb.docx", {"PIPELINE_PARSE_MAX_EXPANSION_RATIO": "1e9"}),
    "tree_10k_pages.pdf, no page cap, OCR 20 pages": (
        "tree_10k_pages.pdf",
        {"PIPELINE_PARSE_MAX_PAGES": "1000000", "PIPELINE_OCR_MAX_PAGES": "20"},
    ),
}


def _files() -> dict[str, bytes]:
    from tests.support import hostile

    return {
        "lying_1gib.docx": hostile.lying_docx(),
        "page_5000pt.pdf": hostile.image_page_pdf(5000),
        "page_14400pt.pdf": hostile.image_page_pdf(14_400),
        "tree_10k_pages.pdf": hostile.page_tree_pdf(4),
        "tree_1m_pages.pdf": hostile.page_tree_pdf(6),
        "xml_9mb.docx": hostile.xml_heavy_docx(9),
        "billion_laughs.epub": hostile.billion_laughs_epub(),
        "xxe.html": hostile.xxe_html(),
        "xxe.epub": hostile.xxe_epub(),
    }


def _good() -> dict[str, bytes]:
    from tests.support.documents import text_pdf

    manual = ROOT.parent / "shared" / "data" / "pdf_manuals" / "libtasn1.pdf"
    return {
        "good_manual.pdf": manual.read_bytes() if manual.exists() else b"",
        "good.pdf": text_pdf([[("A page of real text about lighthouses.", 72, 700)]]),
        "good.md": b"# Notes\n\nA good file beside the hostile ones.\n",
    }


def _hwm(pid: int) -> int:
    """A live process's peak RSS in bytes (VmHWM), 0 when it has ended."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            return next((int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("VmHWM:")), 0)
    except (OSError, ValueError):
        return 0


class _TreeRss:
    """The summed RSS of this process and its descendants, and each descendant's own peak, sampled in a
    thread."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.peak = 0
        self.descendants = 0  # the most the peaks of descendants alive together added up to
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        mine = self.me.cmdline()
        while not self._stop.is_set():
            total = peaks = 0
            for proc in [self.me, *self.me.children(recursive=True)]:
                try:
                    # a child between its fork and its exec is a copy of this process, sharing its pages:
                    # not counted until it is the program it runs
                    if proc.pid != self.me.pid and proc.cmdline() == mine:
                        continue
                    total += proc.memory_info().rss
                except psutil.Error:
                    continue
                if proc.pid != self.me.pid:
                    peaks += _hwm(proc.pid)
            self.peak = max(self.peak, total)
            self.descendants = max(self.descendants, peaks)
            self._stop.wait(0.02)

    def __enter__(self) -> _TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def one(names: list[str]) -> dict:
    """Ingest `names` (hostile or good files) as one folder; the figures of this process tree."""
    from pipeline.index.input_documents import ingest_options
    from pipeline.ops.ingest import read_documents
    from pipeline.parse import OcrPolicy
    from pipeline.settings import load_settings

    files = {**_files(), **_good()}
    work = Path(tempfile.mkdtemp(prefix="bench_hostile_"))
    try:
        folder = work / "in"
        folder.mkdir()
        for name in names:
            (folder / name).write_bytes(files[name])
        options = ingest_options(load_settings(storage_root=work / "storage"))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        with _TreeRss() as tree:
            start = time.perf_counter()
            result = read_documents(folder, options)
            seconds = time.perf_counter() - start
        self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        descendants = tree.descendants / 2**20
    finally:
        shutil.rmtree(work, ignore_errors=True)
    outcome: dict = {
        "errors": {e.source_path: {"status": e.error_type, "reason": e.reason} for e in result.errors},
        "documents": {d.title: len(d.text) for d in result.documents},
    }
    if len(names) == 1:
        name = names[0]
        error = outcome["errors"].get(name)
        outcome = error or {"status": "document", "chars": outcome["documents"].get(name)}
    return {
        "bytes": sum(len(files[n]) for n in names),
        "outcome": outcome,
        "seconds": round(seconds, 2),
        "tree_peak_rss_mb": round(tree.peak / 2**20),
        "self_maxrss_mb": round(self_rss),
        "descendants_peak_rss_mb": round(descendants),
        "bound_rss_mb": round(self_rss + descendants),
        "rss_before_mb": round(before),
        "ocr": OcrPolicy.from_env().enabled,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--only", help="comma-separated file names (default: all, then all in one folder)")
    parser.add_argument("--second-line", action="store_true", help="also the files with a budget lifted")
    parser.add_argument(
        "--log", action="store_true", help="append the run to bench/results/bench_hostile.json"
    )
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one.split(","))))
        return 0
    names = args.only.split(",") if args.only else list(_files())
    cases: list[tuple[str, list[str], dict[str, str]]] = [(n, [n], {}) for n in names]
    if not args.only:
        everything = [*names, *_good()]
        cases.append(
            (f"all {len(names)} hostile + {len(everything) - len(names)} good files", everything, {})
        )
    if args.second_line:
        cases += [(label, [name], env) for label, (name, env) in SECOND_LINE.items()]
    results: dict = {}
    for key, case, env in cases:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", ",".join(case)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **env},
            check=False,
        )
        try:
            results[key] = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            results[key] = {"error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-1500:]}
    per_file = [r for k, r in results.items() if not k.startswith("all ") and k not in SECOND_LINE]
    results["ok"] = all(
        "error" not in r and r["bound_rss_mb"] < LIMIT_MB and r["seconds"] < LIMIT_S for r in per_file
    )
    print(json.dumps(results, indent=2))
    if args.log:
        from bench.results_log import append_run

        command = "bench/bench_hostile.py --log" + (" --second-line" if args.second_line else "")
        append_run("bench_hostile", results, command=command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
