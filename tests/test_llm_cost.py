"""Cost known before it is spent: `pipeline index --estimate`, the run's LLM budget, the Dagster pool.

Every LLM request goes through the real `openai` client to a scripted server on 127.0.0.1
(`tests/support/cost_model.py`) that reports the usage a real server would, so the run's own metadata
and the requests counted at the server agree. The model answers like one whose graph is what the
offline rules find in the text: the graph the estimate puts in its place before any call is made.

- An estimate made before anything is cached is within 15% of the requests and prompt tokens the run
  then sends; made again after the run, it has nothing left to pay; the estimate itself sends nothing.
- With a tiny PIPELINE_LLM_BUDGET_USD, a Dagster run stops sending as soon as its spend reaches the
  budget: the run succeeds, the units not done are failure rows that say "budget", later steps send
  nothing (the spend of earlier steps is carried through the run's materializations) and the metadata
  says the budget was reached. The next run, with a larger budget, sends only what was never answered.
- The client refuses to send past the budget but still answers from the cache.
- The LLM-bound assets carry the `llm` pool and the instance configs limit it.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from assets.cli import main as cli_main
from assets.launch import run_index
from pipeline.core import schema
from pipeline.engine.summarize import Summary
from pipeline.index import community_reports
from pipeline.index.context import IndexContext
from pipeline.index.estimate import estimate_index
from pipeline.io.store import NamespaceStore
from pipeline.llm.dry_run import synthetic_value
from pipeline.llm.errors import LLMBudgetExceededError
from pipeline.llm.structured import json_schema
from pipeline.ops.extraction.models import ExtractionOut
from pipeline.ops.reports.models import CommunityReportResponse
from pipeline.query.global_.tasks import MapAnswer, ReduceAnswer
from pipeline.query.retrieval.community_select import CommunitySelection
from pipeline.query.retrieval.intent import QueryIntent
from pipeline.runtime import make_llm_client
from pipeline.settings import Settings
from tests.conftest import REPO_ROOT
from tests.support.cost_model import ModelLikeModel, UsageProxy
from tests.support.env import scoped_env
from tests.support.graph_stages import run_graph_stages

BOOK = REPO_ROOT / "samples" / "demo" / "a_christmas_carol.txt"
MODEL = "gpt-4o-mini"  # priced in pipeline.llm.usage: the budget has something to count
TOLERANCE = 0.15


def _corpus(folder: Path, start: int, end: int) -> Path:
    """A stretch of the sample book (the opening is the Gutenberg licence, not the story)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "carol.txt").write_text(BOOK.read_text(encoding="utf-8")[start:end], encoding="utf-8")
    return folder


def _env(storage: Path, base_url: str, **more: str) -> dict[str, str]:
    return {
        "PIPELINE_STORAGE_ROOT": str(storage),
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": base_url,
        "PIPELINE_LLM_MODEL": MODEL,
        "PIPELINE_LLM_JSON_MODE": "json_object",
        "PIPELINE_LLM_MAX_RETRIES": "0",
        "PIPELINE_LLM_TIMEOUT_S": "600",
        "PIPELINE_EXTRACTION_PACK_TOKENS": "0",
        "PIPELINE_REPORT_MIN_ENTITIES": "0",  # one unit per request (packing: bench_index_methods)
        **more,
    }


def _index_llm_stages(namespace: str, settings: Settings, folder: Path) -> IndexContext:
    """The stages that call the model, and those they need, in the order of a run (no embeddings)."""
    ctx = run_graph_stages(IndexContext.build(namespace, settings), folder)
    community_reports.run(ctx)
    return ctx


