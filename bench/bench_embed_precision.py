"""MiniLM's speed and vectors in each number format this CPU runs natively; prints one JSON object.

    .venv/bin/python bench/bench_embed_precision.py [--corpus PATH] [--windows 192]

The texts are full model windows (254 word-pieces, the split the index uses) from the sample book, or
any text file or folder given. Each precision embeds them in the index's batches after one warm-up
call; it reports milliseconds per window and the cosine of each vector with fp32's (min and mean). bf16
runs only where the CPU has bf16 instructions (`resolve_precision`), int8 always. `auto` names what the
default resolves to on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.embeddings.minilm import LocalMiniLMEmbedder, cpu_has_native_bf16  # noqa: E402

DEFAULT_CORPUS = ROOT / "samples" / "demo"


def read_text(path: Path) -> str:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="a text file or folder")
    parser.add_argument("--windows", type=int, default=192, help="full windows to embed per precision")
    args = parser.parse_args()
    text = read_text(args.corpus)
    fp32 = LocalMiniLMEmbedder(precision="fp32")
    windows = [text[a:b] for a, b in fp32.split(text)][: args.windows]
    if len(windows) < 2:
        parser.error(f"{args.corpus} gives {len(windows)} windows; give a longer text")
    runs: list[tuple[str, LocalMiniLMEmbedder]] = [("fp32", fp32)]
    if cpu_has_native_bf16():
        runs.append(("bf16", LocalMiniLMEmbedder(precision="bf16")))
    runs.append(("int8", LocalMiniLMEmbedder(quantize="int8")))
    results: dict[str, dict[str, float]] = {}
    reference: np.ndarray | None = None
    for name, model in runs:
        model.embed(windows[: model.batch_size])  # load and warm up outside the clock
        started = time.perf_counter()
        vectors = model.embed(windows)
        seconds = time.perf_counter() - started
        reference = vectors if reference is None else reference
        cosine = np.einsum("ij,ij->i", reference, vectors)
        results[name] = {
            "ms_per_window": round(seconds / len(windows) * 1000, 1),
            "cosine_to_fp32_min": round(float(cosine.min()), 5),
            "cosine_to_fp32_mean": round(float(cosine.mean()), 5),
        }
    auto = LocalMiniLMEmbedder().precision
    base = results["fp32"]["ms_per_window"]
    print(
        json.dumps(
            {
                "windows": len(windows),
                "auto": auto,
                "speedup_auto_over_fp32": round(base / results[auto]["ms_per_window"], 2),
                "precisions": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
