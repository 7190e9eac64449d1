"""`make eval`: `pipeline eval` on the shared sets, MuSiQue-100 and GraphRAG-Bench novel split A, offline.

    .venv/bin/python bench/eval_sets.py [--sets musique,novel] [--books N] [--limit N] [--modes ...]
        [--storage DIR] [--out DIR] [--ablations]

Each set is indexed once into `--storage` (default `data/eval_storage`, kept between runs: a second run
re-uses every stage) through the Dagster job, then evaluated with `pipeline eval` (`assets.cli`), each
set's report in `--out/<set>/` (default `data/eval`). `--books N` indexes only the first N books of split
A (by sorted corpus name; all 10 by default) and evaluates their questions. `--ablations` also runs
today's passage-ranking ablations (`bench/eval_retrieval.py`: recall@k per passage signal, the routing
confusion table) on MuSiQue-100, on the same index.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
MUSIQUE = DATA / "musique_hipporag100"
NOVELS = DATA / "graphrag_bench_novel_a"
NAMESPACES = {"musique": "eval_musique", "novel": "eval_novel"}


def prepare(storage: Path) -> None:
    """Storage and a Dagster home beside it, for the index runs and `pipeline eval` alike."""
    os.environ["PIPELINE_STORAGE_ROOT"] = str(storage)
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(storage.parent / "eval_dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copyfile(ROOT / "dagster.yaml", home / "dagster.yaml")


def set_inputs(name: str, work: Path, books: int | None) -> tuple[Path, Path]:
    """The set's documents as an input folder, and its questions file (novel: the books indexed only)."""
    from bench.eval_retrieval import corpus_records

    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    if name == "musique":
        records = corpus_records(
            json.loads((MUSIQUE / "musique_train_corpus.json").read_text(encoding="utf-8"))
        )
        (folder / "musique_train_corpus.json").write_text(json.dumps(records), encoding="utf-8")
        return folder, MUSIQUE / "musique_train.json"
    corpus = sorted(
        json.loads((NOVELS / "novel_corpus.json").read_text(encoding="utf-8")), key=lambda r: r["corpus_name"]
    )
    kept = corpus[:books]
    for book in kept:
        (folder / f"{book['corpus_name']}.txt").write_text(book["context"], encoding="utf-8")
    names = {b["corpus_name"] for b in kept}
    questions = [
        q
        for q in json.loads((NOVELS / "novel_questions.json").read_text(encoding="utf-8"))
        if q["source"] in names
    ]
    qfile = work / "novel_questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    return folder, qfile


def ensure_index(namespace: str, input_dir: Path) -> None:
    """Index `input_dir` as `namespace` unless it is indexed (its communities exist)."""
    from assets.launch import run_index
    from pipeline.io.store import NamespaceStore

    if NamespaceStore(os.environ["PIPELINE_STORAGE_ROOT"], namespace).has_table("communities"):
        return
    print(f"indexing {namespace} from {input_dir} ...", file=sys.stderr, flush=True)
    result = run_index(namespace, input_dir=str(input_dir), quiet=True)
    if not result.success:
        raise SystemExit(f"indexing {namespace} failed: {result.failures}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="musique,novel")
    parser.add_argument("--books", type=int, default=None, help="novel: only the first N books of split A")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each set")
    parser.add_argument("--modes", default=None, help="comma-separated (default: every mode)")
    parser.add_argument("--storage", type=Path, default=ROOT / "data" / "eval_storage")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "eval")
    parser.add_argument("--ablations", action="store_true", help="also bench/eval_retrieval.py on MuSiQue")
    args = parser.parse_args()
    prepare(args.storage.resolve())
    from assets.cli import main as pipeline

    work = Path(tempfile.mkdtemp(prefix="eval_sets_"))
    codes = {}
    try:
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            input_dir, questions = set_inputs(name, work, args.books)
            ensure_index(NAMESPACES[name], input_dir)
            argv = [
                "eval",
                "--namespace",
                NAMESPACES[name],
                "--questions",
                str(questions),
                "--out",
                str(args.out / name),
            ]
            argv += ["--modes", args.modes] if args.modes else []
            argv += ["--limit", str(args.limit)] if args.limit else []
            print(f"\n== {name} ==", flush=True)
            codes[name] = pipeline(argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.ablations:
        storage = os.environ["PIPELINE_STORAGE_ROOT"]
        cmd = [sys.executable, str(ROOT / "bench" / "eval_retrieval.py"), "--storage", storage]
        codes["ablations"] = subprocess.call([*cmd, "--namespace", NAMESPACES["musique"]])
    return max(codes.values(), default=0)


if __name__ == "__main__":
    sys.exit(main())
