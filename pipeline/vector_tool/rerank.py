"""Rerankers for the vector query tool: RRF hybrid (vector + full text), a weighted reranker over a
relevance scorer (Mastra's semantic / vector / position weights) and the scorers it can use.

A reranker is any object with ``RRFHybridReranker.rerank``'s signature (``is_reranker``): it gets the
store's results and returns them re-ordered and re-scored; the tool falls back to the un-reranked results
(with a warning) when a reranker fails.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.vector_tool.stores.base import QueryResult, StoreError, fuse_rrf

DEFAULT_WEIGHTS = {"semantic": 0.4, "vector": 0.4, "position": 0.2}


@runtime_checkable
class RelevanceScorer(Protocol):
    def score(self, query: str, text: str) -> Any:
        """Relevance of ``text`` to ``query`` in [0, 1] (a float, or an awaitable of one)."""
        ...


class RerankError(RuntimeError):
    pass


@dataclass
class RRFHybridReranker:
    """Fuses the vector results with the store's full-text results by Reciprocal Rank Fusion."""

    k: int = 60
    text_top_k: int | None = None

    async def rerank(
        self,
        query: str,
        results: list[QueryResult],
        top_k: int,
        *,
        store: Any,
        index_name: str,
        filter: Mapping[str, Any] | None,
    ) -> list[QueryResult]:
        text_query = getattr(store, "text_query", None)
        if text_query is None:
            raise StoreError(f"{store!r} has no full-text search for RRF hybrid reranking")
        limit = self.text_top_k or max(top_k, len(results))
        text_hits = await asyncio.to_thread(text_query, index_name, query, limit, filter=filter)
        return fuse_rrf([results, text_hits], top_k, k=self.k)


@dataclass
class WeightedReranker:
    """final = semantic x w_s + vector x w_v + position x w_p, where semantic comes from the scorer,
    vector is the store's score and position = 1 - index / total. Weights must sum to 1."""

    scorer: RelevanceScorer
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    top_k: int | None = None

    def __post_init__(self) -> None:
        merged = {**DEFAULT_WEIGHTS, **self.weights}
        unknown = set(merged) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown reranker weights {sorted(unknown)}; use {sorted(DEFAULT_WEIGHTS)}")
        bad = {k: v for k, v in merged.items() if not (isinstance(v, int | float) and 0.0 <= v <= 1.0)}
        if bad:
            raise ValueError(f"reranker weights must be numbers in [0, 1], got {bad}")
        total = math.fsum(merged.values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):  # 0.1 + 0.2 + 0.7 is 1 here (Mastra needs big.js)
            raise ValueError(f"Weights must add up to 1, got {total} from {merged}")
        self.weights = merged

    async def _semantic(self, query: str, result: QueryResult) -> float:
        text = result.metadata.get("text") or result.document
        if not text:
            return 0.0
        value = self.scorer.score(query, str(text))
        if inspect.isawaitable(value):
            value = await value
        value = float(value)
        if not 0.0 <= value <= 1.0 or math.isnan(value):
            raise RerankError(f"relevance scorer returned {value}, expected a number in [0, 1]")
        return value

    async def rerank(
        self,
        query: str,
        results: list[QueryResult],
        top_k: int,
        *,
        store: Any = None,
        index_name: str = "",
        filter: Mapping[str, Any] | None = None,
    ) -> list[QueryResult]:
        semantic = await asyncio.gather(*(self._semantic(query, r) for r in results))
        total = len(results)
        w = self.weights
        scored = []
        for i, (r, s) in enumerate(zip(results, semantic, strict=True)):
            final = w["semantic"] * s + w["vector"] * float(r.score) + w["position"] * (1.0 - i / total)
            scored.append((final, i, r))
        scored.sort(key=lambda t: (-t[0], t[1]))
        keep = self.top_k or top_k
        return [QueryResult(r.id, final, r.metadata, r.vector, r.document) for final, _, r in scored[:keep]]


@dataclass
class EmbeddingRelevanceScorer:
    """Offline semantic score: cosine of the query and passage embeddings, clipped to [0, 1]."""

    embedder: Any

    def score(self, query: str, text: str) -> float:
        q, t = np.asarray(self.embedder.embed([query, text]), dtype=np.float64)
        denom = float(np.linalg.norm(q) * np.linalg.norm(t))
        return min(1.0, max(0.0, float(q @ t) / denom)) if denom else 0.0


class RelevanceScore(BaseModel):
    score: float = Field(ge=0.0, le=1.0, description="Relevance of the passage to the query, 0 to 1")


@dataclass
class LLMRelevanceScorer:
    """Asks a model through the LLM layer (cache, retries, validation) to rate each passage."""

    client: Any  # pipeline.llm.LLMClient
    max_chars: int = 4000
    deadline: float | None = None

    async def score(self, query: str, text: str) -> float:
        prompt = prompts.RELEVANCE_SCORE
        reply = await self.client.complete_json(
            prompt.messages(query=query, text=text[: self.max_chars]),
            RelevanceScore,
            task=prompt.name,
            prompt_version=prompt.version,
            deadline=self.deadline,
        )
        return reply.score


def is_reranker(value: Any) -> bool:
    return callable(getattr(value, "rerank", None))


def as_reranker(value: Any, embedder: Any) -> Any:
    """A reranker from an object that reranks, or from Mastra's configuration form
    ``{"model": ..., "options": {"weights": {...}, "topK": n}}``: the model is a relevance scorer (``score``),
    an LLM client (``complete_json``: the model rates each passage) or an embedder (``embed``); a model
    of None or "embedding" scores with the tool's own embedder. None stays None (no reranking)."""
    if value is None or is_reranker(value):
        return value
    if not isinstance(value, Mapping) or "model" not in value:
        raise ValueError(
            f"a reranker is an object with rerank() or {{'model': ..., 'options': {{...}}}}, got {value!r}"
        )
    model = value["model"]
    if model is None or model == "embedding":
        scorer: Any = EmbeddingRelevanceScorer(embedder)
    elif callable(getattr(model, "score", None)):
        scorer = model
    elif callable(getattr(model, "complete_json", None)):
        scorer = LLMRelevanceScorer(model)
    elif callable(getattr(model, "embed", None)):
        scorer = EmbeddingRelevanceScorer(model)
    else:
        raise ValueError(f"reranker model {model!r} is not a relevance scorer, an LLM client or an embedder")
    options = value.get("options") or {}
    unknown = set(options) - {"weights", "topK", "top_k"}
    if unknown:
        raise ValueError(f"unknown reranker options {sorted(unknown)}; use weights, topK")
    top_k = options.get("topK", options.get("top_k"))
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"reranker topK must be a positive integer, got {top_k!r}")
    return WeightedReranker(scorer, dict(options.get("weights") or DEFAULT_WEIGHTS), top_k)
