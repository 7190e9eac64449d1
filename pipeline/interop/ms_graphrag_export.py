"""LanceDB tables under Microsoft GraphRAG's default names, so its query engine runs on our index with
no change to its vector-store settings.

GraphRAG 3.x's local, DRIFT and basic searches open `entity_description`, `community_full_content` and
`text_unit_text` under the vector store's `db_uri` (`output/lancedb` by default: ours is
`<namespace>/lancedb`), search them by vector, and join each hit's `id` to the Parquet table. So each
table holds the ids of our Parquet rows and the vector of the text GraphRAG itself embeds:

- `entity_description`: "title:description" of each entity (GraphRAG's rule; ours embeds the title);
- `community_full_content`: each report's `full_content` (ours embeds title and summary opening);
- `text_unit_text`: each unit's text, no title line (ours puts the document's title first); a unit
  longer than the model window is embedded in pieces and their mean taken, as GraphRAG does.

Our own tables are left as they are. The vectors are our embedder's: GraphRAG's queries match them only
when its embedding model is the same one (docs/graphrag.md). Only texts not in
the embedding cache cost an embedding; an unchanged index writes no new LanceDB version.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core import schema, tables
from pipeline.embeddings.base import ProgressFn
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.io.store import NamespaceStore


@dataclass
class ExportStats:
    rows: dict[str, int]  # table -> rows written
    embedded: int  # vectors the model computed (the rest came from the cache)


def entity_description_text(title: str | None, description: str | None) -> str:
    """The text GraphRAG embeds for an entity."""
    return f"{title or ''}:{description or ''}"


def export_texts(store: NamespaceStore) -> dict[str, tuple[list[str], list[str]]]:
    """table -> (ids, texts) of the three tables, from the namespace's Parquet tables."""
    entities = store.read_table(schema.ENTITIES, columns=["id", "title", "description"]).to_pylist()
    reports = store.read_table(schema.COMMUNITY_REPORTS, columns=["id", "full_content"]).to_pylist()
    units = store.read_table(schema.TEXT_UNITS, columns=["id", "text"]).to_pylist()
    return {
        schema.LANCE_MS_ENTITY_DESCRIPTION: (
            [e["id"] for e in entities],
            [entity_description_text(e["title"], e["description"]) for e in entities],
        ),
        schema.LANCE_MS_COMMUNITY_FULL_CONTENT: (
            [r["id"] for r in reports],
            [r["full_content"] or "" for r in reports],
        ),
        schema.LANCE_MS_TEXT_UNIT_TEXT: ([u["id"] for u in units], [u["text"] or "" for u in units]),
    }


def _vectors(embedder: CachedEmbedder, texts: list[str], progress: ProgressFn | None) -> np.ndarray:
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    vectors, _ = embedder.embed_with_pieces(texts, progress=progress)
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), embedder.dimension)


def prepare_export(
    store: NamespaceStore, embedder: CachedEmbedder, progress: ProgressFn | None = None
) -> int:
    """Embed the three tables' texts into the embedding cache, writing nothing (so a failing model
    fails before a table is touched); the number of vectors the model computed."""
    before = embedder.computed
    for _, texts in export_texts(store).values():
        _vectors(embedder, texts, progress)
    return embedder.computed - before


def write_ms_tables(
    store: NamespaceStore, embedder: CachedEmbedder, progress: ProgressFn | None = None
) -> ExportStats:
    """Replace the namespace's three GraphRAG-named LanceDB tables (module docstring)."""
    before = embedder.computed
    dim = embedder.dimension
    rows = {}
    schemas = {
        schema.LANCE_MS_ENTITY_DESCRIPTION: schema.lance_entity_description_schema,
        schema.LANCE_MS_COMMUNITY_FULL_CONTENT: schema.lance_community_full_content_schema,
        schema.LANCE_MS_TEXT_UNIT_TEXT: schema.lance_text_unit_text_schema,
    }
    for name, (ids, texts) in export_texts(store).items():
        vectors = _vectors(embedder, texts, progress)
        table = tables.to_table(
            {
                "id": ids,
                "text": texts,
                "vector": schema.vector_array(vectors, dim),
                "create_date": [None] * len(ids),
                "update_date": [None] * len(ids),
            },
            schemas[name](dim, embedder.model_id),
        )
        store.replace_lance_table(name, table)
        rows[name] = len(ids)
    return ExportStats(rows, embedder.computed - before)