# ---- the estimate against the run ------------------------------------------------------------------
@pytest.fixture(scope="module")
def estimated_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("estimate")
    folder = _corpus(tmp / "input", 20_000, 60_000)
    with UsageProxy(ModelLikeModel()) as proxy, scoped_env(**_env(tmp / "storage", proxy.base_url)):
        out: dict = {"proxy": proxy}
        settings = Settings()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = cli_main(["index", "--namespace", "carol", "--input", str(folder), "--estimate", "--json"])
        out["cli_code"], out["cli_json"] = code, json.loads(printed.getvalue())
        out["sent_by_estimate"] = len(proxy.sent())
        out["before"] = estimate_index("carol", settings, folder)
        ctx = _index_llm_stages("carol", settings, folder)
        out["run_usage"] = ctx.engine.usage.counters()
        out["sent"] = proxy.sent()
        out["after"] = estimate_index("carol", settings, folder)
        out["sent_after_reestimate"] = len(proxy.sent())
        out["units"] = ctx.store.read_table(schema.TEXT_UNITS).num_rows
        yield out


def test_estimate_sends_nothing_and_the_cli_prints_it_as_json(estimated_run):
    assert estimated_run["cli_code"] == 0
    assert estimated_run["sent_by_estimate"] == 0
    before = estimated_run["before"].to_dict()
    printed = dict(estimated_run["cli_json"])
    methods = printed.pop("methods")  # the three methods side by side, the configured one's in full
    modes = printed.pop("report_modes")  # and each under both report modes (issue 62)
    assert printed.pop("report_mode") == "eager"
    assert printed == before
    assert set(modes) == {"eager", "on_demand"} and modes["eager"] == methods
    assert modes["on_demand"]["nlp"]["calls"] == 0
    for m in ("standard", "fast"):  # on demand: the top level's model reports only
        assert modes["on_demand"][m]["calls"] < modes["eager"][m]["calls"]
    assert set(methods) == {"standard", "fast", "nlp"}
    assert methods["standard"]["calls"] == before["total"]["calls"]  # the provider's default: standard
    assert methods["nlp"]["calls"] == 0
    assert 0 < methods["fast"]["calls"] < methods["standard"]["calls"]
    assert set(before["stages"]) == {"extraction", "descriptions", "reports"}
    assert before["total"]["calls"] > 0 and before["total"]["cost_usd"] > 0
    assert before["stages"]["extraction"]["basis"] == "estimated"  # nothing cached: gleaning prompts guessed


def test_estimate_is_within_15_percent_of_the_requests_and_prompt_tokens_the_run_sends(estimated_run):
    total = estimated_run["before"].total()
    sent = estimated_run["sent"]
    sent_prompt = sum(p for _, _, p, _ in sent)
    print(estimated_run["before"].render())
    print(f"run: {len(sent)} requests, {sent_prompt} prompt tokens; usage {estimated_run['run_usage']}")
    assert abs(total.calls - len(sent)) <= TOLERANCE * len(sent)
    assert abs(total.prompt_tokens - sent_prompt) <= TOLERANCE * sent_prompt
    # what the run itself recorded is what reached the server
    usage = estimated_run["run_usage"]
    assert usage["requests"] == len(sent) and usage["prompt_tokens"] == sent_prompt
    # extraction is counted call by call: a first round and one gleaning round per text unit
    extraction = estimated_run["before"].stages[0]
    assert extraction.tally.by_task == {
        "extract_graph": estimated_run["units"],
        "extract_graph_glean": estimated_run["units"],
    }
    assert sum(1 for task, *_ in sent if task.startswith("extract_graph")) == 2 * estimated_run["units"]


def test_a_reestimate_after_the_run_has_nothing_left_to_pay(estimated_run):
    after = estimated_run["after"]
    assert estimated_run["sent_after_reestimate"] == len(estimated_run["sent"])  # it sent nothing
    assert after.total().calls == 0 and after.cost(after.total()) == (0.0, 0.0)
    assert after.total().cached >= 2 * estimated_run["units"]
    assert [s.basis for s in after.stages] == ["exact", "exact", "exact"]  # the graph is known now


def test_synthetic_replies_validate_against_every_task_model():
    counter = itertools.count(1)
    for model in (
        ExtractionOut,
        Summary,
        CommunityReportResponse,
        MapAnswer,
        ReduceAnswer,
        QueryIntent,
        CommunitySelection,
    ):
        value = synthetic_value(json_schema(model), 300, lambda: next(counter), "o200k_base")
        model.model_validate(value)


