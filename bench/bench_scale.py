"""How indexing and querying grow with the corpus: Python's documentation sources, offline; prints JSON.

    .venv/bin/python bench/bench_scale.py [--size MB] [--questions 20] [--keep DIR] [--out DIR] [--reindex 0.01]

The corpus is the reStructuredText sources of Python 3.11's documentation (Debian's `python3.11-doc`,
497 files, 11 MB in `/usr/share/doc/python3.11/html/_sources`; installed with apt-get when missing, as
the UI test installs chromium). `--size` takes the files in path order up to that many MB; past the
11 MB the corpus has, it repeats it, each copy under its own folder with a first line naming the copy,
so that names and ids (sha256 of the text) stay distinct: `--size 44` is the issue's ×4 corpus. The
default (1 MB) keeps `make bench` short; the issue's figures are `--size 11` and `--size 44`.

Every indexing stage runs as `pipeline index` runs it (`pipeline.index.run.index_folder`, the runners
the Dagster assets call, in the job's order). Per stage: seconds, rows written, and the peak RSS of
this process and its children (the extraction workers) while the stage ran (sampled every 50 ms). Then
query latency on the finished index:
basic, local, global with dynamic selection and DRIFT, p50/p95 over `--questions` questions, after one
warm-up question per mode (which loads the namespace's tables). An HTML plot (`bench_scale.html`, bokeh) of per-stage
time and memory, and of time and memory against size over the runs kept in `--out`, goes to `--out`
(default: the bench's work folder in /tmp, where it stays; the index there is removed unless `--keep`). The last line is one JSON object with `size_mb`,
`index_s`, `peak_rss_mb`, `s_per_mb` and `time_per_mb_ratio` (this run's s/MB over the 11 MB run's,
when `--baseline FILE` names that run's JSON; otherwise null). `--reindex 0.01` then appends a sentence to
1% of the files (spread over the corpus) and indexes again: `reindex` holds the seconds, per stage, and
their share of the full run's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
NAMESPACE = "pydocs"
QUESTIONS = [
    "How do I read and write files with pathlib?",
    "What does the asyncio event loop do?",
    "How are exceptions chained with raise from?",
    "What is the difference between a list and a tuple?",
    "How does the logging module configure handlers?",
    "What does functools.lru_cache do?",
    "How do context managers and the with statement work?",
    "What is the global interpreter lock?",
    "How do I parse command-line arguments with argparse?",
    "What are dataclasses used for?",
    "How does the import system find modules?",
    "What is a generator and how does yield work?",
    "How do I start a subprocess and read its output?",
    "What does the typing module provide?",
    "How are unicode strings encoded to bytes?",
    "What is the descriptor protocol?",
    "How do I use regular expressions with the re module?",
    "What changed in the C API for extension modules?",
    "How does garbage collection handle reference cycles?",
    "What does the json module do with custom objects?",
]


class PeakRss:
    """The peak RSS of the process and its children since the last `take()`, sampled on a thread
    (getrusage keeps only the whole run's peak, and one process's)."""

    def __init__(self, every_s: float = 0.05) -> None:
        self._proc = psutil.Process()
        self._peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _tree_rss(self) -> int:
        """This process's RSS plus its children's (the offline extractor's worker processes)."""
        rss = self._proc.memory_info().rss
        for child in self._proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # it ended between the listing and the read
                rss += child.memory_info().rss
        return rss

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            rss = self._tree_rss()
            with self._lock:
                self._peak = max(self._peak, rss)

    def take(self) -> int:
        """The peak since the last call, in bytes; the next interval starts at the RSS of now."""
        with self._lock:
            peak, self._peak = self._peak, self._tree_rss()
        return peak

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def ensure_sources() -> Path:
    if not SOURCES.is_dir():
        print("installing python3.11-doc (apt-get) ...", file=sys.stderr, flush=True)
        install = ["apt-get", "install", "-y", "-q", "python3.11-doc"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(install, capture_output=True, env=env).returncode != 0:
            # A new machine's package lists may be empty or stale: 'Unable to locate package'.
            subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, env=env)
            done = subprocess.run(install, capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"apt-get could not install python3.11-doc:\n{done.stderr.strip()}")
    return SOURCES


def build_corpus(sources: Path, size_mb: float, into: Path) -> tuple[int, int]:
    """Files of `sources` in path order (repeated in copies past its size) up to `size_mb` MB under
    `into`; returns (files, bytes)."""
    files = sorted(p for p in sources.rglob("*") if p.is_file())
    limit = int(size_mb * 1_000_000)
    written = n = copy = 0
    while written < limit:
        for path in files:
            if written >= limit:
                break
            rel = path.relative_to(sources)
            text = path.read_text(encoding="utf-8", errors="replace")
            if copy:
                rel = Path(f"copy{copy}") / rel
                text = f".. copy {copy} of {path.relative_to(sources)}\n\n{text}"
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written += len(text.encode("utf-8"))
            n += 1
        copy += 1
    return n, written


EDIT = "\n\nThis page was revised for the scale bench's re-index.\n"


def change_files(corpus: Path, share: float) -> int:
    """Append a sentence to `share` of the corpus's files, spread evenly over its path order (as an edit
    to a few pages of a documentation set would be): those documents change, the rest do not."""
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    count = max(1, round(len(files) * share))
    step = len(files) / count
    for i in range(count):
        path = files[int(i * step)]
        path.write_text(path.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    return count


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return {"p50_ms": round(1000 * statistics.median(ordered), 1), "p95_ms": round(1000 * at(0.95), 1)}


def query_latency(settings: Any, questions: list[str]) -> dict[str, Any]:
    from pipeline import api
    from pipeline.query.global_.map import GlobalSearchConfig
    from pipeline.runtime import query_runtime

    rt = query_runtime(NAMESPACE, settings=settings)
    common = {"settings": settings, "engine": rt.engine, "embedder": rt.embedder}
    dynamic = GlobalSearchConfig.from_settings(settings, selection="dynamic")
    modes = {
        "basic": lambda q: api.basic_search(NAMESPACE, q, **common),
        "local": lambda q: api.local_search(NAMESPACE, q, **common),
        "global_dynamic": lambda q: api.global_search(NAMESPACE, q, config=dynamic, **common),
        "drift": lambda q: api.drift_search(NAMESPACE, q, **common),
    }
    out: dict[str, Any] = {}
    for mode, ask in modes.items():
        ask("What is Python?")  # warm-up: loads the namespace's tables and indexes
        times, statuses = [], {}
        for q in questions:
            started = time.perf_counter()
            status = ask(q).status
            times.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
        out[mode] = {**_percentiles(times), "statuses": statuses}
        print(f"query {mode}: {out[mode]}", file=sys.stderr, flush=True)
    return out


def plot(stages: dict[str, dict[str, Any]], runs: list[dict[str, Any]], path: Path) -> None:
    """One HTML page (bokeh, its scripts inline: nothing is fetched): this run's seconds and peak RSS
    per stage, and index time and peak RSS against size over every run saved in the same folder."""
    from bokeh.embed import file_html
    from bokeh.layouts import column, row
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    names = list(stages)[::-1]
    bars = []
    for key, label, color in (("seconds", "seconds", "#4c72b0"), ("peak_rss_mb", "peak RSS (MB)", "#dd8452")):
        fig = figure(y_range=names, width=520, height=380, title=f"{label} per stage", x_axis_label=label)
        fig.hbar(y=names, right=[stages[n][key] for n in names], height=0.7, color=color)
        bars.append(fig)
    runs = sorted(runs, key=lambda r: r["size_mb"])
    sizes = [r["size_mb"] for r in runs]
    growth = []
    for key, label in (("index_s", "index seconds"), ("peak_rss_mb", "peak RSS (MB)")):
        fig = figure(width=520, height=300, title=f"{label} against corpus size", x_axis_label="MB")
        fig.line(sizes, [r[key] for r in runs], line_width=2)
        fig.scatter(sizes, [r[key] for r in runs], size=8)
        growth.append(fig)
    page = column(row(*bars), row(*growth))
    path.write_text(file_html(page, INLINE, "bench_scale"), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=float, default=1.0, help="corpus size in MB (11: once, 44: x4)")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="questions per mode (<= 20)")
    parser.add_argument("--keep", type=Path, help="build here and keep it, instead of a temp folder")
    parser.add_argument(
        "--out", type=Path, help="folder for the plot and the JSON (default: the work folder)"
    )
    parser.add_argument("--baseline", type=Path, help="the 11 MB run's JSON, for time_per_mb_ratio")
    parser.add_argument(
        "--reindex", type=float, default=0.0, help="then change this share of the files (0.01) and re-index"
    )
    args = parser.parse_args()
    if args.size <= 0 or not 1 <= args.questions <= len(QUESTIONS):
        parser.error(f"--size must be > 0 and --questions within 1..{len(QUESTIONS)}")

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_scale_"))
    out_dir = args.out or work
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        corpus = work / "input"
        shutil.rmtree(corpus, ignore_errors=True)
        corpus.mkdir(parents=True)
        files, nbytes = build_corpus(ensure_sources(), args.size, corpus)
        size_mb = nbytes / 1_000_000
        print(f"corpus: {files} files, {size_mb:.2f} MB", file=sys.stderr, flush=True)

        os.environ.setdefault("PIPELINE_LLM_PROVIDER", "offline")
        os.environ["PIPELINE_STORAGE_ROOT"] = str(work / "storage")  # its embedding cache too: cold
        from pipeline.index.run import index_folder
        from pipeline.settings import load_settings

        settings = load_settings()
        if settings.llm_provider != "offline":
            print(
                "this bench measures the offline engine; set PIPELINE_LLM_PROVIDER=offline", file=sys.stderr
            )
            return 2
        rss = PeakRss()
        stage_rss: dict[str, int] = {}

        def log(line: str) -> None:
            # index_folder logs "<stage>: <rows> rows in <s>s" after each stage; a stage's own log lines
            # may come before it, so a stage's peak is the highest of the intervals that end in its name.
            name = line.partition(": ")[0]
            if " rows in " in line:
                stage_rss[name] = max(stage_rss.get(name, 0), rss.take())
            print(line, file=sys.stderr, flush=True)

        started = time.perf_counter()
        reports = index_folder(NAMESPACE, corpus, settings=settings, log=log)
        index_s = time.perf_counter() - started
        rss.stop()
        stages = {
            name: {
                "seconds": round(report.duration_s, 2),
                "rows_out": report.rows,
                "peak_rss_mb": round(stage_rss.get(name, 0) / 2**20),
            }
            for name, report in reports.items()
        }
        peak_mb = max(s["peak_rss_mb"] for s in stages.values())
        latency = query_latency(settings, QUESTIONS[: args.questions])
        reindex = None
        if args.reindex > 0:
            changed = change_files(corpus, args.reindex)
            started = time.perf_counter()
            again = index_folder(NAMESPACE, corpus, settings=settings, log=log)
            reindex_s = time.perf_counter() - started
            reindex = {
                "changed_files": changed,
                "seconds": round(reindex_s, 1),
                "ratio": round(reindex_s / index_s, 4),
                "stages": {name: round(r.duration_s, 2) for name, r in again.items()},
            }
            print(f"re-index after {changed} changed files: {reindex}", file=sys.stderr, flush=True)
        s_per_mb = index_s / size_mb
        ratio = None
        if args.baseline is not None:
            base = json.loads(args.baseline.read_text().strip().splitlines()[-1])
            ratio = round(s_per_mb / base["s_per_mb"], 3)
        result = {
            "size_mb": round(size_mb, 2),
            "files": files,
            "index_s": round(index_s, 1),
            "s_per_mb": round(s_per_mb, 1),
            "peak_rss_mb": peak_mb,
            "time_per_mb_ratio": ratio,
            "stages": stages,
            "query_latency": latency,
            "reindex": reindex,
            "plot": str(plot_path := out_dir / "bench_scale.html"),
            "targets": {
                "44 MB index_s": 3600,
                "peak_rss_mb": 6144,
                "time_per_mb_ratio": 1.3,
                "reindex ratio": 0.05,
            },
        }
        (out_dir / f"bench_scale_{args.size:g}mb.json").write_text(json.dumps(result) + "\n")
        runs = [json.loads(p.read_text()) for p in sorted(out_dir.glob("bench_scale_*mb.json"))]
        plot(stages, runs, plot_path)
        print(json.dumps(result))
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work / "storage", ignore_errors=True)
            shutil.rmtree(corpus, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
