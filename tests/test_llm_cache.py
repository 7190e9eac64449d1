"""The LLM response cache: keys, atomic entries, and several processes writing at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

from pipeline.caches.base import cache_key
from pipeline.caches.sqlite_llm import LLMCache

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def test_key_covers_model_messages_params_and_prompt_version() -> None:
    base = cache_key("m", MESSAGES, {"temperature": 0.0, "max_tokens": 10}, "p-v1")
    assert base == cache_key("m", MESSAGES, {"max_tokens": 10, "temperature": 0.0}, "p-v1")  # dict order
    assert base != cache_key("m2", MESSAGES, {"temperature": 0.0, "max_tokens": 10}, "p-v1")
    assert base != cache_key("m", MESSAGES[:1], {"temperature": 0.0, "max_tokens": 10}, "p-v1")
    assert base != cache_key("m", MESSAGES, {"temperature": 0.5, "max_tokens": 10}, "p-v1")
    assert base != cache_key("m", MESSAGES, {"temperature": 0.0, "max_tokens": 10}, "p-v2")


def test_hits_and_misses_are_counted(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "llm.sqlite")
    assert cache.get("k") is None
    cache.put("k", '{"a": 1}', task="t", model="m", prompt_version="v", prompt_tokens=3, completion_tokens=4)
    hit = cache.get("k")
    assert hit is not None and hit.response == '{"a": 1}' and hit.prompt_tokens == 3
    assert cache.stats() == {"cache_hits": 1, "cache_misses": 1}
    assert LLMCache(tmp_path / "llm.sqlite").get("k") is not None  # persisted across instances


def test_a_failed_put_leaves_nothing_behind(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "llm.sqlite")
    try:
        cache.put("k", None, task="t", model="m", prompt_version="v")  # type: ignore[arg-type]
    except sqlite3.IntegrityError:
        pass
    else:
        raise AssertionError("a NULL response must be refused")
    assert cache.count() == 0 and cache.get("k") is None


def _writer(path: str, worker: int, n: int, start: Any) -> None:
    cache = LLMCache(path)
    start.wait()
    for i in range(n):
        cache.put(
            f"{worker}-{i}", f'{{"worker": {worker}, "i": {i}}}', task="t", model="m", prompt_version="v"
        )


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "llm.sqlite")
    n = 300
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    workers = [ctx.Process(target=_writer, args=(path, w, n, start)) for w in (1, 2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
        assert p.exitcode == 0
    cache = LLMCache(path)
    assert cache.count() == 2 * n
    for w in (1, 2):
        for i in (0, n // 2, n - 1):
            hit = cache.get(f"{w}-{i}")
            assert hit is not None and hit.response == f'{{"worker": {w}, "i": {i}}}'
