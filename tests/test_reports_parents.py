"""Model reports of parents written from their children's reports (issue 62): the parent's context,
fingerprint reuse, the offline reports left as they were, and coverage on MuSiQue-100.

The offline writer stands in for the model (`parents_from_children=True`): it sends nothing, and the
context a parent reads is the same whichever engine then writes from it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.index.community_reports import reports_by_settings
from pipeline.ops.reports.build import EXTRACTIVE, build_reports
from pipeline.settings import Settings
from tests.conftest import shared_data
from tests.support.graph_stages import offline_graph
from tests.support.graph_tables import Graph, two_group_graph


def _run(g: Graph, previous: pa.Table | None = None, budget: int = 8000, from_children: bool = True):
    t = g.tables()
    return build_reports(
        t["communities"], t["entities"], t["relationships"], t["covariates"], OfflineEngine(),
        budget=budget, previous=previous, parents_from_children=from_children,
    )  # fmt: skip


def _generated(run) -> dict[int, tuple[int, int]]:
    return {lv: (s.get("generated", 0), s.get("reused", 0)) for lv, s in run.per_level.items()}


def test_a_parent_reads_its_childrens_reports_and_only_the_edge_between_them():
    run = _run(two_group_graph())
    rows = {r["community"]: r for r in run.reports.to_pylist()}
    assert rows[0]["sub_reports"] == [1, 2]  # largest child first
    # Both children's contexts held all their rows: what is left of the parent's is the edge between them.
    cover = run.coverage[0]
    assert cover.entities == {e for c in (1, 2) for e in run.coverage[c].entities}
    assert "r-Alder-Elm" in cover.relationships
    # Much smaller than the parent's raw rows (what GraphRAG's context would send under the budget).
    raw = _run(two_group_graph(), from_children=False)
    raw_rows = {r["community"]: r for r in raw.reports.to_pylist()}
    assert raw_rows[0]["sub_reports"] == [] and rows[0]["context_tokens"] < raw_rows[0]["context_tokens"]
    # Leaves keep today's context.
    for n in (1, 2):
        assert rows[n]["context_tokens"] == raw_rows[n]["context_tokens"]
        assert rows[n]["full_content"] == raw_rows[n]["full_content"]


def test_the_parent_context_holds_summaries_ratings_and_headlines_not_explanations():
    from pipeline.ops.reports.context import ChildInfo, GraphData
    from pipeline.ops.reports.models import Finding, SubReport
    from pipeline.ops.reports.parent_context import Coverage, build_parent_context

    g = two_group_graph()
    t = g.tables()
    data = GraphData(t["entities"], t["relationships"], t["covariates"], "o200k_base")
    child = SubReport(
        community=1, size=4, title="The A group", summary="The A group works together.", rank=7.5,
        findings=[Finding(summary="Alder leads", explanation="A long explanation nobody upstairs reads.")],
        full_content="unused",
    )  # fmt: skip
    a = next(c for c in g.communities if c["community"] == 1)
    cover = Coverage(set(a["entity_ids"]), set(a["relationship_ids"]), {"c-0"})
    top = next(c for c in g.communities if c["community"] == 0)
    ctx = build_parent_context(
        data, community=0, level=0, member_ids=top["entity_ids"], relationship_ids=top["relationship_ids"],
        children=[(ChildInfo(child, cover.entities, cover.relationships), cover)], budget=8000,
    )  # fmt: skip
    assert "1|The A group|7.5|The A group works together.|Alder leads" in ctx.text
    assert "nobody upstairs" not in ctx.text
    # The A group's members are covered; Elm, Fir, their edge, the edge between groups and Elm's claim are not.
    assert {e.title for e in ctx.entities} == {"Elm", "Fir"}
    assert {r.id for r in ctx.relationships} == {"r-Elm-Fir", "r-Alder-Elm"}
    assert [c.subject for c in ctx.claims] == ["Elm"]


def test_an_unchanged_child_keeps_its_report_and_its_parent_is_rewritten_only_when_needed():
    g = two_group_graph()
    first = _run(g)
    again = _run(g, previous=first.reports)
    assert (again.generated, again.reused) == (0, 3) and again.reports.equals(first.reports)

    g.entities[4]["description"] = "Elm is now the oldest tree of the B group."  # child 2's row
    changed_child = _run(g, previous=first.reports)
    assert _generated(changed_child) == {1: (1, 1), 0: (1, 0)}  # child 1 kept; child 2 and parent written

    g = two_group_graph()
    edge = next(r for r in g.relationships if r["id"] == "r-Alder-Elm")
    edge["description"] = "Alder and Elm quarrelled at the river."  # the parent's own row
    changed_parent = _run(g, previous=first.reports)
    assert _generated(changed_parent) == {1: (0, 2), 0: (1, 0)}  # both children kept


def test_a_failed_childs_rows_go_back_to_its_parent():
    from pipeline.ops.reports.context import GraphData
    from pipeline.ops.reports.parent_context import build_parent_context

    g = two_group_graph()
    t = g.tables()
    data = GraphData(t["entities"], t["relationships"], t["covariates"], "o200k_base")
    top = next(c for c in g.communities if c["community"] == 0)
    ctx = build_parent_context(
        data, community=0, level=0, member_ids=top["entity_ids"], relationship_ids=top["relationship_ids"],
        children=[], budget=8000,
    )  # fmt: skip
    assert len(ctx.entities) == 6 and len(ctx.relationships) == 6 and len(ctx.claims) == 2


def test_offline_reports_ignore_the_model_budgets_and_stay_as_they_were():
    g = two_group_graph()
    t = g.tables()
    args = (t["communities"], t["entities"], t["relationships"], t["covariates"], OfflineEngine())
    before = build_reports(*args, budget=Settings().report_max_input_tokens, parents_from_children=False)
    tight = Settings(report_context_tokens=64, report_parent_context_tokens=64)
    after = reports_by_settings(*args, tight, previous=None, min_entities=0)
    assert after.reports.equals(before.reports)  # no model: GraphRAG's substitution, 8,000 tokens
    assert all(r["sub_reports"] == [] for r in after.reports.to_pylist())


# ---- MuSiQue-100 ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def musique(tmp_path_factory: pytest.TempPathFactory):
    folder = shared_data("musique_hipporag100")
    root = tmp_path_factory.mktemp("musique")
    ctx = offline_graph(root, "m", folder)
    return {
        t: ctx.store.read_table(t) for t in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS)
    } | {schema.COVARIATES: ctx.store.read_table(schema.COVARIATES)}


def test_on_musique_nothing_a_report_covered_is_lost_on_the_way_up(musique):
    s = Settings()
    args = [
        musique[t] for t in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS, schema.COVARIATES)
    ]
    new = build_reports(
        *args, OfflineEngine(), budget=s.report_context_tokens, parent_budget=s.report_parent_context_tokens,
        parents_from_children=True, min_entities=s.report_min_entities, min_claims=s.report_min_entities,
    )  # fmt: skip
    old = build_reports(
        *args, OfflineEngine(), budget=s.report_context_tokens, parents_from_children=False,
        min_entities=s.report_min_entities, min_claims=s.report_min_entities,
    )  # fmt: skip
    rows = {r["community"]: r for r in new.reports.to_pylist()}
    assert not new.failures and len(rows) == musique[schema.COMMUNITIES].num_rows
    parents = 0
    for n, r in rows.items():
        cover = new.coverage[n]
        if not r["children"]:  # a leaf keeps today's context
            was = old.coverage[n]
            assert (cover.entities, cover.claims) == (was.entities, was.claims), n
        p = r["parent"]
        if p >= 0:  # what this report covered, its parent's context still holds (itself or via it)
            up = new.coverage[p]
            assert cover.entities <= up.entities and cover.claims <= up.claims, (n, p)
        if r["children"] and r["method"] != EXTRACTIVE:
            parents += 1
            assert r["sub_reports"], n
    assert parents > 0
    # The parents read less than GraphRAG's raw rows would send them.
    tokens = lambda run: sum(r["context_tokens"] for r in run.reports.to_pylist() if r["children"])  # noqa: E731
    assert tokens(new) < tokens(old)


# ---- reports on demand ----------------------------------------------------------------------------
class _ModelLikeOffline(OfflineEngine):
    """The offline writer under a model's identity: reports_by_settings takes the model's path (its
    budgets, parents from children, PIPELINE_REPORTS) and nothing is sent."""

    def identity(self, task, options=None):
        from pipeline.ops.reports.models import ReportIdentity

        return ReportIdentity("llm", "127.0.0.1/scripted", "scripted-v1")


def test_on_demand_writes_the_top_levels_model_reports_and_eager_fills_in_the_rest():
    t = two_group_graph().tables()
    args = (t["communities"], t["entities"], t["relationships"], t["covariates"], _ModelLikeOffline())
    lazy = reports_by_settings(*args, Settings(reports="on_demand"), previous=None, min_entities=0)
    rows = {r["community"]: r for r in lazy.reports.to_pylist()}
    assert {n: r["method"] for n, r in rows.items()} == {0: "llm", 1: EXTRACTIVE, 2: EXTRACTIVE}
    assert lazy.per_level[1]["deferred"] == 2 and rows[0]["sub_reports"] == [1, 2]
    # `pipeline index --reports eager` later: the deferred reports and the parent reading them are
    # written, nothing else is asked again.
    eager = reports_by_settings(*args, Settings(reports="eager"), previous=lazy.reports, min_entities=0)
    assert _generated(eager) == {1: (2, 0), 0: (1, 0)}
    assert {r["method"] for r in eager.reports.to_pylist()} == {"llm"}
    again = reports_by_settings(*args, Settings(reports="eager"), previous=eager.reports, min_entities=0)
    assert (again.generated, again.reused) == (0, 3)


def test_a_graphrag_import_fingerprints_a_models_parents_as_the_reports_step_does():
    """An imported index re-indexed with a model reuses the imported reports: the import's fingerprints
    are the reports step's, parents from their children included."""
    from pipeline.index.report_options import report_budget
    from pipeline.interop.ms_graphrag_reports import community_fingerprints
    from pipeline.ops.reports.context import GraphData

    g = two_group_graph()
    t = g.tables()
    engine, settings = _ModelLikeOffline(), Settings()
    run = reports_by_settings(
        t["communities"], t["entities"], t["relationships"], t["covariates"], engine, settings,
        previous=None, min_entities=0,
    )  # fmt: skip
    budget = report_budget(settings, engine.identity(None))
    imported = community_fingerprints(
        {c["community"]: c for c in t["communities"].to_pylist()},
        GraphData(t["entities"], t["relationships"], t["covariates"], budget["encoding"]),
        {0, 1, 2},
        engine.identity(None),
        budget=budget["budget"],
        max_words=budget["max_words"],
        parent_budget=budget["parent_budget"],
    )
    assert imported == {r["community"]: r["fingerprint"] for r in run.reports.to_pylist()}
