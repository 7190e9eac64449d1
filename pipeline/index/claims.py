"""claims: GraphRAG's `covariates` table, subjects and objects resolved to entities; text_units gain
covariate_ids (`pipeline.ops.claims`)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from pipeline.core import schema
from pipeline.index.context import IndexContext
from pipeline.index.report import Json, StageReport
from pipeline.io.store import NamespaceStore
from pipeline.ops.claims import ClaimStats, build_covariates
from pipeline.ops.extraction import from_table
from pipeline.ops.resolution import link_text_units


@dataclass
class ClaimsSummary:
    stats: ClaimStats
    types: dict[str, int]
    duration_s: float


def index_claims(store: NamespaceStore) -> ClaimsSummary:
    """extracted_graph + entities -> covariates; text_units gain covariate_ids."""
    started = time.monotonic()
    units = from_table(store.read_table(schema.EXTRACTED_GRAPH))
    covariates, stats = build_covariates(units, store.read_table(schema.ENTITIES))
    store.write_table(schema.COVARIATES, covariates)
    text_units = link_text_units(
        store.read_table(schema.TEXT_UNITS), "covariate_ids", covariates, "text_unit_id"
    )
    store.write_table(schema.TEXT_UNITS, text_units)
    return ClaimsSummary(
        stats,
        dict(Counter(covariates.column("type").to_pylist()).most_common()),
        round(time.monotonic() - started, 3),
    )


def run(ctx: IndexContext) -> StageReport:
    summary = index_claims(ctx.store)
    s = summary.stats
    return StageReport(
        rows=s.claims,
        metadata={
            "claims": s.claims,
            "subjects_resolved": s.subjects_resolved,
            "objects": s.objects,
            "objects_resolved": s.objects_resolved,
            "by_status": Json(s.by_status or {}),
            "by_type": Json(summary.types),
        },
        duration_s=summary.duration_s,
    )
