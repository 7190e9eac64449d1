"""The last stage of an index run: commit the run's tables as the namespace's next index version, which
every query then reads whole (`pipeline.io.manifest`). Run only after every other stage succeeded, so a
failed run leaves queries on the previous version."""

from __future__ import annotations

import time

from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport
from pipeline.io.manifest import commit_manifest


def run(ctx: IndexContext) -> StageReport:
    started = time.perf_counter()
    manifest = commit_manifest(ctx.store)
    ctx.log(f"index version {manifest.version} committed for {ctx.namespace!r}")
    return StageReport(
        rows=len(manifest.files) + len(manifest.lance),  # the files and LanceDB tables the version names
        metadata={"version": manifest.version, "lance_tables": len(manifest.lance)},
        duration_s=round(time.perf_counter() - started, 3),
    )
