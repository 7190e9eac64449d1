"""Community reports with the offline engine: budgeted context, sub-report substitution, fingerprint
reuse, and readable extractive reports on A Christmas Carol. Real Parquet; hand-built graph tables."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.core.tokens import count_tokens
from pipeline.engine.offline import OfflineEngine
from pipeline.index.community_reports import index_community_reports
from pipeline.ops.reports.build import build_reports
from pipeline.ops.reports.context import ChildInfo, GraphData, build_context
from pipeline.ops.reports.fingerprint import report_fingerprint
from pipeline.ops.reports.models import CommunityReportResponse, SubReport
from tests.conftest import shared_data
from tests.support.graph_stages import offline_graph
from tests.support.graph_tables import Graph, two_group_graph

GRAPHRAG_COLUMNS = [
    "id", "human_readable_id", "community", "level", "parent", "children", "title", "summary",
    "full_content", "rank", "rating_explanation", "findings", "full_content_json", "period", "size",
]  # fmt: skip


def _graph_data(g: Graph) -> GraphData:
    t = g.tables()
    return GraphData(t["entities"], t["relationships"], t["covariates"], "o200k_base")


def _context(data: GraphData, g: Graph, n: int, budget: int, children: list[ChildInfo] = ()):
    c = next(c for c in g.communities if c["community"] == n)
    return build_context(
        data,
        community=n,
        level=c["level"],
        member_ids=c["entity_ids"],
        relationship_ids=c["relationship_ids"],
        children=list(children),
        budget=budget,
    )


def _child(g: Graph, n: int, title: str) -> ChildInfo:
    c = next(c for c in g.communities if c["community"] == n)
    report = SubReport(
        community=n, size=c["size"], title=title, summary=f"{title} summary.", findings=[], rank=5.0,
        full_content=f"# {title}\n\n{title} summary.",
    )  # fmt: skip
    return ChildInfo(report, set(c["entity_ids"]), set(c["relationship_ids"]))


def _run(g: Graph, budget: int, previous: pa.Table | None = None):
    t = g.tables()
    return build_reports(
        t["communities"], t["entities"], t["relationships"], t["covariates"], OfflineEngine(),
        budget=budget, previous=previous,
    )  # fmt: skip


# ---- context ------------------------------------------------------------------------------------
def test_a_community_within_budget_uses_all_its_raw_rows():
    g = two_group_graph()
    data = _graph_data(g)
    children = [_child(g, 1, "A group"), _child(g, 2, "B group")]
    ctx = _context(data, g, 0, budget=100_000, children=children)
    assert ctx.sub_reports == []
    assert {e.title for e in ctx.entities} == {"Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir"}
    assert len(ctx.relationships) == 6 and len(ctx.claims) == 2
    assert ctx.tokens == count_tokens(ctx.text) <= ctx.own_tokens
    assert "-----Entities-----" in ctx.text and "Alder once met Elm" in ctx.text


def test_a_community_over_budget_uses_its_largest_childs_report_plus_the_rest_that_fits():
    g = two_group_graph()
    data = _graph_data(g)
    children = [_child(g, 2, "B group"), _child(g, 1, "A group")]  # order given must not matter
    own = _context(data, g, 0, budget=100_000).own_tokens
    ctx = _context(data, g, 0, budget=own - 1, children=children)
    assert ctx.own_tokens == own > ctx.tokens
    assert ctx.tokens <= own - 1
    # The A group (4 members) is larger, so its report goes in first; that alone makes the rest fit.
    assert [s.title for s in ctx.sub_reports] == ["A group"]
    assert ctx.text.startswith("-----Sub-community reports-----") and "A group summary." in ctx.text
    assert {e.title for e in ctx.entities} == {"Elm", "Fir"}  # the B group's raw rows remain
    # The edge between the groups belongs to neither child's report, so it stays as a raw row.
    assert {(r.source, r.target) for r in ctx.relationships} == {("Elm", "Fir"), ("Alder", "Elm")}
    assert [c.subject for c in ctx.claims] == ["Elm"]


def test_a_tight_budget_is_filled_by_combined_degree_and_never_exceeded():
    g = two_group_graph()
    data = _graph_data(g)
    own = _context(data, g, 1, budget=100_000).own_tokens
    ctx = _context(data, g, 1, budget=own // 2)  # no children: trimmed raw context
    assert 0 < ctx.tokens <= own // 2
    assert ctx.sub_reports == []
    assert 0 < len(ctx.relationships) < 4


# ---- bottom-up build ----------------------------------------------------------------------------
def test_a_community_over_budget_is_summarized_from_its_childrens_reports():
    g = two_group_graph()
    data = _graph_data(g)
    leaf = _context(data, g, 1, budget=100_000).own_tokens
    parent = _context(data, g, 0, budget=100_000).own_tokens
    budget = (leaf + parent) // 2  # the A group fits; the whole community does not
    run = _run(g, budget)
    rows = {r["community"]: r for r in run.reports.to_pylist()}
    assert run.generated == 3 and run.failures == [] and run.substituted == 1
    assert rows[1]["sub_reports"] == [] and rows[2]["sub_reports"] == []
    assert rows[0]["sub_reports"][0] == 1  # the larger child first
    assert all(r["context_tokens"] <= budget for r in rows.values())
    a_title = rows[1]["title"]
    assert f"Its largest parts: {a_title} (4)" in rows[0]["summary"]
    assert any(f["summary"] == a_title for f in rows[0]["findings"])  # the child's report is a finding


# Worked out by hand from two_group_graph(): the title names the three most connected members (ties
# by name); the rank is 10 * s / (s + 6) with s = log2(1 + size) / 2 + log2(1 + evidence)
# + log2(1 + claims) / 4, evidence = distinct sentences of its relationships' descriptions (each edge's
# is one sentence and four filler sentences: 30, 20 and 5).
EXPECTED_REPORTS = {
    # community: (title, size, total degree, rank)
    0: ("Alder, Birch and Cedar", 6, 4 * 3 + 2 * 2, 5.30),  # s = log2 7 / 2 + log2 31 + log2 3 / 4 = 6.754
    1: ("Alder, Birch and Cedar", 4, 4 * 3, 4.92),  # s = log2 5 / 2 + log2 21 + 1 / 4 = 5.803
    2: ("Elm and Fir", 2, 2 * 2, 3.77),  # s = log2 3 / 2 + log2 6 + 1 / 4 = 3.627
}


def test_reports_have_graphrag_columns_and_consistent_content():
    run = _run(two_group_graph(), budget=8000)
    assert run.reports.schema.equals(schema.COMMUNITY_REPORTS_SCHEMA)
    assert run.reports.column_names[: len(GRAPHRAG_COLUMNS)] == GRAPHRAG_COLUMNS
    assert sorted(r["community"] for r in run.reports.to_pylist()) == sorted(EXPECTED_REPORTS)
    for r in run.reports.to_pylist():
        title, size, total_degree, rank = EXPECTED_REPORTS[r["community"]]
        assert (r["title"], r["size"], r["rank"]) == (title, size, pytest.approx(rank, abs=0.005))
        assert f"{size} entities, {total_degree} relationship ends" in r["rating_explanation"]
        parsed = CommunityReportResponse.model_validate_json(r["full_content_json"])
        assert (parsed.title, parsed.rating) == (title, pytest.approx(rank, abs=0.005))
        assert r["full_content"].startswith(f"# {r['title']}\n\n{r['summary']}")
        assert all(f"## {f['summary']}" in r["full_content"] for f in r["findings"])
        assert r["human_readable_id"] == r["community"] and r["method"] == "offline"
    top = next(r for r in run.reports.to_pylist() if r["community"] == 0)
    assert top["title"] == "Alder, Birch and Cedar"  # most connected members, ties by name
    assert top["children"] == [1, 2] and top["parent"] == -1 and top["size"] == 6


# ---- fingerprints ---------------------------------------------------------------------------------
def test_unchanged_fingerprints_reuse_every_report_without_the_engine():
    g = two_group_graph()
    first = _run(g, 8000)
    second = _run(g, 8000, previous=first.reports)
    assert (second.generated, second.reused) == (0, 3)
    assert second.reports.equals(first.reports)


def test_a_changed_description_regenerates_that_community_and_its_ancestors_only():
    g = two_group_graph()
    first = _run(g, 8000)
    g.entities[4]["description"] = "Elm is now the oldest tree of the B group."  # Elm: community 2
    second = _run(g, 8000, previous=first.reports)
    levels = {
        lv: (s["communities"], s.get("generated", 0), s.get("reused", 0))
        for lv, s in second.per_level.items()
    }
    assert levels == {1: (2, 1, 1), 0: (1, 1, 0)}
    before = {r["community"]: r["fingerprint"] for r in first.reports.to_pylist()}
    after = {r["community"]: r["fingerprint"] for r in second.reports.to_pylist()}
    assert after[1] == before[1] and after[2] != before[2] and after[0] != before[0]


def test_a_reused_report_takes_the_new_community_numbers():
    g = two_group_graph()
    first = _run(g, 8000)
    renumbered = two_group_graph()
    for c in renumbered.communities:  # same members, numbers shifted by 10
        c["community"] = c["human_readable_id"] = c["community"] + 10
        c["parent"] = c["parent"] + 10 if c["parent"] >= 0 else -1
        c["children"] = [k + 10 for k in c["children"]]
    second = _run(renumbered, 8000, previous=first.reports)
    assert second.reused == 3
    rows = {r["community"]: r for r in second.reports.to_pylist()}
    assert sorted(rows) == [10, 11, 12] and rows[10]["children"] == [11, 12]
    assert rows[11]["title"] == next(r["title"] for r in first.reports.to_pylist() if r["community"] == 1)


def test_the_fingerprint_covers_model_prompt_budget_and_children():
    base = dict(model="offline", prompt_version="v1", budget=8000, max_words=2000)
    rows = ["a" * 64, "b" * 64]
    fp = report_fingerprint(rows, [("c" * 64, True)], **base)
    assert fp == report_fingerprint(list(rows), [("c" * 64, True)], **base)
    variants = [
        report_fingerprint(rows[:1], [("c" * 64, True)], **base),
        report_fingerprint(rows, [("c" * 64, False)], **base),  # the child's report failed
        report_fingerprint(rows, [("d" * 64, True)], **base),
        report_fingerprint(rows, [("c" * 64, True)], **{**base, "model": "host/gpt-4o-mini"}),
        report_fingerprint(rows, [("c" * 64, True)], **{**base, "prompt_version": "v2"}),
        report_fingerprint(rows, [("c" * 64, True)], **{**base, "budget": 4000}),
    ]
    assert fp not in variants and len(set(variants)) == len(variants)


def test_an_isolated_entity_still_gets_a_report():
    g = Graph().entity("Hermit", "Hermit lives alone on the hill and speaks to nobody at all.", degree=0)
    g.community(0, 0, ["Hermit"])
    [row] = _run(g, 8000).reports.to_pylist()
    assert row["title"] == "Hermit" and "Hermit lives alone" in row["full_content"]
    assert row["findings"] and row["sub_reports"] == []


# ---- A Christmas Carol ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def carol(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Offline graph of the book through the pipeline functions the assets call, then the reports."""
    root = tmp_path_factory.mktemp("carol")
    ctx = offline_graph(root, "carol", shared_data("christmas_carol"))
    settings, store = ctx.settings, ctx.store
    first = index_community_reports(store, settings, OfflineEngine())
    again = index_community_reports(store, settings, OfflineEngine())  # reads the table just written
    return {"store": store, "first": first, "again": again, "root": root}


