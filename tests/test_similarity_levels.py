"""Similarity levels measured on the embedding model (`pipeline.embeddings.levels`), and the embedding
replies teams' servers send (widths, base64, `dimensions`)."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from pipeline.embeddings import levels
from pipeline.embeddings.base import Calibration
from pipeline.embeddings.minilm import MINILM_CALIBRATION
from pipeline.llm.retry import GarbledResponseError
from pipeline.llm.transport import vector_of
from pipeline.runtime import make_embedder
from pipeline.settings import Settings
from tests.support.minilm_http import MODEL, MiniLMServer, lift_matrix


class Scaled:
    """A model whose cosines are another's squeezed into [floor, 1]: what e5-like models look like."""

    def __init__(self, inner: object, floor: float) -> None:
        self.inner, self.floor = inner, floor
        self.model_id, self.dimension = "scaled", inner.dimension + 1  # type: ignore[attr-defined]

    def embed(self, texts: list[str]) -> np.ndarray:
        v = np.asarray(self.inner.embed(texts), dtype=np.float64)  # type: ignore[attr-defined]
        # a shared component of weight sqrt(floor) lifts every cosine c to floor + (1 - floor) * c
        out = np.hstack([v * np.sqrt(1 - self.floor), np.full((len(v), 1), np.sqrt(self.floor))])
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_minilm_measures_its_tuned_constants_and_so_does_any_orthonormal_lift(embedder: object) -> None:
    found = levels.learn(embedder)
    assert found.levels == MINILM_CALIBRATION and found.source == "learned"
    lift = lift_matrix()

    class Lifted:
        model_id, dimension = "lifted", 768

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.asarray(embedder.embed(texts)) @ lift.T  # type: ignore[attr-defined]

    assert levels.learn(Lifted()).levels == MINILM_CALIBRATION


def test_a_model_whose_cosines_all_sit_high_gets_levels_that_sit_high(embedder: object) -> None:
    squeezed = levels.learn(Scaled(embedder, 0.7))
    assert squeezed.marks is not None and squeezed.marks.floor > 0.7
    # every level moves up, keeping its order: a fixed 0.25 floor would let everything through
    assert squeezed.levels.relevant >= 0.75 and squeezed.levels.related > squeezed.levels.entity
    assert squeezed.levels.useful > squeezed.levels.useless >= 0.7


def test_stored_levels_round_trip_and_damaged_metadata_falls_back_to_defaults() -> None:
    stored = levels.StoredLevels(
        MINILM_CALIBRATION, "learned", "openai:h:1/m:normalized", 768, None, "openai:m"
    )
    assert levels.StoredLevels.from_json(stored.to_json()) == stored
    assert levels.from_metadata({levels.METADATA_KEY: b"{not json"}) is None
    assert levels.from_metadata(None) is None


def test_an_index_without_levels_uses_the_models_defaults_and_says_so(embedder: object) -> None:
    leveled = levels.for_namespace(embedder, None)
    assert leveled.calibration == MINILM_CALIBRATION
    assert "model defaults" in leveled.levels_source and "next run" in leveled.levels_source


def test_overrides_win_and_are_named(embedder: object) -> None:
    class Overridden:
        def __init__(self, inner: object) -> None:
            self.inner = inner
            self.level_overrides = {"related": 0.8}

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    stored = levels.learn(embedder)
    leveled = levels.for_namespace(Overridden(embedder), stored)
    assert leveled.calibration.related == 0.8 and leveled.calibration.relevant == 0.25
    assert "PIPELINE_SIMILARITY_LEVELS (related)" in leveled.levels_source


def test_another_model_or_width_is_refused_with_both_named(embedder: object) -> None:
    other = levels.StoredLevels(
        Calibration(0.6, 0.2, 0.1, 0.5, 0.35), "learned", "openai:h/text-embedding-3-small:normalized", 1536
    )
    with pytest.raises(levels.EmbedderMismatchError, match=r"1536-d.*384-d.*--reembed"):
        levels.for_namespace(embedder, other)
    # the same model served elsewhere, or run in another number format, is the same vector space
    assert levels.model_family("local:m:normalized:bf16") == levels.model_family("local:m:normalized")


def test_base64_vectors_are_read_and_garbage_is_named() -> None:
    v = np.asarray([0.5, -0.25, 1.0], dtype="<f4")
    assert vector_of(base64.b64encode(v.tobytes()).decode()) == [0.5, -0.25, 1.0]
    assert vector_of([0.1, 0.2]) == [0.1, 0.2]
    with pytest.raises(GarbledResponseError):
        vector_of("not base64!")


def test_the_dimensions_parameter_shortens_the_servers_vectors(
    minilm_http: MiniLMServer, tmp_path: Path
) -> None:
    settings = Settings(
        storage_root=tmp_path,
        embedding_provider="openai",
        embedding_base_url=minilm_http.base_url,
        embedding_model=MODEL,
        embedding_dimensions=256,
    )
    embedder = make_embedder(settings)
    vectors = embedder.embed(["Marley was dead, to begin with.", "Tiny Tim"])
    assert vectors.shape == (2, 256) and embedder.dimension == 256
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.model_id.endswith(":256d:normalized")  # cached apart from the full width
