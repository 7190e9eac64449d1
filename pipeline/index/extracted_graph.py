"""extracted_graph: raw entities, relationships and claims per text unit, every gleaning round kept.
Text units whose extraction failed go to failed_extractions.

Rules, in order:
0. The extractor sees each text unit with its document's front matter blanked (`pipeline.core.boilerplate`):
   title pages, headings, captions and credits name no entity. Offsets are unchanged.
1. Shard parts already extracted by workers (`extracted_graph_shard`) are taken when they still cover
   exactly the shard's text units under the same configuration; every other unit is extracted here.
2. When the engine's extraction is reusable (offline), a unit extracted before with the same configuration
   is reused (its id fixes its text); otherwise (LLM) it is asked again and the LLM cache answers every
   call made before, crash or not.
3. Rows come out in text-unit order, so the tables are the same whatever the shard count.
4. When the claims stage has another engine than extraction (`index_stage_methods`, e.g. model
   extraction with NLP claims), the extraction engine is asked without claims and each unit's claims
   come from the claims engine; both enter the configuration a stored unit must match.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.core.shards import (
    SHARD_FOLDER,
    document_shards,
    order_like,
    shard_table,
    shard_units,
    stale_parts,
)
from pipeline.core.stored_regions import mask_stored
from pipeline.engine.base import Engine
from pipeline.index.context import IndexContext
from pipeline.index.report import BUDGET_REFUSAL, Check, Loss, Markdown, StageReport, md_table
from pipeline.io.store import NamespaceStore
from pipeline.ops.extraction import ExtractionFailure, failures_table, table_counts, to_table
from pipeline.ops.extraction.models import ExtractionOptions, ExtractorIdentity
from pipeline.ops.extraction.run import ExtractionRun, extract_graph
from pipeline.ops.extraction.task import EXTRACT
from pipeline.ops.incremental import reuse_extractions, tag_extraction_config

# Parquet schema metadata key of a shard part: the configuration it was extracted under.
SHARD_CONFIG_KEY = b"shard_config"


@dataclass
class ExtractionSummary:
    method: str
    counts: dict[str, int]
    failures: list[ExtractionFailure]
    duration_s: float
    reused: int = 0  # reusable (offline) extraction: units taken from the previous extracted_graph


def _options(settings: Any, engine: Engine, claims_engine: Engine | None) -> ExtractionOptions:
    """The extraction engine's options: without claims when another engine extracts them (rule 4)."""
    options = ExtractionOptions.from_settings(settings)
    separate = claims_engine is not None and claims_engine is not engine and options.extract_claims
    return replace(options, extract_claims=False) if separate else options


def _identity(settings: Any, engine: Engine, claims_engine: Engine | None = None) -> ExtractorIdentity:
    options = _options(settings, engine, claims_engine)
    graph = engine.identity(EXTRACT, options)
    if (
        claims_engine is None
        or options.extract_claims == ExtractionOptions.from_settings(settings).extract_claims
    ):
        return graph
    claims = claims_engine.identity(EXTRACT, ExtractionOptions.from_settings(settings))
    config = json.dumps({"graph": graph.config, "claims": claims.config}, sort_keys=True)
    return ExtractorIdentity(graph.method, graph.version, config, graph.reusable and claims.reusable)


def _run(
    units: pa.Table,
    settings: Any,
    engine: Engine,
    claims_engine: Engine | None,
    progress: Callable[[int, int], None] | None,
) -> ExtractionRun:
    """extract_graph by the extraction engine, the claims taken from the claims engine's run when the
    stages' engines differ (rule 4)."""
    options = _options(settings, engine, claims_engine)
    run = extract_graph(units, options, engine, progress=progress)
    if claims_engine is not None and options.extract_claims != bool(settings.extract_claims):
        claims_run = extract_graph(units, ExtractionOptions.from_settings(settings), claims_engine)
        for unit, other in zip(run.units, claims_run.units, strict=True):
            unit.claims = other.claims
        run.failures += claims_run.failures
    return run


def _masked(store: NamespaceStore, units: pa.Table) -> pa.Table:
    """Front matter (headings, captions, credits) is blank to the extractor (rule 0). Only the units to
    extract are masked: a re-index reuses the rest, and masking all of them was 8 s of a 1% re-index's
    extraction stage on the 11 MB scale corpus (profiled)."""
    return mask_stored(units, lambda: store.read_table(schema.INPUT_DOCUMENTS, ["id", "text"]))


