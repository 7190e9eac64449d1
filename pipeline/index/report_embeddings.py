"""report_embeddings: LanceDB tables for community reports and entities: text, vector and full-text
indexes.

- `community_reports`: id, community, level, title, summary, full_content, rank and the vector of
  `full_content` (what GraphRAG embeds); full-text index on `full_content`.
- `entities`: id, title, type, description, aliases and the vector of "title: description" (GraphRAG's
  entity_description text); full-text indexes on `title` and `description`.

Only changed rows are embedded: a row whose id and embedded text equal those in the current LanceDB
table keeps its vector, provided the table was written by the same embedding model (recorded in the
table's schema metadata). The rest go through the cached embedder, which may still find them in the
persistent cache (a text seen before under another id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.core import schema, tables
from pipeline.embeddings.base import ProgressFn
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.index.context import IndexContext
from pipeline.index.report import Check, StageReport, Stopwatch
from pipeline.index.text_unit_embeddings import vector_ids
from pipeline.io.store import NamespaceStore


@dataclass
class LanceIndexStats:
    table: str
    rows: int
    carried_over: int  # vectors kept from the previous table (same id, same text, same model)
    embedded_rows: int  # rows sent to the embedder
    embeddings_computed: int  # of those pieces, how many the model computed (the rest: cache hits)
    cache_hits: int


def entity_text(title: str | None, description: str | None) -> str:
    return f"{title or ''}: {description or ''}"


def _previous(
    store: NamespaceStore, name: str, model_id: str, dim: int, text_of: Callable[[dict], str]
) -> dict[str, tuple[str, np.ndarray]]:
    """id -> (embedded text, vector) of the table as it is now, if the same model wrote it."""
    if not store.has_lance_table(name):
        return {}
    arrow = store.open_lance_table(name).to_arrow()
    meta = arrow.schema.metadata or {}
    if meta.get(b"embedding_model") != model_id.encode() or arrow.num_rows == 0:
        return {}
    vectors = arrow.column("vector").combine_chunks()
    if vectors.type.list_size != dim:
        return {}
    values = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, dim)
    rows = arrow.drop_columns(["vector"]).to_pylist()
    return {r["id"]: (text_of(r), values[i]) for i, r in enumerate(rows)}


def _vectors(
    store: NamespaceStore,
    name: str,
    ids: Sequence[str],
    texts: Sequence[str],
    embedder: CachedEmbedder,
    text_of: Callable[[dict], str],
    progress: ProgressFn | None,
) -> tuple[np.ndarray, LanceIndexStats]:
    dim = embedder.dimension
    before_hits, before_computed = embedder.cache_hits, embedder.computed
    previous = _previous(store, name, embedder.model_id, dim, text_of)
    out = np.zeros((len(ids), dim), dtype=np.float32)
    changed = []
    for i, (row_id, text) in enumerate(zip(ids, texts, strict=True)):
        old = previous.get(row_id)
        if old is not None and old[0] == text:
            out[i] = old[1]
        else:
            changed.append(i)
    if changed:
        out[changed] = embedder.embed([texts[i] for i in changed], progress=progress)
    return out, LanceIndexStats(
        table=name,
        rows=len(ids),
        carried_over=len(ids) - len(changed),
        embedded_rows=len(changed),
        embeddings_computed=embedder.computed - before_computed,
        cache_hits=embedder.cache_hits - before_hits,
    )


def index_report_embeddings(
    store: NamespaceStore, embedder: CachedEmbedder, progress: ProgressFn | None = None
) -> tuple[LanceIndexStats, LanceIndexStats]:
    """Replace the namespace's LanceDB `community_reports` and `entities` tables; (reports, entities) stats."""
    dim, model_id = embedder.dimension, embedder.model_id

    reports = store.read_table(schema.COMMUNITY_REPORTS)
    ids = reports.column("id").to_pylist()
    contents = [t or "" for t in reports.column("full_content").to_pylist()]
    vectors, report_stats = _vectors(
        store,
        schema.LANCE_COMMUNITY_REPORTS,
        ids,
        contents,
        embedder,
        lambda r: r["full_content"] or "",
        progress,
    )
    report_table = tables.to_table(
        {
            "id": reports.column("id"),
            "community": reports.column("community"),
            "level": reports.column("level"),
            "title": reports.column("title"),
            "summary": reports.column("summary"),
            "full_content": reports.column("full_content"),
            "rank": reports.column("rank"),
            "vector": schema.vector_array(vectors, dim),
        },
        schema.lance_community_reports_schema(dim, model_id),
    )
    store.replace_lance_table(schema.LANCE_COMMUNITY_REPORTS, report_table, fts_columns=("full_content",))

    entities = store.read_table(schema.ENTITIES, columns=["id", "title", "type", "description", "aliases"])
    rows = entities.to_pylist()
    texts = [entity_text(r["title"], r["description"]) for r in rows]
    vectors, entity_stats = _vectors(
        store,
        schema.LANCE_ENTITIES,
        [r["id"] for r in rows],
        texts,
        embedder,
        lambda r: entity_text(r["title"], r["description"]),
        progress,
    )
    entity_table = tables.to_table(
        {
            "id": entities.column("id"),
            "title": entities.column("title"),
            "type": entities.column("type"),
            "description": entities.column("description"),
            "aliases": entities.column("aliases"),
            "vector": schema.vector_array(vectors, dim),
        },
        schema.lance_entities_schema(dim, model_id),
    )
    store.replace_lance_table(schema.LANCE_ENTITIES, entity_table, fts_columns=("title", "description"))
    return report_stats, entity_stats


def run(ctx: IndexContext) -> StageReport:
    clock = Stopwatch()
    store, cached = ctx.store, ctx.embedder
    reports, entities = index_report_embeddings(store, cached, progress=ctx.progress("embedded new texts"))
    bad = {}
    for stats in (reports, entities):
        ids, invalid = vector_ids(store, stats.table)
        bad[stats.table] = invalid + (stats.rows - len(ids))
    metadata = {"model": cached.model_id, "dimension": cached.dimension, "lancedb_uri": str(store.lance_uri)}
    for prefix, stats in (("reports", reports), ("entities", entities)):
        metadata.update(
            {
                f"{prefix}_rows": stats.rows,
                f"{prefix}_vectors_kept": stats.carried_over,
                f"{prefix}_rows_embedded": stats.embedded_rows,
                f"{prefix}_embeddings_computed": stats.embeddings_computed,
                f"{prefix}_embedding_cache_hits": stats.cache_hits,
            }
        )
    return StageReport(
        rows=reports.rows + entities.rows,
        metadata=metadata,
        checks=[
            Check(
                "every_row_has_vector",
                passed=not any(bad.values()),
                metadata={f"{table}_without_vector": n for table, n in bad.items()},
            )
        ],
        duration_s=clock.seconds(),
    )
