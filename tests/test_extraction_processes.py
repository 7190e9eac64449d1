"""The offline extractor's worker processes (`pipeline/ops/extraction/processes.py`): the same records as
one process, a died worker costs no unit, and no pool where a process cannot have children."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa

from pipeline.engine.offline import OfflineEngine
from pipeline.ops.extraction import processes, table_counts, to_table
from pipeline.ops.extraction.models import ExtractionOptions
from pipeline.ops.extraction.run import extract_graph

BOOK = Path(__file__).resolve().parent.parent / "samples" / "demo" / "a_christmas_carol.txt"


def _units(n: int = 90) -> pa.Table:
    text = BOOK.read_text(encoding="utf-8")
    step = len(text) // n
    return pa.Table.from_pylist(
        [
            {
                "id": f"u{i:03d}",
                "document_id": "carol",
                "text": text[i * step : (i + 1) * step],
                "start_char": i * step,
            }
            for i in range(n)
        ]
    )


class _CountingPool(ProcessPoolExecutor):
    submitted = 0

    def submit(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - the executor's own signature
        type(self).submitted += 1
        return super().submit(*args, **kwargs)


def test_worker_processes_extract_the_same_records_as_one_process(monkeypatch):
    monkeypatch.setattr(processes, "ProcessPoolExecutor", _CountingPool)
    units = _units()
    one = extract_graph(units, ExtractionOptions(processes=1), OfflineEngine())
    assert _CountingPool.submitted == 0
    two = extract_graph(units, ExtractionOptions(processes=2), OfflineEngine())
    assert _CountingPool.submitted >= 2  # the packs went to the workers
    assert not processes._pools  # and the pool ended with the run
    counts = table_counts(to_table(one.units))
    assert counts["entity_mentions"] > 500 and counts["relationship_mentions"] > 100
    assert to_table(two.units).equals(to_table(one.units))


def _exit_in_a_worker(value: int) -> int:
    if multiprocessing.parent_process() is not None:
        os._exit(3)  # the worker dies as an OOM kill would end it
    return value * 2


def test_a_pack_whose_worker_died_is_done_in_process_and_the_pool_replaced():
    try:
        assert asyncio.run(processes.run_in_workers(_exit_in_a_worker, 21, 2)) == 42
        assert 2 not in processes._pools
        # the next pack gets a new pool, which works
        assert asyncio.run(processes.run_in_workers(abs, -5, 2)) == 5
        assert 2 in processes._pools
    finally:
        processes.shutdown()


def _report_workers(queue) -> None:  # noqa: ANN001 - a multiprocessing queue
    queue.put(processes.workers_for(0, 10**6))


def test_workers_are_one_per_core_for_long_runs_and_none_where_a_process_cannot_have_children():
    assert processes.workers_for(0, processes.MIN_UNITS_FOR_WORKERS - 1) == 1
    assert processes.workers_for(0, processes.MIN_UNITS_FOR_WORKERS) == processes.cores()
    assert processes.workers_for(3, 1) == 3  # asked for: no threshold
    assert processes.workers_for(1, 10**6) == 1
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_report_workers, args=(queue,), daemon=True)  # as dask's workers are
    child.start()
    try:
        assert queue.get(timeout=120) == 1
    finally:
        child.join(60)
    assert child.exitcode == 0


def test_settings_carry_the_process_count_into_the_options():
    from pipeline.settings import Settings

    assert ExtractionOptions.from_settings(Settings()).processes == 0
    assert ExtractionOptions.from_settings(Settings(extraction_processes=1)).processes == 1
