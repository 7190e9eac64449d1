"""Community reports cite their context rows (`[Data: Entities (3, 7); Relationships (12)]`): every id a
report cites exists in that community's context, offline (hand-built graph and A Christmas Carol) and
through the LLM path against a scripted OpenAI-compatible server whose reply cites ids that do not
exist (they are stripped and counted). Real Parquet-schema tables; the scripted model is the fault
proxy's responder."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.ops.reports.build import ReportsRun, build_reports
from pipeline.ops.reports.citations import check_citations, cited_ids, context_ids, format_citation
from pipeline.ops.reports.models import CommunityReportResponse, ReportContext
from pipeline.ops.reports.task import REPORT
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_tables import Graph, two_group_graph


class RecordingOfflineEngine(OfflineEngine):
    """The offline engine, keeping each community's context so that a test can check the citations."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts: dict[int, ReportContext] = {}

    async def run(self, task, request, **kw):  # noqa: ANN001, ANN003, ANN201
        if task is REPORT:
            self.contexts[request.context.community] = request.context
        return await super().run(task, request, **kw)


def _build(g: Graph | dict[str, pa.Table], engine, budget: int = 8000, previous=None) -> ReportsRun:  # noqa: ANN001
    t = g.tables() if isinstance(g, Graph) else g
    return build_reports(
        t["communities"], t["entities"], t["relationships"], t["covariates"], engine,
        budget=budget, previous=previous,
    )  # fmt: skip


def assert_citations_resolve(run: ReportsRun, contexts: dict[int, ReportContext], tables: dict) -> int:
    """Every id cited in each report names a row of its context, and `data_refs` names the same rows,
    which belong to the community (its members, its relationships, the claims about its members, its
    children). Returns the number of citations checked."""
    communities = {c["community"]: c for c in tables["communities"].to_pylist()}
    claims_of = {}
    if tables.get("covariates") is not None:
        for c in tables["covariates"].to_pylist():
            claims_of[c["id"]] = c["subject_entity_id"]
    checked = 0
    for row in run.reports.to_pylist():
        n = row["community"]
        ids = context_ids(contexts[n])
        cited = cited_ids(row["full_content"])
        for table, numbers in cited.items():
            assert set(numbers) <= set(ids[table]), (n, table, numbers, sorted(ids[table]))
            checked += len(numbers)
        refs = json.loads(row["data_refs"])
        assert {t: sorted(int(i) for i in r) for t, r in refs.items()} == {
            t: sorted(v) for t, v in cited.items()
        }
        for table, resolved in refs.items():
            assert all(ids[table][int(i)] == target for i, target in resolved.items())
        community = communities[n]
        assert set(refs.get("Entities", {}).values()) <= set(community["entity_ids"])
        assert set(refs.get("Relationships", {}).values()) <= set(community["relationship_ids"])
        assert {claims_of[c] for c in refs.get("Claims", {}).values()} <= set(community["entity_ids"])
        assert set(refs.get("Reports", {}).values()) <= set(community["children"] or [])
    return checked


# ---- offline --------------------------------------------------------------------------------------
@pytest.mark.parametrize("budget", [8000, 806], ids=["raw-rows", "from-sub-reports"])
def test_offline_report_findings_cite_rows_of_their_own_context(budget):
    g = two_group_graph()
    engine = RecordingOfflineEngine()
    run = _build(g, engine, budget=budget)
    assert run.failures == [] and run.citations_stripped == 0
    assert (run.substituted > 0) == (budget < 8000)
    assert assert_citations_resolve(run, engine.contexts, g.tables()) > 0
    for row in run.reports.to_pylist():
        assert all("[Data: " in f["explanation"] for f in row["findings"])  # every finding cites
        assert "[Data: " in row["summary"]
    if budget < 8000:
        parent = next(r for r in run.reports.to_pylist() if r["community"] == 0)
        assert "Reports" in json.loads(parent["data_refs"])  # a finding taken from a sub-report cites it


def test_offline_relationship_finding_cites_the_relationship_and_its_two_ends():
    g = two_group_graph()
    engine = RecordingOfflineEngine()
    run = _build(g, engine)
    row = next(r for r in run.reports.to_pylist() if r["community"] == 2)  # Elm and Fir
    ids = context_ids(engine.contexts[2])
    local = {v: k for k, v in ids["Entities"].items()}
    finding = next(f for f in row["findings"] if f["summary"] == "Elm and Fir")
    expected = format_citation(
        {"Entities": [local["e-Elm"], local["e-Fir"]], "Relationships": [1]}  # its only relationship
    )
    assert finding["explanation"].endswith(expected)


