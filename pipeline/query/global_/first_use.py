"""Reports written on first use: a namespace indexed with `PIPELINE_REPORTS=on_demand` holds extractive
stand-ins for its deeper model reports (`pipeline.core.report_stand_ins`). A global question that is
about to map some has the model write them first, within its `first_use_reports`, deadline and cancel,
and maps what was written; the writer stores them for every later question
(`pipeline.index.community_reports_on_demand`, handed in as `QueryScope.write_reports`).

- Only the reports the question maps are written: dynamic selection rates the stand-ins (a summary
  of the same rows) and writes only those it keeps.
- A report that could not be written is mapped as its stand-in and named in the result, which is then
  `partial`: never a silent gap. Those past the question's budget or deadline are mapped as stand-ins
  too, and counted (`skipped`), for a later question to write.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pipeline.core import schema
from pipeline.core.report_stand_ins import deferred
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.common.scope import QueryScope
from pipeline.query.global_.batches import Batch

MAX_NAMED = 5  # failures named in the result's reason (all are in `selection.first_use.failed`)


@dataclass
class FirstUse:
    """What a question's first use wrote, as its result reports it (`selection.first_use`)."""

    written: list[int] = field(default_factory=list)
    ready: list[int] = field(default_factory=list)  # written meanwhile by another question
    skipped: list[int] = field(default_factory=list)  # past the question's budget or deadline
    failed: list[dict[str, Any]] = field(default_factory=list)  # community, level, error

    def to_dict(self) -> dict[str, Any]:
        return {"written": self.written, "ready": self.ready, "skipped": self.skipped, "failed": self.failed}

    def reason(self) -> str | None:
        """The failures in a sentence, or None."""
        if not self.failed:
            return None
        named = "; ".join(
            f"community {f['community']} (level {f['level']}): {f['error']}" for f in self.failed[:MAX_NAMED]
        )
        more = f"; and {len(self.failed) - MAX_NAMED} more" if len(self.failed) > MAX_NAMED else ""
        return (
            f"{len(self.failed)} community report(s) could not be written on first use and were read as "
            f"their extractive stand-ins: {named}{more}"
        )


def stand_ins(store: NamespaceStore) -> set[int]:
    """The communities whose report is a stand-in, read once per version of the reports table."""
    versions = table_versions(store, (schema.COMMUNITY_REPORTS,))
    return cached_index(
        store, "report_stand_ins", versions, lambda: deferred(store.read_table(schema.COMMUNITY_REPORTS))
    )


async def write_first_use(scope: QueryScope, batches: list[Batch], budget: int) -> FirstUse | None:
    """Have the stand-ins among the reports `batches` map written (at most `budget`); None when there is
    no writer, no stand-in among them or no model to write them."""
    if scope.write_reports is None or scope.engine is None:
        return None
    held = stand_ins(scope.store)
    wanted = [c for b in batches for c in b.community_ids if c in held]
    if not wanted:
        return None
    run = await asyncio.to_thread(scope.write_reports, scope, wanted, max_reports=budget)
    if not (run.written or run.ready or run.skipped or run.failures):
        return None  # nothing to write them with (the offline engine writes no model report)
    return FirstUse(
        written=list(run.written),
        ready=list(run.ready),
        skipped=list(run.skipped),
        failed=[
            {"community": f.community, "level": f.level, "error": f"{f.error_type}: {f.reason}"}
            for f in run.failures
        ],
    )
