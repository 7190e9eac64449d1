"""Blocking asset checks: a stage whose output would poison what is built on it stops the namespace's
run there. Dagster skips every asset downstream of a failed blocking check of ERROR severity, so the
reports, the embeddings, the index version and the saved answers of that partition keep their last good
materialization, and the check's `reason` (its description and metadata) says why in the UI.

The non-blocking checks the runners report (`no_failed_extractions`, `no_failed_reports`, ...) stay
warnings. Each check here is computed from the step's `StageReport` and the tables the step just wrote;
`assets.indexing.observe.materialize` adds them to the materialization.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow as pa
from dagster import AssetCheckSpec, AssetKey

from pipeline.core import schema
from pipeline.index.context import IndexContext
from pipeline.index.report import Check, Loss, StageReport

EXTRACTION_SHARE = "extraction_failure_share"
ENTITIES_FROM_CORPUS = "entities_from_corpus"
DANGLING = "relationships_reference_entities"
DIMENSION = "vector_dimension_matches_table"
REPORT_SHARE = "report_failure_share"
CITATIONS = "citations_resolve"

DESCRIPTIONS = {
    EXTRACTION_SHARE: "Blocks when more than PIPELINE_CHECK_MAX_FAILED_SHARE of the text units failed to extract.",
    ENTITIES_FROM_CORPUS: "Blocks when a corpus with text units yields no entity at all.",
    DANGLING: "Blocks when a relationship names an entity that is not in the entities table.",
    DIMENSION: "Blocks when the vectors written differ in dimension from the LanceDB table's vector column.",
    REPORT_SHARE: "Blocks when more than PIPELINE_CHECK_MAX_FAILED_SHARE of the communities got no report.",
    CITATIONS: "Blocks when a report's citations name an entity, relationship, claim or community that does not exist.",
}

# asset -> its blocking checks. `relationships_reference_entities` is computed by its runner; the rest here.
BLOCKING: dict[str, tuple[str, ...]] = {
    "extracted_graph": (EXTRACTION_SHARE,),
    "entities": (ENTITIES_FROM_CORPUS,),
    "relationships": (DANGLING,),
    "text_unit_embeddings": (DIMENSION,),
    "community_reports": (REPORT_SHARE, CITATIONS),
    "report_embeddings": (DIMENSION,),
}


def blocking_specs(asset: str) -> list[AssetCheckSpec]:
    """The blocking check specs `asset` declares."""
    return [
        AssetCheckSpec(name, asset=AssetKey(asset), blocking=True, description=DESCRIPTIONS[name])
        for name in BLOCKING.get(asset, ())
    ]


def _share(name: str, loss: Loss | None, limit: float, what: str) -> Check:
    total, failed = (loss.total, loss.failed) if loss is not None else (0, 0)
    share = failed / total if total else 0.0
    passed = share <= limit
    if passed:
        reason = f"{failed} of {total} {what} failed ({share:.0%}, at most {limit:.0%} allowed)"
    else:
        first = " | ".join(loss.reasons[:3]) if loss is not None else ""
        reason = (
            f"{loss.summary() if loss else what} ({share:.0%}, more than the {limit:.0%} allowed by "
            f"PIPELINE_CHECK_MAX_FAILED_SHARE): downstream assets of this namespace were not materialized. "
            f"First reasons: {first or 'none recorded'}"
        )
    meta = {"failed": failed, "total": total, "share": round(share, 4), "limit": limit, "reason": reason}
    return Check(name, passed=passed, metadata=meta)


def _rows(ctx: IndexContext, table: str) -> int:
    return ctx.store.read_table(table, columns=["id"]).num_rows if ctx.store.has_table(table) else 0


def _entities_from_corpus(ctx: IndexContext, report: StageReport) -> Check:
    units = _rows(ctx, schema.BASE_TEXT_UNITS)
    passed = report.rows > 0 or units == 0
    reason = (
        f"{report.rows} entities from {units} text units"
        if passed
        else f"no entity was extracted from {units} text units: extraction produced nothing usable"
    )
    return Check(
        ENTITIES_FROM_CORPUS,
        passed,
        metadata={"entities": report.rows, "text_units": units, "reason": reason},
    )


def _vector_dimension(table: pa.Schema) -> int | None:
    field = table.field("vector") if "vector" in table.names else None
    return getattr(field.type, "list_size", None) if field is not None else None


def _dimension(ctx: IndexContext, report: StageReport, tables: tuple[str, ...]) -> Check:
    written = report.metadata.get("dimension")
    found = {}
    for name in tables:
        if ctx.store.has_lance_table(name):
            found[name] = _vector_dimension(ctx.store.open_lance_table(name).schema)
    wrong = {n: d for n, d in found.items() if isinstance(written, int) and d not in (None, written)}
    reason = (
        f"vectors of dimension {written} in {', '.join(sorted(found)) or 'no table'}"
        if not wrong
        else f"the embedder wrote vectors of dimension {written}, the table(s) hold "
        + ", ".join(f"{n}: {d}" for n, d in sorted(wrong.items()))
        + " (a different embedding model than the one the index was built with?)"
    )
    meta = {
        "dimension": written if isinstance(written, int) else 0,
        "tables": json.dumps(found),
        "reason": reason,
    }
    return Check(DIMENSION, passed=not wrong, metadata=meta)


_CITED_TABLES = {
    "Entities": schema.ENTITIES,
    "Relationships": schema.RELATIONSHIPS,
    "Claims": schema.COVARIATES,
}


def _known(ctx: IndexContext) -> dict[str, set[str]]:
    known = {
        cited: {str(v) for v in ctx.store.read_table(table, columns=["id"]).column("id").to_pylist()}
        if ctx.store.has_table(table)
        else set()
        for cited, table in _CITED_TABLES.items()
    }
    communities = (
        ctx.store.read_table(schema.COMMUNITIES, columns=["community"]).column("community").to_pylist()
        if ctx.store.has_table(schema.COMMUNITIES)
        else []
    )
    known["Reports"] = {str(c) for c in communities}
    return known


def _citations(ctx: IndexContext) -> Check:
    if not ctx.store.has_table(schema.COMMUNITY_REPORTS):
        return Check(CITATIONS, passed=True, metadata={"cited": 0, "unresolved": 0, "reason": "no reports"})
    refs = ctx.store.read_table(schema.COMMUNITY_REPORTS, columns=["community", "data_refs"]).to_pylist()
    known = _known(ctx)
    cited, unresolved, examples = 0, 0, []
    for row in refs:
        for table, ids in (json.loads(row["data_refs"] or "{}") or {}).items():
            for target in ids.values():
                cited += 1
                if str(target) not in known.get(table, set()):
                    unresolved += 1
                    examples.append(f"community {row['community']}: {table} {target}")
    reason = (
        f"all {cited} citations resolve"
        if not unresolved
        else f"{unresolved} of {cited} citations name rows that do not exist: " + "; ".join(examples[:3])
    )
    meta = {"cited": cited, "unresolved": unresolved, "reason": reason}
    return Check(CITATIONS, passed=unresolved == 0, metadata=meta)


_EVALUATORS: dict[str, Callable[[IndexContext, StageReport], Check]] = {
    EXTRACTION_SHARE: lambda ctx, r: _share(
        EXTRACTION_SHARE, r.loss, ctx.settings.check_max_failed_share, "text units"
    ),
    ENTITIES_FROM_CORPUS: _entities_from_corpus,
    REPORT_SHARE: lambda ctx, r: _share(
        REPORT_SHARE, r.loss, ctx.settings.check_max_failed_share, "community reports"
    ),
    CITATIONS: lambda ctx, r: _citations(ctx),
}


def blocking_checks(asset: str, report: StageReport, ctx: IndexContext) -> list[Check]:
    """The blocking checks of `asset` this module computes (the runner's own are in `report.checks`)."""
    checks = []
    for name in BLOCKING.get(asset, ()):
        if name == DIMENSION:
            tables = (
                (schema.LANCE_TEXT_UNITS,)
                if asset == "text_unit_embeddings"
                else (schema.LANCE_COMMUNITY_REPORTS, schema.LANCE_ENTITIES)
            )
            checks.append(_dimension(ctx, report, tables))
        elif name in _EVALUATORS:
            checks.append(_EVALUATORS[name](ctx, report))
    return checks
