"""Disk use of a namespace after repeated re-indexes of the bundled sample through Dagster; prints JSON.

    .venv/bin/python bench/bench_reindex_disk.py [--runs 10] [--input samples/demo] [--edit]

A re-index of unchanged documents used to replace every LanceDB table anyway, and each replace left a
new version of it (rows and full-text indexes) on disk: 10 runs, 10 copies. Now unchanged rows are not
written again, and a real replace keeps `PIPELINE_LANCE_KEEP_VERSIONS` versions. `--edit` appends a
sentence to one document before each re-index, so that every run really replaces tables. Reports the namespace folder's bytes after the first index and after each re-index
(the embedding and LLM caches live outside it, under `_cache`), their ratio (the target is 1.5 or
less), the LanceDB versions left per table, and the seconds per run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 1.5


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--input", type=Path, default=ROOT / "samples" / "demo")
    parser.add_argument("--edit", action="store_true", help="edit one document before each re-index")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_disk_"))
    try:
        shutil.copytree(args.input, work / "input")
        edited = sorted(p for p in (work / "input").rglob("*") if p.is_file())[0]
        os.environ["PIPELINE_STORAGE_ROOT"] = str(work / "storage")
        os.environ["DAGSTER_HOME"] = str(work / "dagster_home")
        Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True)
        shutil.copyfile(ROOT / "dagster.yaml", Path(os.environ["DAGSTER_HOME"]) / "dagster.yaml")
        from assets.launch import run_index
        from pipeline.io.store import NamespaceStore

        namespace_dir = work / "storage" / "disk"
        sizes, seconds = [], []
        for run in range(args.runs):
            if args.edit and run:
                with edited.open("a", encoding="utf-8") as f:
                    f.write(f"\nRevision {run}: Ada Lovelace wrote to Charles Babbage about the engine.\n")
            t = time.perf_counter()
            result = run_index("disk", input_dir=str(work / "input"))
            seconds.append(round(time.perf_counter() - t, 1))
            if not result.success:
                print(json.dumps({"error": result.failures}))
                return 1
            sizes.append(folder_bytes(namespace_dir))
        store = NamespaceStore(work / "storage", "disk")
        db = store.lancedb()
        versions = {
            name: len(db.open_table(name).list_versions()) for name in sorted(db.list_tables().tables)
        }
        print(
            json.dumps(
                {
                    "runs": args.runs,
                    "edited": args.edit,
                    "first_index_mb": round(sizes[0] / 1e6, 2),
                    "after_last_mb": round(sizes[-1] / 1e6, 2),
                    "ratio": round(sizes[-1] / sizes[0], 2),
                    "target_ratio": TARGET_RATIO,
                    "mb_per_run": [round(s / 1e6, 2) for s in sizes],
                    "lance_versions": versions,
                    "keep_versions": store.keep_versions,
                    "seconds_per_run": seconds,
                },
                indent=2,
            )
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