def test_offline_reports_on_christmas_carol_put_scrooge_on_top(carol):
    reports = carol["first"].reports.to_pylist()
    communities = carol["store"].read_table(schema.COMMUNITIES)
    assert sorted(r["community"] for r in reports) == sorted(communities.column("community").to_pylist())
    top = max((r for r in reports if r["level"] == 0), key=lambda r: (r["rank"], -r["community"]))
    assert "Scrooge" in top["title"] and "Scrooge" in top["summary"]
    assert top["size"] == max(r["size"] for r in reports if r["level"] == 0)
    assert carol["first"].failures == [] and carol["first"].substituted >= 1
    assert all(r["context_tokens"] <= 8000 for r in reports)


def test_offline_reports_are_deterministic_and_reused_on_a_rerun(carol, tmp_path: Path):
    again = carol["again"]
    assert again.generated == 0 and again.reused == carol["first"].reports.num_rows
    assert again.reports.equals(carol["first"].reports)
    fresh = carol["store"]
    t = {name: fresh.read_table(name) for name in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS)}
    rebuilt = build_reports(
        t[schema.COMMUNITIES], t[schema.ENTITIES], t[schema.RELATIONSHIPS],
        fresh.read_table(schema.COVARIATES), OfflineEngine(),
    )  # fmt: skip
    assert rebuilt.generated == again.reused
    assert rebuilt.reports.equals(again.reports)
    assert fresh.read_table(schema.FAILED_REPORTS).num_rows == 0
    findings = json.loads(rebuilt.reports.column("full_content_json")[0].as_py())["findings"]
    assert findings and all(f["summary"] and f["explanation"] for f in findings)


def test_cli_prints_top_level_titles_highest_rank_first(carol, capsys, monkeypatch):
    from assets.cli import main

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(carol["root"]))
    assert main(["communities", "--namespace", "carol", "--level", "0", "--limit", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    level0 = [r for r in carol["first"].reports.to_pylist() if r["level"] == 0]
    assert out[0].startswith(f"namespace 'carol': {len(level0)} communities at level 0")
    rows = [line.split(None, 3) for line in out[2:5]]
    # rank weighs content: a bin of unconnected names never outranks a story's main community
    largest = sorted(level0, key=lambda r: (-r["rank"], -r["size"], r["community"]))[:3]
    assert [(int(c), int(s), t) for c, s, _, t in rows] == [
        (r["community"], r["size"], r["title"]) for r in largest
    ]
    assert "Scrooge" in rows[0][3]