def _extract(
    store: NamespaceStore,
    units: pa.Table,
    settings: Any,
    engine: Engine,
    progress: Callable[[int, int], None] | None,
    claims_engine: Engine | None = None,
) -> tuple[pa.Table, pa.Table, ExtractionSummary]:
    """Extract `units`: the extracted_graph and failed_extractions rows, in `units` order (rule 2)."""
    identity = _identity(settings, engine, claims_engine)
    if not identity.reusable:
        run = _run(_masked(store, units), settings, engine, claims_engine, progress)
        table = to_table(run.units)
        reused = set()
    else:
        previous = (
            store.read_table(schema.EXTRACTED_GRAPH) if store.has_table(schema.EXTRACTED_GRAPH) else None
        )
        ids = units.column("id").to_pylist()
        kept = reuse_extractions(previous, identity.config, ids)
        reused = set() if kept is None else set(kept.column("text_unit_id").to_pylist())
        todo = [i for i, uid in enumerate(ids) if uid not in reused]
        todo_units = _masked(store, units.take(pa.array(todo, pa.int64())))
        run = _run(todo_units, settings, engine, claims_engine, progress)
        fresh = to_table(run.units)
        table = fresh if kept is None else order_like(pa.concat_tables([kept, fresh]), "text_unit_id", ids)
        table = tag_extraction_config(table, identity.config)
    summary = ExtractionSummary(
        run.method, table_counts(table), run.failures, round(run.duration_s, 3), len(reused)
    )
    failures = sorted(run.failures, key=lambda f: (f.text_unit_id, f.round))
    return table, failures_table(failures), summary