def test_a_sub_reports_own_citations_do_not_leak_into_its_parent():
    g = two_group_graph()
    engine = RecordingOfflineEngine()
    run = _build(g, engine, budget=806)
    parent_context = engine.contexts[0]
    assert parent_context.sub_reports  # the children's reports stand in for their rows
    report_rows = parent_context.text.split("-----Sub-community reports-----")[1].split("-----")[0]
    assert "[Data:" not in report_rows  # their citations name rows of the children's contexts
    assert "1|" in report_rows  # the sub-report rows carry their own short ids
    assert run.reports.num_rows == 3


def test_reused_reports_keep_their_citations_and_follow_renumbered_children():
    g = two_group_graph()
    first = _build(g, RecordingOfflineEngine(), budget=806)
    renumbered = two_group_graph()
    for c in renumbered.communities:  # same members, numbers shifted by 10
        c["community"] = c["human_readable_id"] = c["community"] + 10
        c["parent"] = c["parent"] + 10 if c["parent"] >= 0 else -1
        c["children"] = [k + 10 for k in c["children"]]
    second = _build(renumbered, RecordingOfflineEngine(), budget=806, previous=first.reports)
    assert second.reused == 3 and second.generated == 0
    before = {r["community"]: r for r in first.reports.to_pylist()}
    after = {r["community"]: r for r in second.reports.to_pylist()}
    assert after[10]["full_content"] == before[0]["full_content"]
    old_refs, new_refs = json.loads(before[0]["data_refs"]), json.loads(after[10]["data_refs"])
    assert {i: c + 10 for i, c in old_refs["Reports"].items()} == new_refs["Reports"]
    assert {k: v for k, v in new_refs.items() if k != "Reports"} == {
        k: v for k, v in old_refs.items() if k != "Reports"
    }


def test_offline_reports_on_christmas_carol_cite_only_rows_of_their_context(carol_tables):
    engine = RecordingOfflineEngine()
    run = _build(carol_tables, engine)
    assert run.failures == [] and run.citations_stripped == 0 and run.substituted >= 1
    assert assert_citations_resolve(run, engine.contexts, carol_tables) > run.reports.num_rows


@pytest.fixture(scope="module")
def carol_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pa.Table]:
    from tests.conftest import shared_data
    from tests.support.graph_stages import offline_graph

    store = offline_graph(
        tmp_path_factory.mktemp("carol_citations"), "carol", shared_data("christmas_carol")
    ).store
    return {
        "communities": store.read_table(schema.COMMUNITIES),
        "entities": store.read_table(schema.ENTITIES),
        "relationships": store.read_table(schema.RELATIONSHIPS),
        "covariates": store.read_table(schema.COVARIATES),
    }


# ---- the citation checker -------------------------------------------------------------------------
def test_check_citations_keeps_valid_ids_and_strips_and_counts_the_rest():
    g = two_group_graph()
    engine = RecordingOfflineEngine()
    _build(g, engine)
    context = engine.contexts[2]  # Elm, Fir: 2 entities, 1 relationship, 1 claim
    report = CommunityReportResponse(
        title="Elm and Fir",
        summary="They share a grove [Data: Entities (1, 2, 3); Relationships (1, +more)].",
        findings=[
            {"summary": "Records", "explanation": "Elm keeps records [Data: Claims (1); Entity (2)]."},
            {
                "summary": "Invented",
                "explanation": "A made-up fact [Data: Claims (4); Sources (1); Reports (1)].",
            },
            {"summary": "Odd ids", "explanation": "Odd [Data: Entities (one, 2)] and [data: lower case]."},
        ],
        rating=3.0,
        rating_explanation="Small [Data: Relationships (2)].",
    )
    check = check_citations(report, context)
    r = check.report
    assert r.summary == "They share a grove [Data: Entities (1, 2); Relationships (1, +more)]."
    assert r.findings[0].explanation == "Elm keeps records [Data: Claims (1); Entities (2)]."
    assert r.findings[1].explanation == "A made-up fact."
    assert r.findings[2].explanation == "Odd [Data: Entities (2)] and [data: lower case]."
    assert r.rating_explanation == "Small."
    # 3 (Entities), 4 (Claims), Sources (1), Reports (1): no sub-reports here, "one", Relationships (2)
    assert check.stripped == 6
    assert check.cited == {"Entities": [1, 2], "Relationships": [1], "Claims": [1]}


