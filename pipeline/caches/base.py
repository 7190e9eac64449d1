"""What a cache is to its users: the LLM client needs a `ResponseCache`, the cached embedder a
`VectorCache`. One file per backend beside this one (SQLite for one machine, PostgreSQL for several);
`pipeline.runtime` chooses which. `ResponseCacheBase` is what both LLM backends share.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


def cache_key(
    model: str, messages: list[dict[str, Any]], params: Mapping[str, Any], prompt_version: str
) -> str:
    """sha256 of everything that changes the answer; dict order does not matter."""
    blob = json.dumps(
        {"model": model, "messages": messages, "params": params, "prompt_version": prompt_version},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    response: str
    prompt_tokens: int
    completion_tokens: int


class ResponseCacheBase:
    """What both LLM cache backends share: an entry's columns in one order, and this instance's hits and
    misses counted across threads. A backend reads one entry (`_select`) and writes one (`_insert`)."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()

    def _select(self, key: str) -> tuple[str, int, int] | None:
        """(response, prompt_tokens, completion_tokens) of the entry, None if there is none."""
        raise NotImplementedError

    def _insert(self, entry: tuple[str, str, str, str, str, int, int]) -> None:
        """Store (key, task, model, prompt_version, response, prompt_tokens, completion_tokens) atomically."""
        raise NotImplementedError

    def get(self, key: str) -> CachedResponse | None:
        row = self._select(key)
        with self._count_lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if row is None else CachedResponse(*row)

    def put(
        self,
        key: str,
        response: str,
        *,
        task: str,
        model: str,
        prompt_version: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        """Store one entry atomically (see the backend's `_insert` for a concurrent writer of the key)."""
        self._insert((key, task, model, prompt_version, response, prompt_tokens, completion_tokens))

    def stats(self) -> dict[str, int]:
        with self._count_lock:
            return {"cache_hits": self.hits, "cache_misses": self.misses}


class ResponseCache(Protocol):
    """What the LLM client needs of a cache: `LLMCache` (SQLite) or `PgLLMCache` (PostgreSQL)."""

    def get(self, key: str) -> CachedResponse | None: ...

    def put(self, key: str, response: str, **meta: Any) -> None:
        """Store one entry; `meta` is what `ResponseCacheBase.put` names (task, model, prompt_version, tokens)."""
        ...

    def forget(self, key: str) -> None: ...

    def count(self, task: str | None = None) -> int: ...

    def stats(self) -> dict[str, int]: ...

    def close(self) -> None: ...


class VectorCache(Protocol):
    """What CachedEmbedder needs of a cache: `EmbeddingCache` (SQLite) or `PgEmbeddingCache` (PostgreSQL)."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None: ...

    def count(self, model: str | None = None) -> int: ...
