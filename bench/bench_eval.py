"""`pipeline eval` speed: 100 MuSiQue-100 questions in five modes (basic, local, drift, global, lazy),
offline, after the index is warm (one question per mode asked first); prints JSON.

    .venv/bin/python bench/bench_eval.py [--storage DIR] [--modes ...] [--limit N]

The index is `make eval`'s (`bench/eval_sets.py`: data/eval_storage, built once when missing).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.eval_sets import NAMESPACES, ensure_index, prepare, set_inputs  # noqa: E402

MODES = "basic,local,drift,global,lazy"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, default=ROOT / "data" / "eval_storage")
    parser.add_argument("--namespace", default=NAMESPACES["musique"])
    parser.add_argument("--modes", default=MODES)
    parser.add_argument("--limit", type=int, default=100)
    args = parser.parse_args()
    prepare(args.storage.resolve())
    with tempfile.TemporaryDirectory() as work:
        input_dir, qfile = set_inputs("musique", Path(work), None)
        ensure_index(args.namespace, input_dir)

        from pipeline.eval.questions import load_questions
        from pipeline.eval.run import EvalRun, evaluate_async, parse_modes
        from pipeline.runtime import query_runtime

        questions = load_questions(qfile, args.limit)
    modes = parse_modes(args.modes)
    rt = query_runtime(args.namespace)
    started = time.perf_counter()

    def evaluate(qs: list, on_progress: Callable[[str], None] | None = None) -> EvalRun:
        return rt.engine.run_sync(
            evaluate_async(rt.store, rt.engine, rt.embedder, rt.settings, qs, modes, on_progress)
        )

    evaluate(questions[:1])
    warm_up = time.perf_counter() - started
    per_mode: dict[str, float] = {}
    run = evaluate(
        questions, lambda m: per_mode.update({m.split(":")[0]: float(m.split(" in ")[1].rstrip("s"))})
    )
    overall = {m: s["overall"] for m, s in run.summary.items()}
    print(
        json.dumps(
            {
                "questions": len(questions),
                "modes": modes,
                "warm_up_s": round(warm_up, 1),
                "seconds": round(run.seconds, 1),
                "seconds_per_mode": per_mode,
                "answer_coverage": {m: o["answer_coverage"] for m, o in overall.items()},
                "context_recall": {m: o["context_recall"] for m, o in overall.items()},
                "latency_p50_ms": {m: o["latency_p50_ms"] for m, o in overall.items()},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