# ---- the budget in the client ----------------------------------------------------------------------
def test_the_client_refuses_to_send_past_the_budget_but_answers_from_the_cache(tmp_path: Path):
    with UsageProxy(ModelLikeModel()) as proxy, scoped_env(**_env(tmp_path, proxy.base_url)):
        settings = Settings(llm_budget_usd=0.01)
        messages = [{"role": "user", "content": "Merge: a; b."}]

        def ask(client, text: str) -> Summary:
            msgs = [
                {"role": "system", "content": "You merge descriptions."},
                {**messages[0], "content": text},
            ]
            return client.run_sync(
                client.complete_json(msgs, Summary, task="summarize_descriptions", prompt_version="t-v1")
            )

        ask(make_llm_client(settings), "Merge: a; b.")  # paid and cached
        assert len(proxy.sent()) == 1
        spent = make_llm_client(settings, spent_usd=0.01)  # the run's earlier steps spent the budget
        assert ask(spent, "Merge: a; b.").summary  # the cached answer is free
        with pytest.raises(LLMBudgetExceededError) as refused:
            ask(spent, "Merge: c; d.")
        assert len(proxy.sent()) == 1  # nothing was sent
        assert str(refused.value).startswith("budget")
        assert spent.usage.budget_refusals == 1 and spent.usage.as_metadata()["llm_budget_reached"]


# ---- the budget stop in a Dagster run, and the resume ----------------------------------------------
@pytest.fixture(scope="module")
def budget_runs(tmp_path_factory: pytest.TempPathFactory, dagster_instance) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("budget")
    folder = _corpus(tmp / "input", 20_000, 45_000)
    storage = tmp / "storage"
    out: dict = {"store": NamespaceStore(storage, "tight")}
    with UsageProxy(ModelLikeModel()) as proxy:
        # one request at a time: the budget is met after a fixed number of calls
        env = _env(storage, proxy.base_url, PIPELINE_LLM_CONCURRENCY="1")
        with scoped_env(**env, PIPELINE_LLM_BUDGET_USD="0.004"):
            out["first"] = run_index("tight", input_dir=str(folder), instance=dagster_instance)
        out["sent_first"] = proxy.sent()
        out["failed_first"] = out["store"].read_table(schema.FAILED_EXTRACTIONS).to_pylist()
        with scoped_env(**env, PIPELINE_LLM_BUDGET_USD="100"):
            out["estimate_between"] = estimate_index("tight", Settings(), folder)
            out["second"] = run_index("tight", input_dir=str(folder), instance=dagster_instance)
            out["sent_second"] = proxy.sent()[len(out["sent_first"]) :]
            out["estimate_after"] = estimate_index("tight", Settings(), folder)
        out["units"] = out["store"].read_table(schema.TEXT_UNITS).num_rows
        out["pools"] = {p.name: p.limit for p in dagster_instance.event_log_storage.get_pool_limits()}
    yield out


def _meta(result, asset: str) -> dict:
    return next(s.metadata for s in result.steps if s.asset == asset)


def test_a_tiny_budget_stops_the_run_cleanly_and_says_so(budget_runs):
    first = budget_runs["first"]
    assert first.success, first.failures
    extraction = _meta(first, "extracted_graph")
    assert extraction["llm_budget_reached"] is True and extraction["llm_budget_refusals"] > 0
    assert extraction["llm_cost_usd"] >= 0.004
    # every request of the run went out before the budget was met, all during extraction, and the
    # last one was the first to meet it (one request at a time: no call was in flight meanwhile)
    sent = budget_runs["sent_first"]
    assert 0 < len(sent) == extraction["llm_calls"] < 2 * budget_runs["units"]
    costs = [(p * 0.15 + c * 0.60) / 1e6 for *_, p, c in sent]  # gpt-4o-mini's list prices
    assert sum(costs[:-1]) < 0.004 <= sum(costs) == pytest.approx(extraction["llm_cost_usd"], abs=1e-6)
    assert {task for task, *_ in sent} <= {"extract_graph", "extract_graph_glean"}
    # the units not done are failure rows that say why
    budget_rows = [f for f in budget_runs["failed_first"] if f["error_type"] == "LLMBudgetExceededError"]
    assert budget_rows and all(f["reason"].startswith("budget") for f in budget_rows)
    # later steps start from the run's spend: they refuse without sending
    reports = _meta(first, "community_reports")
    assert reports["llm_calls"] == 0 and reports["llm_budget_reached"] is True and reports["failed"] > 0
    assert _meta(first, "entities")["llm_calls"] == 0


