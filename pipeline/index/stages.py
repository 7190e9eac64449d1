"""The indexing stages as one table: for each stage the assets it writes, its runner and the assets it
reads. It is the only place the stage order is written: `index_folder` runs the table in its
topological order, and `assets/indexing` takes every asset's `deps` (and group) from it.

What is special is a field, not a branch elsewhere:
- `assets`: a stage may write several assets in one run (`entities_and_relationships`); its runner then
  returns `{asset name: StageReport}`.
- `per_shard`: the stage fans out over `namespace x shard` partitions under Dagster. `index_folder`
  skips it: the namespace stage that reads it does whatever no shard did.
- `takes_input_dir`: the runner takes the folder to read as its second argument.
- `final`: the stage that commits the run as one index version; it must read (through its inputs) every
  other stage, so it runs only when all of them succeeded.

A table with an unknown input, a cycle or a second final stage is refused when it is built, so a
mistake fails the import, not an index run half-way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from pipeline.index import (
    base_text_units,
    chunk_graph,
    claims,
    communities,
    community_reports,
    documents,
    entities_and_relationships,
    extracted_graph,
    extracted_graph_shard,
    input_documents,
    report_embeddings,
    text_unit_embeddings,
    text_unit_embeddings_shard,
    text_units,
    version,
)

GROUP = "indexing"  # the `index_namespace` job runs this group
SHARD_GROUP = "indexing_shards"  # the `index_shards` job runs this one, once per shard


class StageTableError(ValueError):
    """The stage table is not a valid graph: the message names the stage and what is wrong."""


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[..., Any]
    reads: tuple[str, ...] = ()
    """The asset names this stage reads (its Dagster `deps`)."""
    assets: tuple[str, ...] = ()
    """The asset names it writes; empty means one asset named like the stage."""
    per_shard: bool = False
    takes_input_dir: bool = False
    final: bool = False

    @property
    def writes(self) -> tuple[str, ...]:
        return self.assets or (self.name,)

    @property
    def group(self) -> str:
        return SHARD_GROUP if self.per_shard else GROUP


class StageTable:
    """Stages checked as a graph and kept in topological order (ties keep the order they were given in,
    so a table written in a valid order runs exactly in that order)."""

    def __init__(self, stages: Iterable[Stage]) -> None:
        given = list(stages)
        self._writer = _writers(given)
        for stage in given:
            for name in stage.reads:
                if name not in self._writer:
                    raise StageTableError(f"stage {stage.name!r} reads {name!r}, which no stage writes")
        self.order: tuple[Stage, ...] = _topological(given, self._writer)
        _check_shards(self.order, self._writer)
        _check_final(self.order, self._writer)

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.order)

    def writer(self, asset: str) -> Stage:
        """The stage that writes `asset` (KeyError for an asset not in the table)."""
        return self._writer[asset]

    def assets(self) -> list[str]:
        """Every asset the table writes, in run order."""
        return [name for stage in self.order for name in stage.writes]


def _writers(stages: Sequence[Stage]) -> dict[str, Stage]:
    writer: dict[str, Stage] = {}
    names: set[str] = set()
    for stage in stages:
        if stage.name in names:
            raise StageTableError(f"stage {stage.name!r} is in the table twice")
        names.add(stage.name)
        for asset in stage.writes:
            if asset in writer:
                raise StageTableError(
                    f"asset {asset!r} is written by both {writer[asset].name!r} and {stage.name!r}"
                )
            writer[asset] = stage
    return writer


def _graph(stages: Sequence[Stage], writer: dict[str, Stage]) -> nx.DiGraph:
    """Stage names, an edge from each stage to every stage that reads what it writes."""
    g = nx.DiGraph()
    g.add_nodes_from(s.name for s in stages)
    g.add_edges_from((writer[r].name, s.name) for s in stages for r in s.reads)
    return g


def _topological(stages: list[Stage], writer: dict[str, Stage]) -> tuple[Stage, ...]:
    """The stages in an order that runs each after what it reads; ties keep the table's order."""
    g = _graph(stages, writer)
    position = {s.name: i for i, s in enumerate(stages)}
    try:
        names = list(nx.lexicographical_topological_sort(g, key=position.__getitem__))
    except nx.NetworkXUnfeasible:
        # the shortest cycle, from its stage first in the table (a handful of stages: cheap)
        cycle = min(nx.simple_cycles(g), key=len)
        first = cycle.index(min(cycle, key=position.__getitem__))
        cycle = cycle[first:] + cycle[: first + 1]
        raise StageTableError(
            f"the stages form a cycle (each feeds the next): {' -> '.join(cycle)}"
        ) from None
    by_name = {s.name: s for s in stages}
    return tuple(by_name[n] for n in names)


def _check_final(order: tuple[Stage, ...], writer: dict[str, Stage]) -> None:
    finals = [s.name for s in order if s.final]
    if len(finals) != 1:
        raise StageTableError(f"the table needs exactly one final stage, it has {finals}")
    final = next(s for s in order if s.final)
    upstream = nx.ancestors(_graph(order, writer), final.name)
    missed = [s.name for s in order if s is not final and s.name not in upstream]
    if missed:
        raise StageTableError(
            f"final stage {final.name!r} would commit before {missed} ran: it must read them (or what reads them)"
        )


def _check_shards(order: tuple[Stage, ...], writer: dict[str, Stage]) -> None:
    for stage in order:
        if stage.per_shard and not any(
            stage.name in {writer[r].name for r in s.reads} for s in order if not s.per_shard
        ):
            # index_folder skips per-shard stages: their work would be done by no one
            raise StageTableError(f"per-shard stage {stage.name!r} is read by no namespace stage")


STAGES = StageTable(
    [
        Stage("input_documents", input_documents.run, takes_input_dir=True),
        Stage("base_text_units", base_text_units.run, reads=("input_documents",)),
        Stage("documents", documents.run, reads=("input_documents", "base_text_units")),
        Stage(
            "text_unit_embeddings_shard",
            text_unit_embeddings_shard.run,
            reads=("base_text_units",),
            per_shard=True,
        ),
        Stage(
            "text_unit_embeddings",
            text_unit_embeddings.run,
            reads=("base_text_units", "text_unit_embeddings_shard"),
        ),
        Stage("extracted_graph_shard", extracted_graph_shard.run, reads=("base_text_units",), per_shard=True),
        Stage("extracted_graph", extracted_graph.run, reads=("base_text_units", "extracted_graph_shard")),
        Stage(
            "entities_and_relationships",
            entities_and_relationships.run,
            reads=("extracted_graph",),
            assets=("entities", "relationships"),
        ),
        Stage("claims", claims.run, reads=("extracted_graph", "entities")),
        Stage("text_units", text_units.run, reads=("base_text_units", "entities", "relationships", "claims")),
        Stage("communities", communities.run, reads=("entities", "relationships")),
        Stage("community_reports", community_reports.run, reads=("communities", "claims")),
        Stage("report_embeddings", report_embeddings.run, reads=("community_reports", "entities")),
        Stage("chunk_graph", chunk_graph.run, reads=("text_unit_embeddings",)),
        Stage(
            "version",
            version.run,
            reads=("documents", "text_units", "report_embeddings", "chunk_graph"),
            assets=("index_version",),
            final=True,
        ),
    ]
)
