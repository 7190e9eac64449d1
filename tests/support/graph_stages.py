"""A namespace's graph (documents -> communities) built by the indexing runners themselves,
for tests of the stages after it: the same code the assets run, no hand-assembled chain."""

from __future__ import annotations

from pathlib import Path

from pipeline.engine.offline import OfflineEngine
from pipeline.index import (
    base_text_units,
    claims,
    communities,
    documents,
    entities_and_relationships,
    extracted_graph,
    input_documents,
    text_units,
)
from pipeline.index.context import IndexContext
from pipeline.settings import Settings


def run_graph_stages(ctx: IndexContext, folder: Path) -> IndexContext:
    """Index `folder` into `ctx`'s namespace up to communities, with `ctx`'s engine (no embeddings)."""
    input_documents.run(ctx, folder)
    base_text_units.run(ctx)
    documents.run(ctx)
    extracted_graph.run(ctx)
    entities_and_relationships.run(ctx)
    claims.run(ctx)
    text_units.run(ctx)
    communities.run(ctx)
    return ctx


def offline_graph(root: Path, namespace: str, folder: Path) -> IndexContext:
    """Index `folder` as `namespace` under `root` up to communities, offline."""
    return run_graph_stages(
        IndexContext.build(namespace, Settings(storage_root=root), engine=OfflineEngine()), folder
    )