def test_the_next_run_pays_only_for_what_was_not_answered_before(budget_runs):
    second = budget_runs["second"]
    assert second.success, second.failures
    assert not any(_meta(second, a)["llm_budget_reached"] for a in ("extracted_graph", "community_reports"))
    first_bodies = {digest for _, digest, *_ in budget_runs["sent_first"]}
    second_bodies = {digest for _, digest, *_ in budget_runs["sent_second"]}
    assert not first_bodies & second_bodies  # no request was paid for twice
    extraction_requests = [
        t for t, *_ in budget_runs["sent_first"] + budget_runs["sent_second"] if t.startswith("extract")
    ]
    assert len(extraction_requests) == 2 * budget_runs["units"]  # each unit's two calls, once
    assert budget_runs["store"].read_table(schema.FAILED_EXTRACTIONS).num_rows == 0
    # the estimate between the runs counted the first run's answers as free ...
    between = budget_runs["estimate_between"].stages[0].tally
    assert between.cached == len(budget_runs["sent_first"])
    assert between.calls == 2 * budget_runs["units"] - len(budget_runs["sent_first"])
    # ... and after the second, nothing is left to pay
    assert budget_runs["estimate_after"].total().calls == 0


def test_in_process_runs_take_slots_of_the_llm_pool(budget_runs):
    assert budget_runs["pools"].get("llm") == 2


# ---- the pool --------------------------------------------------------------------------------------
LLM_ASSETS = {
    "extracted_graph",
    "extracted_graph_shard",
    "entities",
    "relationships",
    "community_reports",
    "global_map_batches",  # dynamic selection rates reports with the model
    "global_map_answers",
    "global_answers",
    "local_answers",
    "drift_answers",
    "basic_answers",
    "lazy_answers",
    "auto_answers",
    "eval_report",
}


def test_the_assets_that_call_the_model_run_in_the_llm_pool():
    from assets.definitions import defs

    graph = defs.resolve_asset_graph()
    pools = {key.to_user_string(): graph.get(key).pools for key in graph.get_all_asset_keys()}
    assert {name for name, p in pools.items() if p} == LLM_ASSETS
    assert all(pools[name] == {"llm"} for name in LLM_ASSETS)


def test_the_instance_configs_limit_the_llm_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from dagster import DagsterInstance
    from dagster._core.instance.config import dagster_instance_config

    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with DagsterInstance.get() as instance:
        config = instance.get_concurrency_config()
        assert config.pool_config.default_pool_limit == 2
        assert config.pool_config.pool_granularity.value == "op"
        assert config.run_queue_config.max_concurrent_runs == 2

    cluster = tmp_path / "cluster"
    cluster.mkdir()
    shutil.copyfile(REPO_ROOT / "deploy" / "dagster.cluster.yaml", cluster / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql+psycopg2://user:pass@127.0.0.1:1/db")
    monkeypatch.setenv("DAGSTER_COMPUTE_LOGS_BUCKET", "logs")
    monkeypatch.setenv("DAGSTER_COMPUTE_LOGS_ENDPOINT_URL", "http://127.0.0.1:1")
    loaded, _ = dagster_instance_config(str(cluster))  # validated, not connected
    assert loaded["concurrency"]["pools"] == {"default_limit": 4, "granularity": "run"}
