"""The in-memory structures that rank a namespace's passages (text units) for local search.

Built once per process from the index tables and kept while they are unchanged (`index_cache`):
- the piece vectors of every unit (a unit scores as its best piece, as in `search.vector_search`);
- a BM25 index over each unit's document title and text (bm25s, English stop words, Snowball stems);
- the entity–passage graph for personalized PageRank: entity and unit nodes, an edge of weight 1
  between an entity and each unit that mentions it, and relationship edges between entities with
  their weights; stored as the transposed row-stochastic transition matrix, so one power-iteration
  step is one sparse product;
- each entity's specificity, log(units / units mentioning it), the inverse document frequency of
  BM25: a name found in 3 of 1,890 passages says more about a question than one found in 300.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.caches.vector_cache import column_matrix
from pipeline.query.retrieval.local_index import PARQUET_INPUTS, LocalIndex, load_local_index
from pipeline.query.retrieval.sentence_rank import stemmer

LANCE_INPUTS = (schema.LANCE_TEXT_UNITS, schema.LANCE_TEXT_UNIT_PIECES)


@dataclass
class PassageIndex:
    unit_ids: list[str]
    position: dict[str, int]  # unit id -> row
    piece_vectors: np.ndarray  # float32 [pieces, dim], L2-normalised
    piece_owner: np.ndarray  # int64 [pieces]: the unit row of each piece
    bm25: object | None  # bm25s.BM25 over "title\ntext", None for an empty namespace
    entity_position: dict[str, int]  # entity id -> node (units follow at n_entities + row)
    specificity: np.ndarray  # float64 [entities]
    transition_t: sp.csr_matrix  # transposed row-stochastic transition matrix of the graph
    versions: tuple = field(default_factory=tuple)

    @property
    def n_units(self) -> int:
        return len(self.unit_ids)

    @property
    def n_entities(self) -> int:
        return len(self.entity_position)


def load_passage_index(store: NamespaceStore, graph: LocalIndex | None = None) -> PassageIndex:
    """This namespace's passage index, rebuilt only when one of its input tables changed. Its rows and
    graph come from the loaded graph tables (`graph`, else `load_local_index`), not a second read."""
    versions = table_versions(store, PARQUET_INPUTS, LANCE_INPUTS)
    return cached_index(
        store,
        "passages",
        versions,
        lambda: build_passage_index(store, graph or load_local_index(store), versions),
    )


def tokenize(texts: list[str]):  # noqa: ANN201 - bm25s.tokenization.Tokenized
    import bm25s  # imported when a query first needs it: the CLI's other commands do not pay for it

    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), show_progress=False)


def build_passage_index(store: NamespaceStore, graph: LocalIndex, versions: tuple = ()) -> PassageIndex:
    import bm25s

    units = list(graph.text_units.values())
    titles = graph.document_titles
    unit_ids = [u["id"] for u in units]
    position = {u: i for i, u in enumerate(unit_ids)}

    if store.has_lance_table(schema.LANCE_TEXT_UNIT_PIECES):
        pieces = store.open_lance_table(schema.LANCE_TEXT_UNIT_PIECES).to_arrow()
        owners = [position.get(u, -1) for u in pieces.column("text_unit_id").to_pylist()]
        vectors = column_matrix(pieces.column("vector"))
    else:  # an index from before pieces existed: one piece per unit
        table = store.open_lance_table(schema.LANCE_TEXT_UNITS).to_arrow()
        owners = [position.get(u, -1) for u in table.column("id").to_pylist()]
        vectors = column_matrix(table.column("vector"))
    owner = np.asarray(owners, dtype=np.int64)
    keep = owner >= 0  # a piece whose unit is gone (mid re-index) is not a passage
    piece_vectors, piece_owner = vectors[keep] if len(vectors) else vectors, owner[keep]

    bm25 = None
    if units:
        bm25 = bm25s.BM25()
        corpus = [f"{titles.get(u['document_id']) or ''}\n{u['text']}" for u in units]
        bm25.index(tokenize(corpus), show_progress=False)

    entities = list(graph.entities.values())
    relationships = graph.relationships.values()
    entity_position = {e["id"]: i for i, e in enumerate(entities)}
    n_e, n_u = len(entities), len(units)
    rows: list[int] = []
    cols: list[int] = []
    weights: list[float] = []
    mentions = np.zeros(n_e)
    for i, e in enumerate(entities):
        for uid in dict.fromkeys(e["text_unit_ids"] or []):
            u = position.get(uid)
            if u is None:
                continue
            mentions[i] += 1
            rows += [i, n_e + u]
            cols += [n_e + u, i]
            weights += [1.0, 1.0]
    for r in relationships:
        s, t = entity_position.get(r["source_id"]), entity_position.get(r["target_id"])
        w = float(r["weight"] or 0.0)
        if s is None or t is None or s == t or w <= 0:
            continue
        rows += [s, t]
        cols += [t, s]
        weights += [w, w]
    n = n_e + n_u
    adjacency = sp.csr_matrix((weights, (rows, cols)), shape=(n, n), dtype=np.float64)
    adjacency.sum_duplicates()
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    transition_t = (sp.diags(inverse) @ adjacency).T.tocsr()
    specificity = np.log(max(n_u, 1) / np.maximum(mentions, 1.0))
    return PassageIndex(
        unit_ids,
        position,
        piece_vectors,
        piece_owner,
        bm25,
        entity_position,
        specificity,
        transition_t,
        versions,
    )
