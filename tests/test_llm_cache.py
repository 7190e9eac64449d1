"""The LLM response cache: keys, atomic entries, and several processes writing at once."""

from __future__ import annotations

import logging
import multiprocessing
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.caches import sqlite_wal
from pipeline.caches.base import cache_key
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.caches.sqlite_llm import LLMCache
from tests.support.processes import run_to_completion

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
    start.wait()  # both processes open the new file at the same moment, then write
    cache = LLMCache(path)
    for i in range(n):
        cache.put(
            f"{worker}-{i}", f'{{"worker": {worker}, "i": {i}}}', task="t", model="m", prompt_version="v"
        )


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "llm.sqlite")
    n = 300
    ctx = multiprocessing.get_context("spawn")
    # timeout: a worker that dies early breaks the barrier instead of hanging the other
    start = ctx.Barrier(2, timeout=120)
    workers = [ctx.Process(target=_writer, args=(path, w, n, start), daemon=True) for w in (1, 2)]
    run_to_completion(workers)
    cache = LLMCache(path)
    assert cache.count() == 2 * n
    for w in (1, 2):
        for i in (0, n // 2, n - 1):
            hit = cache.get(f"{w}-{i}")
            assert hit is not None and hit.response == f'{{"worker": {w}, "i": {i}}}'


class _Retried(logging.Handler):
    """Set when the cache setup reports that it found the file locked and will try again."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "retrying" in record.getMessage():
            self.event.set()


@pytest.fixture
def retried() -> Iterator[threading.Event]:
    handler, logger = _Retried(), sqlite_wal.log
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.event
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.parametrize("open_cache", [LLMCache, EmbeddingCache], ids=["llm", "embedding"])
def test_opening_a_new_cache_file_another_process_is_writing_waits_instead_of_failing(
    tmp_path: Path, retried: threading.Event, open_cache: Callable[[Path], Any]
) -> None:
    """The race of two processes creating one cache file, made certain: SQLite refuses the switch to WAL at
    once ("database is locked", no busy wait) while another connection holds a write lock on the file."""
    path = tmp_path / "cache.sqlite"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("CREATE TABLE other_process (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO other_process VALUES (1)")
    outcome: list[Any] = []

    def open_it() -> None:
        try:
            outcome.append(open_cache(path))
        except Exception as exc:  # reported by the assertion below
            outcome.append(exc)

    opener = threading.Thread(target=open_it)
    opener.start()
    while not retried.wait(0.05):  # the opener met the lock; it would have failed here before the fix
        assert opener.is_alive(), f"gave up while the file was locked: {outcome!r}"
    other.execute("COMMIT")
    other.close()
    opener.join(timeout=120)
    assert not opener.is_alive() and isinstance(outcome[0], open_cache), outcome
    cache = outcome[0]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    if isinstance(cache, LLMCache):
        cache.put("k", "v", task="t", model="m", prompt_version="v")
        assert cache.get("k").response == "v"
