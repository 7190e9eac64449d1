"""report_embeddings: LanceDB tables for community reports and entities: text, vector and full-text
indexes.

Each vector is embedded from the short text that the search comparing it with a question needs, once:

- `community_reports`: id, community, level, title, summary, full_content, rank and the vector of
  "title\nsummary" with the summary cut at `REPORT_SUMMARY_WORDS` words (`report_text`); full-text
  index on `full_content`. Local search ranks communities by this vector against the question.
  GraphRAG embeds the whole report, which for MiniLM meant 256-token pieces averaged into one vector
  (7,021 pieces for MuSiQue's 3,243 reports, most of an offline index's time); the summary's opening
  says what the community is about in one short input.
- `entities`: id, title, type, description, aliases and the vector of the title, or of "title:
  description" with the description cut at `PIPELINE_ENTITY_VECTOR_DESCRIPTION_WORDS` words
  (`entity_text`; GraphRAG embeds the whole "title: description"); full-text indexes on `title` and
  `description`. Local search's semantic entity channel compares the question with it.

The word limits were chosen once, on cost and `make eval`: a MiniLM input costs about its length.
MuSiQue's 10,800 entity texts embed at 83 / s with 40 description words, 170 / s with 12 and 485 / s as
bare titles on two cores, and local search's R@5 / R@10 were 65.8 / 78.1, 65.8 / 77.9 and 65.0 / 77.2
with them (65.0 / 78.4 with whole descriptions and whole reports): only titles let the offline index
fit its 180 s, so they are the default; description words are a setting, for vector search of
entities by what they are ("founder of the Red Cross"). MuSiQue's 3,243 report texts took 51 s with 40
summary words and 35 s with 24, and recall was the same with either (65.0 / 77.2): report vectors
choose the communities whose context an answer gets, not the passages.

With `PIPELINE_GRAPHRAG_EXPORT` the step also writes the LanceDB tables Microsoft GraphRAG's query engine
reads, under its names and with the texts it embeds (`pipeline.interop.ms_graphrag_export`).

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
from pipeline.index.report import Check, Json, StageReport, Stopwatch
from pipeline.index.text_unit_embeddings import vector_ids
from pipeline.interop.ms_graphrag_export import write_ms_tables
from pipeline.io.store import NamespaceStore
from pipeline.ops.reports.citations import strip_citations


@dataclass
class LanceIndexStats:
    table: str
    rows: int
    carried_over: int  # vectors kept from the previous table (same id, same text, same model)
    embedded_rows: int  # rows sent to the embedder
    embeddings_computed: int  # of those pieces, how many the model computed (the rest: cache hits)
    cache_hits: int


# A MiniLM input costs about its length. A report: the summary's opening sentences. An entity: by
# default its name, which is what a question about it repeats or paraphrases (its description is
# full-text indexed and reaches local search through the passages that mention it);
# `entity_description_words` adds the start of the description, for vector search by what an entity is.
REPORT_SUMMARY_WORDS = 24
# The names of the rules that make the embedded texts, kept in each table's schema metadata: a vector is
# carried over only from a table whose texts were made by the same rule.
REPORT_VECTOR_TEXT = f"title+summary[:{REPORT_SUMMARY_WORDS} words]/1"


def entity_vector_text(description_words: int = 0) -> str:
    return f"title: description[:{description_words} words]/1" if description_words else "title/1"


def entity_text(title: str | None, description: str | None, description_words: int = 0) -> str:
    """The text an entity's vector is made from: its title, then the first `description_words` words
    of its description if any."""
    words = (description or "").split()[:description_words]
    return f"{title or ''}: {' '.join(words)}" if words else (title or "")


def report_text(title: str | None, summary: str | None) -> str:
    """The text a community report's vector is made from: its title and the start of its summary,
    without citations."""
    words = strip_citations(summary or "").split()
    return f"{title or ''}\n{' '.join(words[:REPORT_SUMMARY_WORDS])}"


def _previous(
    store: NamespaceStore,
    name: str,
    model_id: str,
    dim: int,
    text_of: Callable[[dict], str],
    rule: str,
) -> dict[str, tuple[str, np.ndarray]]:
    """id -> (embedded text, vector) of the table as it is now, if the same model wrote it from texts
    made by the same rule."""
    if not store.has_lance_table(name):
        return {}
    arrow = store.open_lance_table(name).to_arrow()
    meta = arrow.schema.metadata or {}
    if (
        meta.get(b"embedding_model") != model_id.encode()
        or meta.get(b"vector_text") != rule.encode()
        or arrow.num_rows == 0
    ):
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
    rule: str,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, LanceIndexStats]:
    dim = embedder.dimension
    before_hits, before_computed = embedder.cache_hits, embedder.computed
    previous = _previous(store, name, embedder.model_id, dim, text_of, rule)
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
    store: NamespaceStore,
    embedder: CachedEmbedder,
    progress: ProgressFn | None = None,
    entity_description_words: int = 0,
) -> tuple[LanceIndexStats, LanceIndexStats]:
    """Replace the namespace's LanceDB `community_reports` and `entities` tables; (reports, entities) stats."""
    dim, model_id = embedder.dimension, embedder.model_id

    reports = store.read_table(schema.COMMUNITY_REPORTS)
    ids = reports.column("id").to_pylist()
    contents = [
        report_text(t, s)
        for t, s in zip(
            reports.column("title").to_pylist(), reports.column("summary").to_pylist(), strict=True
        )
    ]
    vectors, report_stats = _vectors(
        store,
        schema.LANCE_COMMUNITY_REPORTS,
        ids,
        contents,
        embedder,
        lambda r: report_text(r["title"], r["summary"]),
        REPORT_VECTOR_TEXT,
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
        schema.lance_community_reports_schema(dim, model_id, REPORT_VECTOR_TEXT),
    )
    store.replace_lance_table(schema.LANCE_COMMUNITY_REPORTS, report_table, fts_columns=("full_content",))

    entities = store.read_table(schema.ENTITIES, columns=["id", "title", "type", "description", "aliases"])
    rows = entities.to_pylist()
    words = entity_description_words
    texts = [entity_text(r["title"], r["description"], words) for r in rows]
    vectors, entity_stats = _vectors(
        store,
        schema.LANCE_ENTITIES,
        [r["id"] for r in rows],
        texts,
        embedder,
        lambda r: entity_text(r["title"], r["description"], words),
        entity_vector_text(words),
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
        schema.lance_entities_schema(dim, model_id, entity_vector_text(words)),
    )
    store.replace_lance_table(schema.LANCE_ENTITIES, entity_table, fts_columns=("title", "description"))
    return report_stats, entity_stats


def run(ctx: IndexContext) -> StageReport:
    clock = Stopwatch()
    store, cached = ctx.store, ctx.embedder
    reports, entities = index_report_embeddings(
        store,
        cached,
        progress=ctx.progress("embedded new texts"),
        entity_description_words=ctx.settings.entity_vector_description_words,
    )
    # Microsoft GraphRAG's query engine reads tables of its own names (pipeline.interop.ms_graphrag_export)
    exported = write_ms_tables(store, cached).rows if ctx.settings.graphrag_export else {}
    bad = {}
    for stats in (reports, entities):
        ids, invalid = vector_ids(store, stats.table)
        bad[stats.table] = invalid + (stats.rows - len(ids))
    metadata = {
        "model": cached.model_id,
        "dimension": cached.dimension,
        "lancedb_uri": str(store.lance_uri),
        "graphrag_tables": Json(exported),
    }
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
            Check.of_counts(
                "every_row_has_vector", {f"{table}_without_vector": n for table, n in bad.items()}
            )
        ],
        duration_s=clock.seconds(),
    )