# ---- LLM path, scripted server --------------------------------------------------------------------
def _curies() -> Graph:
    g = Graph()
    g.entity("Marie Curie", "Marie Curie was a physicist who discovered radium.", degree=2)
    g.entity("Pierre Curie", "Pierre Curie was a physicist and Marie Curie's husband.", degree=1)
    g.entity("Paris", "Paris is the city where the Curies worked.", degree=1, type="geo")
    g.edge("Marie Curie", "Pierre Curie", "Marie Curie and Pierre Curie worked together.", weight=8)
    g.edge("Marie Curie", "Paris", "Marie Curie worked in Paris.", weight=5)
    g.claim("Marie Curie", "Marie Curie won the Nobel Prize in 1903.")
    g.community(0, 0, ["Marie Curie", "Pierre Curie", "Paris"])
    return g


SCRIPTED_REPORT = {
    "title": "The Curies in Paris",
    "summary": "Marie and Pierre Curie worked together in Paris [Data: Entities (1, 2, 3); Relationships (1, 2)].",
    "findings": [
        {
            "summary": "Partners in research",
            "explanation": "Marie Curie worked with her husband [Data: Entities (1, 2, 7); Relationships (1, +more)].",
        },
        {"summary": "A prize", "explanation": "Marie Curie won the Nobel Prize [Data: Claims (1)]."},
        {"summary": "Invented", "explanation": "The Curies owned a bakery [Data: Claims (9); Sources (4)]."},
    ],
    "rating": 6.5,
    "rating_explanation": "A small but notable community.",
}


def test_scripted_llm_report_citing_a_nonexistent_id_is_kept_with_that_citation_stripped(tmp_path: Path):
    prompts_seen: list[str] = []

    def responder(request: dict) -> str:
        prompts_seen.append(request["messages"][-1]["content"])
        return json.dumps(SCRIPTED_REPORT)

    g = _curies()
    with FaultProxy(None, responder=responder) as proxy:
        settings = Settings(
            storage_root=tmp_path / "storage",
            llm_provider="openai",
            llm_base_url=proxy.base_url,
            llm_model="scripted",
            llm_concurrency=1,
            llm_json_mode="json_object",
            llm_max_retries=0,
        )
        run = _build(g, make_engine(settings), budget=settings.report_max_input_tokens)
    assert run.failures == []
    [prompt] = prompts_seen
    # The context rows carry their short ids, in the order the checker resolves them.
    assert "id|entity|type|description|degree\n1|Marie Curie|person|" in prompt
    assert "id|source|target|description|weight|combined_degree\n1|Marie Curie|Pierre Curie|" in prompt
    assert "-----Claims-----" in prompt and "\n1|Marie Curie||STATEMENT|TRUE|" in prompt
    [row] = run.reports.to_pylist()
    # 7 (no such entity), 9 (no such claim) and Sources (no such table) were stripped and counted.
    assert run.citations_stripped == 3 and run.per_level[0]["citations_stripped"] == 3
    findings = {f["summary"]: f["explanation"] for f in row["findings"]}
    assert findings["Partners in research"] == (
        "Marie Curie worked with her husband [Data: Entities (1, 2); Relationships (1, +more)]."
    )
    assert findings["Invented"] == "The Curies owned a bakery."
    assert findings["A prize"] == "Marie Curie won the Nobel Prize [Data: Claims (1)]."
    stored = CommunityReportResponse.model_validate_json(row["full_content_json"])
    assert stored.findings[0].explanation == findings["Partners in research"]
    assert "7" not in json.dumps(cited_ids(row["full_content"]))
    refs = json.loads(row["data_refs"])
    assert refs == {
        "Entities": {"1": "e-Marie Curie", "2": "e-Paris", "3": "e-Pierre Curie"},  # by degree, then name
        "Relationships": {"1": "r-Marie Curie-Pierre Curie", "2": "r-Marie Curie-Paris"},
        "Claims": {"1": "c-0"},
    }
    assert row["method"] == "llm" and "community_report-v2" in row["model"]
