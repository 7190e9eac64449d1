"""Embeddings from an OpenAI-compatible endpoint, behind `pipeline.embeddings.base.Embedder`.

Requests go through `LLMClient` (retries, concurrency, deadlines, usage). Inputs are split and batched
by token budgets counted with tiktoken's cl100k_base, the tokenizer of OpenAI's embedding models; for
other servers the budgets are an estimate, so leave them some room (Ollama's and vLLM's models often
read far fewer than OpenAI's 8191 tokens: set PIPELINE_EMBEDDING_MAX_INPUT_TOKENS to their window).

Every request runs on one event loop per process (`SharedLoop`): a sync caller inside a running loop
(a query mode, a Jupyter cell) cannot `asyncio.run`, and one loop keeps one connection pool for every
query of a service instead of a new one per question.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.core import client_defaults as cd
from pipeline.core.tokens import get_encoding
from pipeline.embeddings.base import Calibration
from pipeline.llm.batch import gather_settled
from pipeline.llm.blocking import SharedLoop
from pipeline.llm.client import LLMClient
from pipeline.llm.errors import EmbeddingUnavailableError, LLMError, is_unreachable
from pipeline.llm.transport import read_api_key
from pipeline.llm.usage import DEFAULT_PRICES, Usage

EMBEDDING_ENCODING = "cl100k_base"
MAX_INPUTS_PER_REQUEST = 2048  # OpenAI's limit for one embeddings request
# Stand-in levels until an index measures the model's own (`pipeline.embeddings.levels`): a query on a
# namespace indexed before levels were measured. text-embedding-3 cosines run lower than MiniLM's for
# related text (on-topic pairs ~0.4-0.6, unrelated ~0.0-0.15), so every level sits lower.
OPENAI_CALIBRATION = Calibration(related=0.6, relevant=0.2, useless=0.1, useful=0.5, entity=0.35)
_REQUESTS = SharedLoop("openai-embeddings")


class OpenAIEmbedder:
    """Embedder for `PIPELINE_EMBEDDING_PROVIDER=openai`; the dimension is learned from the server."""

    def __init__(
        self,
        client: LLMClient,
        *,
        max_input_tokens: int = cd.EMBEDDING_MAX_INPUT_TOKENS,
        batch_tokens: int = cd.EMBEDDING_BATCH_TOKENS,
        piece_overlap: int = 32,
        dimensions: int | None = None,
    ) -> None:
        self.client = client
        self.dimensions = dimensions
        self.max_input_tokens = max_input_tokens
        self.batch_tokens = max(batch_tokens, max_input_tokens)
        self.piece_overlap = min(piece_overlap, max_input_tokens // 4)
        self._dimension: int | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Any, usage: Usage | None = None) -> OpenAIEmbedder:
        client = LLMClient(
            model=settings.embedding_model,
            api_key=read_api_key(settings.embedding_api_key_env, settings.embedding_base_url),
            base_url=settings.embedding_base_url,
            timeout_s=settings.embedding_timeout_s,
            max_retries=settings.embedding_max_retries,
            concurrency=settings.embedding_concurrency,
            usage=usage,
            prices={**DEFAULT_PRICES, **settings.llm_prices},
        )
        return cls(
            client,
            max_input_tokens=settings.embedding_max_input_tokens,
            batch_tokens=settings.embedding_batch_tokens,
            dimensions=settings.embedding_dimensions,
        )

    @property
    def model_id(self) -> str:
        shortened = f":{self.dimensions}d" if self.dimensions else ""
        return f"openai:{self.client.endpoint}/{self.client.model}{shortened}:normalized"

    @property
    def model_name(self) -> str:
        """The model without its endpoint: the same model served elsewhere makes the same vectors."""
        shortened = f":{self.dimensions}d" if self.dimensions else ""
        return f"openai:{self.client.model}{shortened}"

    @property
    def calibration(self) -> Calibration:
        return OPENAI_CALIBRATION

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension probe"])  # the server is the only authority on it
        assert self._dimension is not None
        return self._dimension

    def split(self, text: str) -> list[tuple[int, int]]:
        """Character spans of overlapping windows of at most `max_input_tokens` tokens."""
        encoding = get_encoding(EMBEDDING_ENCODING)
        tokens = encoding.encode(text, disallowed_special=())
        if len(tokens) <= self.max_input_tokens:
            return [(0, len(text))]
        _decoded, starts = encoding.decode_with_offsets(tokens)
        step = self.max_input_tokens - self.piece_overlap
        spans = []
        for first in range(0, len(tokens), step):
            last = min(first + self.max_input_tokens, len(tokens))
            spans.append((starts[first], starts[last] if last < len(tokens) else len(text)))
            if last == len(tokens):
                break
        return spans

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors; batches are sent concurrently under the client's limit."""
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        batches = self._batches(texts)
        results = _REQUESTS.run(
            gather_settled(batches, lambda batch: self.client.embed(batch, dimensions=self.dimensions))
        )
        for result in results:
            if isinstance(result, LLMError):
                raise unavailable(result, self.client) if is_unreachable(result) else result
        vectors = np.asarray([v for batch in results for v in batch], dtype=np.float32)
        self._learn_dimension(vectors.shape[1])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        encoding = get_encoding(EMBEDDING_ENCODING)
        batches: list[list[str]] = [[]]
        used = 0
        for text in texts:
            # Empty input is an error for OpenAI; a space embeds as "nothing" and keeps positions aligned.
            text = text or " "
            cost = len(encoding.encode(text, disallowed_special=()))
            full = len(batches[-1]) >= MAX_INPUTS_PER_REQUEST or used + cost > self.batch_tokens
            if batches[-1] and full:
                batches.append([])
                used = 0
            batches[-1].append(text)
            used += cost
        return batches

    def _learn_dimension(self, dimension: int) -> None:
        with self._lock:
            if self._dimension is None:
                self._dimension = dimension
            elif self._dimension != dimension:
                raise LLMError(
                    f"{self.model_id} returned {dimension}-d vectors after {self._dimension}-d ones; "
                    "the server's model changed mid-run"
                )


def unavailable(error: LLMError, client: LLMClient) -> EmbeddingUnavailableError:
    """One line that names the embedding server and the model, for an error that means it is not there."""
    return EmbeddingUnavailableError(
        f"the embedding server at {client.endpoint} (model {client.model!r}) is unavailable: {error}. "
        "Start it, or check PIPELINE_EMBEDDING_BASE_URL",
        task="embed",
    )