def index_extraction_shard(
    store: NamespaceStore,
    settings: Any,
    shard: int,
    shards: int,
    engine: Engine,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractionSummary:
    """One document shard's text units -> that shard's part of extracted_graph and failed_extractions
    (a worker's share of a namespace; `index_extracted_graph` merges the parts). The part is tagged
    with the engine's extraction config: a part made under another is not taken."""
    units = shard_units(store.read_table(schema.BASE_TEXT_UNITS), shard, shards)
    table, failures, summary = _extract(store, units, settings, engine, progress)
    config = _identity(settings, engine).config.encode()
    store.write_table(shard_table(schema.FAILED_EXTRACTIONS, shard, shards), failures)
    # written last: a part with this tag is complete, failures included
    store.write_table(
        shard_table(schema.EXTRACTED_GRAPH, shard, shards),
        table.replace_schema_metadata({**(table.schema.metadata or {}), SHARD_CONFIG_KEY: config}),
    )
    return summary


def _current_shard_part(
    store: NamespaceStore, shard: int, shards: int, unit_ids: list[str], config: bytes
) -> tuple[pa.Table, pa.Table] | None:
    """The shard's extracted part when it covers exactly `unit_ids` under `config`, else None."""
    name = shard_table(schema.EXTRACTED_GRAPH, shard, shards)
    if not store.has_table(name):
        return None
    part = store.read_table(name)
    if (part.schema.metadata or {}).get(SHARD_CONFIG_KEY) != config:
        return None
    if part.schema.names != schema.EXTRACTED_GRAPH_SCHEMA.names:  # written before a column was added
        return None
    if sorted(part.column("text_unit_id").to_pylist()) != sorted(unit_ids):
        return None
    return part, store.read_table(shard_table(schema.FAILED_EXTRACTIONS, shard, shards))


def index_extracted_graph(
    store: NamespaceStore,
    settings: Any,
    engine: Engine,
    progress: Callable[[int, int], None] | None = None,
    claims_engine: Engine | None = None,
) -> ExtractionSummary:
    """text_units -> extracted_graph + failed_extractions.

    Shard parts already extracted by workers (`index_extraction_shard`) are taken when they still match
    the text units and configuration; every other unit is extracted here. Rows come out in text-unit
    order, so the tables are the same whatever the shard count and whoever extracted them."""
    started = time.monotonic()
    units = store.read_table(schema.BASE_TEXT_UNITS)
    shards = int(getattr(settings, "shards", 1))
    identity = _identity(settings, engine, claims_engine)
    config = identity.config.encode()
    graphs: list[pa.Table] = []
    failures: list[pa.Table] = []
    todo: list[pa.Table] = []
    merged_shards = 0
    assigned = document_shards(units, shards)
    for k in range(shards):
        part_units = shard_units(units, k, shards, assigned)
        part = _current_shard_part(store, k, shards, part_units.column("id").to_pylist(), config)
        if part is None:
            todo.append(part_units)
        else:
            graphs.append(part[0].replace_schema_metadata(schema.EXTRACTED_GRAPH_SCHEMA.metadata))
            failures.append(part[1])
            merged_shards += 1
    fresh = None
    if todo:
        table, failed, fresh = _extract(
            store, pa.concat_tables(todo), settings, engine, progress, claims_engine
        )
        graphs.append(table.replace_schema_metadata(schema.EXTRACTED_GRAPH_SCHEMA.metadata))
        failures.append(failed)
    order = units.column("id").to_pylist()
    merged = order_like(pa.concat_tables(graphs), "text_unit_id", order)
    if identity.reusable:
        merged = tag_extraction_config(merged, identity.config)
    failed = pa.concat_tables(failures)
    failed = failed.take(pc.sort_indices(failed, [("text_unit_id", "ascending"), ("round", "ascending")]))
    store.write_table(schema.EXTRACTED_GRAPH, merged)
    store.write_table(schema.FAILED_EXTRACTIONS, failed)
    # The namespace is rebuilt under `shards`: parts written under another count are read by nothing now.
    stale = stale_parts(store.files(SHARD_FOLDER, ".parquet"), shards)
    for name in stale:
        store.delete_file(name)
    return ExtractionSummary(
        method=identity.method,
        counts={
            **table_counts(merged),
            "shards": shards,
            "shards_merged": merged_shards,
            "stale_shard_parts_removed": len(stale),
        },
        failures=[ExtractionFailure(**row) for row in failed.to_pylist()],
        duration_s=round(time.monotonic() - started, 3),
        reused=fresh.reused if fresh else 0,
    )


def extraction_loss(stage: str, summary: ExtractionSummary, settings: Any) -> Loss:
    """Text units whose extraction failed outright (a failed gleaning round leaves a partial unit).
    Units the run's budget refused are not counted: the budget stopped them on purpose and says so."""
    lost = [f for f in summary.failures if f.round == 0 and f.error_type != BUDGET_REFUSAL]
    return Loss(
        stage=stage,
        what="text units",
        total=summary.counts["text_units"],
        failed=len({f.text_unit_id for f in lost}),
        reasons=[f"text unit {f.text_unit_id[:12]}: {f.error_type}: {f.reason}" for f in lost[:3]],
        max_share=settings.llm_max_failed_share,
    )


def run(ctx: IndexContext) -> StageReport:
    settings, engine = ctx.settings, ctx.engine_for("extraction")
    ctx.log(f"extracting the graph of {ctx.namespace!r} with the {engine.kind} engine")
    summary = index_extracted_graph(
        ctx.store,
        settings,
        engine,
        progress=ctx.progress("extracted text units"),
        claims_engine=ctx.engine_for("claims"),
    )
    for f in summary.failures[:20]:
        ctx.log(f"text unit {f.text_unit_id[:12]} round {f.round}: {f.error_type}: {f.reason}")
    failed = [f.__dict__ for f in summary.failures]
    return StageReport(
        rows=summary.counts["text_units"],
        usage=engine.usage,
        metadata={
            "method": summary.method,
            **summary.counts,
            "reused_offline_extractions": summary.reused,
            "failed_extractions": len(summary.failures),
            "entity_types": ", ".join(settings.entity_types),
            "max_gleanings": settings.extraction_max_gleanings,
            "failures": Markdown(
                md_table(failed, ["text_unit_id", "document_id", "round", "error_type", "reason"])
                if failed
                else "No failures."
            ),
        },
        checks=[
            Check.of_counts(
                "no_failed_extractions", {"failed_extractions": len(summary.failures)}, severity="warn"
            )
        ],
        duration_s=summary.duration_s,
        loss=extraction_loss("extracted_graph", summary, settings),
    )
