"""Is everything an answer quotes the document's prose (issue 71)? Prints JSON.

    nice -n 10 .venv/bin/python bench/bench_quoted_prose.py [--corpus manuals book] [--limit N] [--log]

Each corpus is indexed once, offline (the default engine and the `nlp` method), into a temporary storage
root: the three dev PDF manuals (/work/shared/data/pdf_manuals) in one namespace, and the sample book
(samples/demo). Every dev question (the manuals' 40; for the book the ten of bench/bench_stream.py and
the themes question) is asked in basic, local, DRIFT and global, and each mode's answers are counted by
`tests.support.quoted_prose.QuotedProse`: sentences, those holding a running header or footer line
(`header_footer`) or a contents or index line (`toc`), highlighted quotes overlapping either by offsets
(`quotes_boilerplate`), answers whose first cited passage is front matter (`first_citation_front`), and
sentences that end at a page reference's '(p.' (`truncated_at_citation`). The lines
are found from the index's own documents table, never from a rule of the pipeline the issue changes.

`--keep DIR` indexes into DIR and keeps it; a later run with the same DIR asks the kept indexes again.
`--log` appends the run to bench/results/bench_quoted_prose.json
(`make bench` appends it itself).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_stream import QUESTIONS as STREAM_QUESTIONS  # noqa: E402
from pipeline.core import schema  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from tests.support.quoted_prose import KINDS, DocumentLines, QuotedProse, documents_lines  # noqa: E402

MANUALS = ROOT.parent / "shared" / "data" / "pdf_manuals"
BOOK = ROOT / "samples" / "demo"
MODES = ("basic", "local", "drift", "global")
BOOK_QUESTIONS = [*STREAM_QUESTIONS, "What are the main themes of the story?"]


def build(input_dir: Path, root: Path, namespace: str) -> float:
    from pipeline.index.run import index_folder
    from pipeline.settings import Settings

    if (root / namespace).is_dir():  # --keep'ing an earlier run: its index is reused, not rebuilt
        return 0.0
    started = time.perf_counter()
    index_folder(namespace, input_dir, settings=Settings(storage_root=root), log=lambda m: None)
    return round(time.perf_counter() - started, 1)


def _documents(root: Path, namespace: str) -> dict[str, DocumentLines]:
    store = NamespaceStore(root, namespace)
    return documents_lines(store.read_table(schema.DOCUMENTS, columns=["id", "text", "layout"]).to_pylist())


def ask_all(root: Path, namespace: str, questions: list[str]) -> dict[str, Any]:
    from pipeline.api import answer
    from pipeline.settings import Settings

    settings = Settings(storage_root=root)
    docs = _documents(root, namespace)
    out: dict[str, Any] = {}
    for mode in MODES:
        counts = QuotedProse(docs)
        started = time.perf_counter()
        for question in questions:
            counts.add(answer(mode, namespace, question, settings=settings))
        out[mode] = {**counts.figures(), "seconds": round(time.perf_counter() - started, 1)}
        print(f"{namespace} {mode}: {out[mode]}", file=sys.stderr, flush=True)
    return out


def manuals(work: Path, limit: int | None, data: Path = MANUALS) -> dict[str, Any]:
    input_dir = work / "manuals_input"
    input_dir.mkdir(parents=True, exist_ok=True)
    for pdf in sorted(data.glob("*.pdf")):
        shutil.copy(pdf, input_dir / pdf.name)
    lines = (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(ln)["question"] for ln in lines if ln.strip()][:limit]
    root = work / "storage"
    seconds = build(input_dir, root, "manuals")
    result = ask_all(root, "manuals", questions)
    return {"index_s": seconds, "questions": len(questions), "modes": result}


def book(work: Path, limit: int | None) -> dict[str, Any]:
    root = work / "storage"
    seconds = build(BOOK, root, "book")
    questions = BOOK_QUESTIONS[:limit]
    return {
        "index_s": seconds,
        "questions": len(questions),
        "modes": ask_all(root, "book", questions),
    }


def totals(corpora: dict[str, Any]) -> dict[str, int]:
    out: Counter = Counter()
    for corpus in corpora.values():
        for figures in corpus["modes"].values():
            for key in KINDS:
                out[key] += figures[key]
    return dict(out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", nargs="+", choices=("manuals", "book"), default=["manuals", "book"])
    parser.add_argument("--manuals", type=Path, default=MANUALS, help="the dev manuals and questions.jsonl")
    parser.add_argument("--limit", type=int, help="ask only the first N questions of each corpus")
    parser.add_argument("--keep", type=Path, help="index into this folder and keep it")
    parser.add_argument("--log", action="store_true", help="append to bench/results/bench_quoted_prose.json")
    args = parser.parse_args()
    corpora: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="quoted_prose_") as tmp:
        for name in args.corpus:
            work = (args.keep or Path(tmp)) / name
            corpora[name] = (
                manuals(work, args.limit, args.manuals) if name == "manuals" else book(work, args.limit)
            )
    out = {"totals": totals(corpora), "corpora": corpora}
    print(json.dumps(out, indent=2))
    if args.log:
        from bench.results_log import append_run

        command = "bench/bench_quoted_prose.py " + " ".join(sys.argv[1:])
        append_run("bench_quoted_prose", out, command=command.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
