"""What a question loads the first time, loaded ahead of it: a warm start for a serving process.

A process's first question paid for more than its search (9.3 s in the web app, 5-11 s on the demo
index, offline): importing LanceDB (2.5 s, most of it its namespace client's pydantic models), building
the tokenizer's ranks (1 s), and each structure the modes keep per namespace (`caches.index_cache`,
`row_cache`, `vector_cache`): the local graph, the passage index, the entity, report and passage
vectors, the community tree, the reports' map contexts. `warm_process` does the first two once per
process; `warm_namespace` builds a namespace's structures into the same caches a question reads, keyed
on the same table versions, so the question finds them built (or waits for the build under way rather
than starting its own). Nothing here needs the embedding model, so a service can warm while it loads.

`LOADS` lists every per-namespace structure a registered mode's question builds; tests/test_warm_start.py
asks each mode a question after a warm and checks that it built nothing more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pipeline.core import schema
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.query.answer.front_matter import document_regions
from pipeline.query.answer.pages import document_layouts
from pipeline.query.auto.compare import stem_frequencies
from pipeline.query.caches.row_cache import held_rows
from pipeline.query.caches.vector_cache import held_vectors
from pipeline.query.common.scope import stored_levels
from pipeline.query.global_.context import load_report_contexts
from pipeline.query.global_.first_use import stand_ins
from pipeline.query.global_.selection import community_tree
from pipeline.query.lazy.tree import load_tree
from pipeline.query.retrieval.local_index import load_local_index
from pipeline.query.retrieval.passage_index import load_passage_index

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Load:
    """One structure a question builds: its name (for the warm status) and how it is built."""

    name: str
    build: Callable[[NamespaceStore], Any]


def _passages(store: NamespaceStore) -> Any:
    return load_passage_index(store, load_local_index(store))


def _lazy_tree(store: NamespaceStore) -> Any:
    return load_tree(store, load_local_index(store), _passages(store))


# Every mode's scope reads the levels; basic the passage vectors and rows; local, DRIFT and lazy the local
# graph and the passage index (lazy its tree over them too); local and DRIFT the entity and report
# vectors; global the community tree, the reports' contexts and which of them are stand-ins; auto the
# passages' stem frequencies; every answer its documents' front matter and page layouts.
LOADS: tuple[Load, ...] = (
    Load("similarity_levels", stored_levels),
    Load(
        "passage_vectors",
        partial(held_vectors, table=schema.LANCE_TEXT_UNIT_PIECES, key_column="text_unit_id"),
    ),
    Load("passage_rows", partial(held_rows, table=schema.LANCE_TEXT_UNITS)),
    Load("front_matter", document_regions),
    Load("page_layouts", document_layouts),
    Load("local_graph", load_local_index),
    Load("passage_index", _passages),
    Load("entity_vectors", partial(held_vectors, table=schema.LANCE_ENTITIES, key_column="id")),
    Load(
        "report_vectors", partial(held_vectors, table=schema.LANCE_COMMUNITY_REPORTS, key_column="community")
    ),
    Load("lazy_tree", _lazy_tree),
    Load("community_tree", community_tree),
    Load("report_contexts", load_report_contexts),
    Load("report_stand_ins", stand_ins),
    Load("stem_frequencies", stem_frequencies),
)


@dataclass
class Warmed:
    """What `warm_namespace` did: the structures built or found held, those whose tables the namespace
    lacks (a mode it cannot answer yet), and those that failed (named with the error's type)."""

    loaded: list[str]
    absent: list[str]
    failed: dict[str, str]
    seconds: float


def warm_process(encoding: str) -> None:
    """The process-wide pieces of a first question: LanceDB's import and the tokenizer `encoding`."""
    import lancedb  # noqa: F401 - imported for its import's time alone

    from pipeline.core.tokens import get_encoding

    get_encoding(encoding)


def warm_namespace(store: NamespaceStore, loads: tuple[Load, ...] = LOADS) -> Warmed:
    """Build `store`'s structures (a pinned view, as a question reads it) into the query caches; one that
    is held at these table versions already costs only the versions' check."""
    started = time.monotonic()
    warmed = Warmed([], [], {}, 0.0)
    for load in loads:
        try:
            load.build(store)
        except (TableNotFoundError, FileNotFoundError):
            warmed.absent.append(load.name)
        except Exception as exc:  # noqa: BLE001 - the question that needs it will report it; the rest warm
            log.warning(
                "warming %s of namespace %s failed: %s: %s",
                load.name,
                store.namespace,
                type(exc).__name__,
                exc,
            )
            warmed.failed[load.name] = type(exc).__name__
        else:
            warmed.loaded.append(load.name)
    warmed.seconds = round(time.monotonic() - started, 3)
    return warmed
