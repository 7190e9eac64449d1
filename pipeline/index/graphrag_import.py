"""graphrag_import: a namespace made from the output folder of Microsoft GraphRAG's `graphrag index`
(2.x or 3.x), with no LLM call: `pipeline import graphrag --from OUTPUT --namespace NS`.

Rules, in order:
1. The folder is read and converted whole before anything is written (`pipeline.interop`): a missing
   table or column fails with its name, and the namespace is left as it was.
2. Every vector is embedded again with the configured embedder (theirs come from another model),
   first into the embedding cache, still writing nothing, so a failing model fails before any table.
3. Then the Parquet tables are replaced, `extracted_graph` and `failed_extractions` of an earlier index
   of the namespace are removed (they describe other text units), and the LanceDB tables, the GraphML
   export and the chunk graph are written as the indexing stages write them (their runners' code), and
   the GraphRAG-named tables when `PIPELINE_GRAPHRAG_EXPORT` is on.
4. The metadata counts what was carried over and what was recomputed, and the text units whose text
   was not found in their document (null offsets, kept).

Re-running it replaces the namespace with the same tables. `pipeline index` on the namespace then
works as on any other: with `--input` at the documents GraphRAG indexed, it re-indexes them with our
extraction, reusing the embeddings (cache) and, for communities whose rows are unchanged, the reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from pipeline.core import schema
from pipeline.index import chunk_graph
from pipeline.index.communities import graphml_path
from pipeline.index.context import IndexContext
from pipeline.index.report import Check, Json, PathValue, StageReport, Stopwatch
from pipeline.index.report_embeddings import entity_text, index_report_embeddings, report_text
from pipeline.index.report_options import report_budget
from pipeline.index.text_unit_embeddings import embed_text_units, index_text_units
from pipeline.interop.ms_graphrag_convert import Converted, convert
from pipeline.interop.ms_graphrag_export import prepare_export, write_ms_tables
from pipeline.interop.ms_graphrag_read import GraphRAGImportError, read_output
from pipeline.ops.graph_export import write_graphml
from pipeline.ops.reports.task import REPORT

__all__ = ["GraphRAGImportError", "import_graphrag", "run"]

# Tables an earlier index of the namespace may hold that the import does not write.
STALE_TABLES = (schema.EXTRACTED_GRAPH, schema.FAILED_EXTRACTIONS)
WRITE_ORDER = (
    schema.DOCUMENTS,
    schema.INGEST_ERRORS,
    schema.TEXT_UNITS,
    schema.ENTITIES,
    schema.RELATIONSHIPS,
    schema.COVARIATES,
    schema.COMMUNITIES,
    schema.COMMUNITY_REPORTS,
    schema.FAILED_REPORTS,
)


@dataclass
class ImportResult:
    converted: Converted
    version: str  # of GraphRAG's output: "3.x" | "2.x"
    their_vector_tables: list[str]
    exported: dict[str, int] = field(default_factory=dict)  # GraphRAG-named table -> rows written


def _warm_cache(ctx: IndexContext, converted: Converted) -> None:
    """Rule 2: every vector the LanceDB tables will need, into the embedding cache."""
    t = converted.tables
    embed_text_units(
        t[schema.TEXT_UNITS], t[schema.DOCUMENTS], ctx.embedder, progress=ctx.progress("embedded")
    )
    reports = t[schema.COMMUNITY_REPORTS].select(["title", "summary"]).to_pylist()
    entities = t[schema.ENTITIES].select(["title", "description"]).to_pylist()
    words = ctx.settings.entity_vector_description_words
    ctx.embedder.embed(
        [report_text(r["title"], r["summary"]) for r in reports]
        + [entity_text(e["title"], e["description"], words) for e in entities]
    )


def _unlinked(table: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    empty = pa.array([[]] * table.num_rows, type=pa.list_(pa.string()))
    for column in columns:
        table = table.set_column(table.schema.get_field_index(column), column, empty)
    return table


def import_graphrag(ctx: IndexContext, source: str | Path) -> ImportResult:
    """Rules 1-3."""
    settings, store = ctx.settings, ctx.store
    output = read_output(source)
    ctx.log(f"read Microsoft GraphRAG {output.version} output from {output.folder}")
    identity = ctx.engine.identity(REPORT)  # as the reports step fingerprints
    converted = convert(output, identity, **report_budget(settings, identity))
    _warm_cache(ctx, converted)
    for name in WRITE_ORDER:
        store.write_table(name, converted.tables[name])
    # what a later `pipeline index` of the namespace reads as the previous input (its delta) and as the
    # units to extract; their back-links are the final tables'
    t = converted.tables
    store.write_table(schema.INPUT_DOCUMENTS, _unlinked(t[schema.DOCUMENTS], ("text_unit_ids",)))
    store.write_table(
        schema.BASE_TEXT_UNITS,
        _unlinked(t[schema.TEXT_UNITS], ("entity_ids", "relationship_ids", "covariate_ids")),
    )
    for name in STALE_TABLES:
        store.delete_file(f"{name}.parquet")
    index_text_units(store, t[schema.TEXT_UNITS], t[schema.DOCUMENTS], ctx.embedder)
    index_report_embeddings(
        store, ctx.embedder, entity_description_words=settings.entity_vector_description_words
    )
    with store.open_output(schema.GRAPHML_EXPORT) as sink:
        write_graphml(sink, t[schema.ENTITIES], t[schema.RELATIONSHIPS], t[schema.COMMUNITIES])
    result = ImportResult(converted, output.version, output.vector_tables)
    if settings.graphrag_export:
        prepare_export(store, ctx.embedder)
        result.exported = write_ms_tables(store, ctx.embedder).rows
    return result


def run(ctx: IndexContext, source: str | Path) -> StageReport:
    clock = Stopwatch()
    before_computed, before_hits = ctx.embedder.computed, ctx.embedder.cache_hits
    result = import_graphrag(ctx, source)
    s, t = result.converted.stats, result.converted.tables
    graph = chunk_graph.run(ctx)  # over the LanceDB text units just written
    return StageReport(
        rows=sum(t[name].num_rows for name in WRITE_ORDER),
        metadata={
            "source": str(Path(source).resolve()),
            "source_version": result.version,
            "their_vector_tables": Json(result.their_vector_tables),
            "documents": t[schema.DOCUMENTS].num_rows,
            "text_units": t[schema.TEXT_UNITS].num_rows,
            "text_units_located": s.units_located,
            "text_units_trimmed": s.units_trimmed,
            "text_units_without_offsets": s.units_not_found,
            "text_units_without_offsets_ids": Json(s.unlocated_unit_ids[:50]),
            "duplicate_text_unit_ids": s.duplicate_unit_ids,
            "entities": t[schema.ENTITIES].num_rows,
            "entities_without_community": s.entities_without_community,
            "relationships": t[schema.RELATIONSHIPS].num_rows,
            "relationships_dropped": s.relationships_dropped,
            "claims": t[schema.COVARIATES].num_rows,
            "claims_located": s.claims_located,
            "communities": t[schema.COMMUNITIES].num_rows,
            "reports_kept_as_written": t[schema.COMMUNITY_REPORTS].num_rows,
            "embedding_model": ctx.embedder.model_id,
            "embeddings_computed": ctx.embedder.computed - before_computed,
            "embedding_cache_hits": ctx.embedder.cache_hits - before_hits,
            "graphrag_tables_exported": Json(result.exported),
            "chunk_graph_edges": graph.metadata["edges"],
            "graphml": PathValue(str(graphml_path(ctx.store))),
        },
        checks=[
            Check.of_counts(
                "every_text_unit_located", {"text_units_without_offsets": s.units_not_found}, severity="warn"
            )
        ],
        duration_s=clock.seconds(),
    )
