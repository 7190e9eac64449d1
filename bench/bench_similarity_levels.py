"""Similarity levels measured on each embedder (`pipeline/embeddings/levels.py` explains the rule), against
the constants the code was tuned with on MiniLM.

    .venv/bin/python bench/bench_similarity_levels.py

Rows: MiniLM in fp32, bf16 where the CPU has it, int8, and MiniLM lifted to 768 dimensions by an
orthonormal map (the test suite's OpenAI-compatible server): each one's landmarks, levels and largest
distance from the constants. `corpus_floor` is why the landmarks come from fixed probe pairs and not
from the corpus: the median cosine of random text-unit pairs (the index's units, under their document
title) of the sample book and of MuSiQue-100 under one model.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.embeddings import levels  # noqa: E402
from pipeline.embeddings.minilm import MINILM_CALIBRATION, LocalMiniLMEmbedder, cpu_has_native_bf16  # noqa: E402
from tests.support.minilm_http import lift_matrix  # noqa: E402


def row(name: str, embed) -> dict:  # noqa: ANN001
    started = time.monotonic()
    found = levels.learn(embed, name)
    return {
        "embedder": name,
        "floor": found.marks.floor if found.marks else None,
        "near": found.marks.near if found.marks else None,
        "levels": asdict(found.levels),
        "max_abs_diff_from_constants": round(
            max(abs(getattr(found.levels, k) - getattr(MINILM_CALIBRATION, k)) for k in levels.LEVELS), 3
        ),
        "seconds": round(time.monotonic() - started, 2),
    }


def main() -> int:
    rows = []
    fp32 = LocalMiniLMEmbedder(precision="fp32")
    rows.append(row("minilm-fp32", fp32.embed))
    if cpu_has_native_bf16():
        rows.append(row("minilm-bf16", LocalMiniLMEmbedder(precision="bf16").embed))
    rows.append(row("minilm-int8", LocalMiniLMEmbedder(quantize="int8").embed))
    lift = lift_matrix()
    rows.append(row("minilm-lifted-768", lambda texts: np.asarray(fp32.embed(texts)) @ lift.T))
    result = {
        "bench": "similarity_levels",
        "constants": asdict(MINILM_CALIBRATION),
        "rows": rows,
        # measured once with MiniLM fp32 (2026-12-07): random unit pairs' median cosine per corpus
        "corpus_floor": {"sample_book": 0.7242, "musique_100": 0.0131},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
