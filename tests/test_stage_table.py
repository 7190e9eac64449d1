"""The indexing stage order is written once, in `pipeline.index.stages.STAGES`: the Dagster asset graph
and `index_folder` are both built from it, and a table that is no valid graph is refused.

The graph is the real code location's (`assets.definitions.defs`); the run is a real offline
`index_folder` of one short document (real Parquet, LanceDB and MiniLM)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from pipeline.index.stages import GROUP, SHARD_GROUP, STAGES, Stage, StageTable, StageTableError

ROWS_LINE = re.compile(r"^(\w+): \d+ rows in ")
VERSION_LINE = re.compile(r"^index version \d+ committed")


def _table_deps(table: StageTable) -> dict[str, set[str]]:
    return {asset: set(stage.reads) for stage in table for asset in stage.writes}


def _graph_deps(groups: set[str]) -> dict[str, set[str]]:
    from assets.definitions import defs

    graph = defs.resolve_asset_graph()
    return {
        key.to_user_string(): {p.to_user_string() for p in graph.get(key).parent_keys}
        for key in graph.get_all_asset_keys()
        if graph.get(key).group_name in groups
    }


def test_the_dagster_asset_graph_is_the_stage_table():
    """Every indexing and shard asset reads exactly what its stage reads, and no other asset is in
    those groups."""
    assert _graph_deps({GROUP, SHARD_GROUP}) == _table_deps(STAGES)


def test_the_graph_comparison_sees_a_dependency_the_table_lacks():
    """The comparison above can fail: a table that forgot community_reports reads claims differs."""
    stages = [
        dataclasses.replace(s, reads=("communities",)) if s.name == "community_reports" else s for s in STAGES
    ]
    differs = _table_deps(StageTable(stages))
    assert differs != _graph_deps({GROUP, SHARD_GROUP})
    assert differs["community_reports"] == {"communities"}


def test_each_asset_has_its_stage_group_and_partitions():
    """Per-shard stages are the `index_shards` job's namespace x shard assets; the others are the
    `index_namespace` job's namespace assets, and a namespace asset reads all of its namespace's shards."""
    from dagster import AssetKey, MultiToSingleDimensionPartitionMapping

    from assets.definitions import defs
    from assets.partitions import namespace_partitions, namespace_shard_partitions

    graph = defs.resolve_asset_graph()
    for stage in STAGES:
        for asset in stage.writes:
            node = graph.get(AssetKey(asset))
            assert node.group_name == stage.group, asset
            expected = namespace_shard_partitions if stage.per_shard else namespace_partitions
            assert node.partitions_def == expected, asset
            spec = next(s for s in node.assets_def.specs if s.key == node.key)
            for dep in spec.deps:
                across_shards = (
                    STAGES.writer(dep.asset_key.to_user_string()).per_shard and not stage.per_shard
                )
                assert (
                    isinstance(dep.partition_mapping, MultiToSingleDimensionPartitionMapping) is across_shards
                )

    jobs = {job.name: job for job in defs.jobs}
    selected = {
        name: {k.to_user_string() for k in jobs[name].selection.resolve(graph)}
        for name in ("index_namespace", "index_shards")
    }
    assert selected["index_namespace"] == {a for s in STAGES if not s.per_shard for a in s.writes}
    assert selected["index_shards"] == {a for s in STAGES if s.per_shard for a in s.writes}


@pytest.fixture(scope="module")
def run_log(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The log lines of one offline index_folder run over one short document."""
    from pipeline.index.run import index_folder
    from pipeline.settings import load_settings

    corpus = tmp_path_factory.mktemp("stage_corpus")
    (corpus / "rescue.txt").write_text(
        "Grace Darling lived at the Longstone Lighthouse with her father William Darling. Grace Darling "
        "and William Darling rowed a coble to the rock and rescued nine survivors.\n",
        encoding="utf-8",
    )
    settings = load_settings(storage_root=tmp_path_factory.mktemp("stage_storage"))
    lines: list[str] = []
    index_folder("stages", corpus, settings=settings, log=lines.append)
    return lines


def test_index_folder_runs_the_stages_in_the_table_order(run_log: list[str]):
    logged = [m.group(1) for line in run_log if (m := ROWS_LINE.match(line))]
    # every stage but the per-shard ones (their namespace stage does their work) and the final commit
    assert logged == [a for s in STAGES if not (s.per_shard or s.final) for a in s.writes]
    position = {name: i for i, name in enumerate(logged)}
    for stage in STAGES:
        for asset in stage.writes:
            if asset in position:
                assert all(position[r] < position[asset] for r in stage.reads if r in position), asset


def test_index_folder_commits_the_version_after_every_stage(run_log: list[str]):
    commits = [i for i, line in enumerate(run_log) if VERSION_LINE.match(line)]
    last_stage = max(i for i, line in enumerate(run_log) if ROWS_LINE.match(line))
    assert len(commits) == 1 and commits[0] > last_stage


def _noop(*_: object) -> None:
    return None


def _valid() -> list[Stage]:
    return [
        Stage("a", _noop),
        Stage("shard", _noop, reads=("a",), per_shard=True),
        Stage("b", _noop, reads=("a", "shard"), assets=("b1", "b2")),
        Stage("c", _noop, reads=("b1",)),
        Stage("done", _noop, reads=("b2", "c"), final=True),
    ]


def test_a_table_written_out_of_order_runs_in_topological_order():
    stages = _valid()
    table = StageTable(reversed(stages))
    assert [s.name for s in table] == ["a", "shard", "b", "c", "done"]
    assert table.assets() == ["a", "shard", "b1", "b2", "c", "done"]


def test_a_table_with_a_cycle_is_refused():
    stages = _valid()
    stages[0] = Stage("a", _noop, reads=("c",))
    with pytest.raises(StageTableError, match=r"cycle \(each feeds the next\): a -> b -> c -> a"):
        StageTable(stages)


def test_a_table_reading_an_unknown_asset_is_refused():
    stages = _valid()
    stages[3] = Stage("c", _noop, reads=("b1", "b3"))
    with pytest.raises(StageTableError, match=r"stage 'c' reads 'b3', which no stage writes"):
        StageTable(stages)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: [*s, Stage("b", _noop)], r"stage 'b' is in the table twice"),
        (lambda s: [*s, Stage("e", _noop, assets=("b2",))], r"'b2' is written by both 'b' and 'e'"),
        (lambda s: [*s, Stage("late", _noop, reads=("a",))], r"commit before \['late'\] ran"),
        (lambda s: [*s[:-1], dataclasses.replace(s[-1], final=False)], r"exactly one final stage"),
        (
            lambda s: [*s[:2], dataclasses.replace(s[2], reads=("a",)), *s[3:]],
            r"per-shard stage 'shard' is read by no namespace stage",
        ),
    ],
    ids=["stage twice", "asset twice", "final misses a stage", "no final", "shard unread"],
)
def test_other_invalid_tables_are_refused(change, message: str):
    with pytest.raises(StageTableError, match=message):
        StageTable(change(_valid()))
