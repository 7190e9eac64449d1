"""Global search's report selection on a synthetic three-level namespace (real Parquet, LanceDB and MiniLM
vectors): dynamic selection offline and through a scripted OpenAI-compatible server, level "auto", and
the bounds on calls per question."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from dataclasses import replace

import pyarrow as pa
import pytest

from pipeline import prompts
from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore
from pipeline.query.common.scope import QueryScope
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async, plan_batches
from tests.support.fault_proxy import FaultProxy, ProxyRequest
from tests.support.llm_engines import llama_engine
from tests.support.tiny_index import lance_vectors

THEMES = {
    "flood": [
        "The river flood of 2019 destroyed the old harbour warehouses.",
        "Flood water rose two metres in the harbour district and ruined the fish market.",
        "After the flood the council rebuilt the harbour wall higher.",
    ],
    "tram": [
        "A new tram line connects the university to the central station.",
        "Tram drivers went on strike over night shifts on the university line.",
        "The tram depot was built on the old railway yard.",
    ],
    "football": [
        "The football club's youth academy produced three national team players.",
        "The football stadium was renovated with a new roof over the north stand.",
        "The club's women's team won the national cup.",
    ],
    "solar": [
        "Solar panels on municipal buildings cut the city's electricity bills by a third.",
        "The school roofs carry the largest solar installation in the region.",
        "A solar farm on the landfill site powers four thousand homes.",
    ],
}
TOPIC = "What did the river flood destroy in the harbour?"
BROAD = "What are the main themes?"


def build_hierarchy(store: NamespaceStore, embedder) -> dict[str, set[int]]:  # noqa: ANN001
    """Per theme a root (level 0), three children (level 1) each with two leaves (level 2): 40
    communities; returns each theme's communities."""
    communities, subtree = [], {}
    ids = itertools.count()
    for theme, facts in THEMES.items():
        root = next(ids)
        members = {root}
        children = []
        for k, fact in enumerate(facts):
            child = next(ids)
            leaves = [next(ids), next(ids)]
            members |= {child, *leaves}
            children.append(child)
            for j, leaf in enumerate(leaves):
                text = f"{fact} Detail {j + 1}: witnesses recall it in the {theme} records."
                communities.append((leaf, 2, child, [], text, f"{theme.title()} detail {k}.{j}"))
            communities.append((child, 1, root, leaves, fact, f"{theme.title()} part {k}"))
        overview = f"The {theme} theme: " + " ".join(facts)
        communities.append((root, 0, -1, children, overview, f"{theme.title()} overview"))
        subtree[theme] = members
    rows = [
        {"community": c, "level": lv, "parent": p, "children": ch, "entity_ids": [], "text_unit_ids": []}
        for c, lv, p, ch, _, _ in communities
    ]
    store.write_table(schema.COMMUNITIES, pa.Table.from_pylist(rows, schema=schema.COMMUNITIES_SCHEMA))
    store.write_table(
        schema.COMMUNITY_REPORTS,
        pa.Table.from_pylist(
            [
                {
                    "community": c,
                    "level": lv,
                    "title": title,
                    "summary": text,
                    "full_content": f"# {title}\n\n{text}",
                    "rank": float(3 - lv),
                }
                for c, lv, _, _, text, title in communities
            ],
            schema=schema.COMMUNITY_REPORTS_SCHEMA,
        ),
    )
    table = lance_vectors(
        [{"community": c, "level": lv} for c, lv, *_ in communities],
        [f"{title}\n{text}" for *_, text, title in communities],
        embedder,
        schema.lance_community_reports_schema,
    )
    store.replace_lance_table(schema.LANCE_COMMUNITY_REPORTS, table)
    return subtree


@pytest.fixture(scope="module")
def city(tmp_path_factory, embedder):
    store = NamespaceStore(tmp_path_factory.mktemp("storage"), "city")
    return store, build_hierarchy(store, embedder)


DYNAMIC = GlobalSearchConfig(selection="dynamic")


def run(store, question, embedder, config=DYNAMIC, engine=None, cancel=None):  # noqa: ANN001
    scope = QueryScope(store, engine or OfflineEngine(), embedder, cancel=cancel)
    return asyncio.run(global_search_async(scope, question, config))


def mapped(result) -> set[int]:  # noqa: ANN001
    return {c for p in result.points for c in p["community_ids"]} | set(result.cited_communities)


def test_a_topic_question_maps_only_its_topics_reports(city, embedder):
    store, subtree = city
    result = run(store, TOPIC, embedder)
    sel = result.selection
    assert result.status == "completed" and sel["mode"] == "dynamic" and sel["fallback"] is None
    assert 0 < sel["kept"] == sel["mapped_reports"] and sel["rated"] < 40
    assert mapped(result) and mapped(result) <= subtree["flood"]
    assert "harbour" in result.answer.lower()
    assert result.usage["rate_calls"] == sel["rate_calls"] >= 1


def test_a_broad_question_maps_every_theme_and_a_topic_question_one(city, embedder):
    store, subtree = city
    small = GlobalSearchConfig(selection="dynamic", map_budget=520, map_reserve=16)
    broad, topic = run(store, BROAD, embedder, small), run(store, TOPIC, embedder, small)
    assert broad.selection["fallback"] and "broad" in broad.selection["fallback"]
    roots = {r["community"] for r in store.read_table(schema.COMMUNITIES).to_pylist() if r["level"] == 0}
    assert mapped(broad) <= roots and broad.selection["mapped_reports"] == len(roots)
    assert {next(t for t, m in subtree.items() if c in m) for c in mapped(broad)} == set(THEMES)
    assert topic.selection["fallback"] is None and mapped(topic) <= subtree["flood"]


def test_rating_and_mapping_are_bounded_by_the_settings(city, embedder):
    store, _ = city
    config = GlobalSearchConfig(
        selection="dynamic",
        max_rated=10,
        rate_batch_size=4,
        rate_threshold=0.0,
        map_budget=520,
        map_reserve=16,
        max_map_batches=1,
    )
    result = run(store, TOPIC, embedder, config)
    sel = result.selection
    assert sel["rated"] == 10 and sel["rate_calls"] == 3  # 4 + 4 + 2
    assert (
        result.batches == 1 and sel["dropped"] > 0 and sel["mapped_reports"] + sel["dropped"] == sel["kept"]
    )


def test_auto_is_dynamic_only_above_the_community_threshold(city, embedder):
    store, _ = city
    assert (
        run(store, TOPIC, embedder, GlobalSearchConfig(dynamic_min_communities=39)).selection["mode"]
        == "dynamic"
    )
    static = run(store, TOPIC, embedder, GlobalSearchConfig(dynamic_min_communities=40))
    assert static.selection["mode"] == "static" and static.usage["rate_calls"] == 0


def test_level_auto_takes_the_deepest_level_that_fits_the_map_calls(city, embedder):
    store, _ = city
    roomy = run(store, TOPIC, embedder, GlobalSearchConfig(selection="static", level="auto"))
    assert roomy.selection["mode"] == "level-auto" and roomy.selection["level"] == 2
    tight = GlobalSearchConfig(
        selection="static", level="auto", map_budget=520, map_reserve=16, max_map_batches=3
    )
    result = run(store, TOPIC, embedder, tight)
    # the same count, level by level, with the level fixed
    fits = [lvl for lvl in (0, 1, 2) if len(plan_batches(store, TOPIC, replace(tight, level=lvl))) <= 3]
    assert fits and max(fits) < 2  # the tight budget rules the deepest level out, not every level
    assert result.selection["level"] == max(fits) and result.selection["dropped"] == 0
    assert result.batches == len(plan_batches(store, TOPIC, replace(tight, level=max(fits))))


# ---- through the scripted OpenAI-compatible server ----------------------------------------------------
def task_of(body: dict) -> str:
    system = body["messages"][0]["content"]
    if system.startswith(prompts.GLOBAL_RATE.system):
        return "rate"
    return "reduce" if system.startswith(prompts.GLOBAL_REDUCE.system) else "map"


class ScriptedModel:
    """Rates the flood theme's reports 8 and the rest 1; maps each batch to one point citing its first
    report; reduces to a sentence citing the points' communities."""

    def __init__(self, subtree: set[int]) -> None:
        self.flood = subtree
        self.requests: dict[str, list[dict]] = {"rate": [], "map": [], "reduce": []}
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        task, user = task_of(body), body["messages"][-1]["content"]
        with self.lock:
            self.requests[task].append(body)
        if task == "rate":
            ids = [int(i) for i in re.findall(r"^(\d+): ", user, re.MULTILINE)]
            return json.dumps(
                {"ratings": [{"community": i, "score": 8 if i in self.flood else 1} for i in ids]}
            )
        if task == "map":
            first = int(re.search(r"\[Community ID: (\d+)", user).group(1))
            return json.dumps(
                {
                    "points": [
                        {"description": "The flood hit the harbour.", "score": 70, "communities": [first]}
                    ]
                }
            )
        cited = sorted(set(re.findall(r"Community IDs: ([\d, ]+)", user)))
        return f"The flood hit the harbour [Communities: {cited[0] if cited else ''}]."


def is_rating(request: ProxyRequest) -> bool:
    return isinstance(request.body, dict) and task_of(request.body) == "rate"


def test_scripted_model_calls_per_question_are_bounded_and_counted_per_phase(city, embedder, tmp_path):
    store, subtree = city
    model = ScriptedModel(subtree["flood"])
    config = GlobalSearchConfig(selection="dynamic", rate_batch_size=4)
    with FaultProxy(None, responder=model) as proxy:
        result = run(store, TOPIC, embedder, config, llama_engine(proxy.base_url, tmp_path))
    sent = {t: len(r) for t, r in model.requests.items()}
    assert result.status == "completed"
    assert {p: v["calls"] for p, v in result.phases.items()} == sent
    assert (
        sent["rate"] <= -(-config.max_rated // config.rate_batch_size)
        and sent["map"] <= config.max_map_batches
    )
    assert result.usage["rate_calls"] == sent["rate"] and result.usage["map_calls"] == sent["map"]
    assert all(v["prompt_tokens"] > 0 for v in result.phases.values())
    assert mapped(result) <= subtree["flood"]  # the model's ratings chose the flood theme


def test_scripted_model_a_failed_rating_call_keeps_its_reports(city, embedder, tmp_path):
    store, subtree = city
    model = ScriptedModel(subtree["flood"])
    first_rating = itertools.count(1)
    config = GlobalSearchConfig(selection="dynamic", rate_batch_size=4)
    with FaultProxy(None, responder=model) as proxy:
        proxy.fault_when(lambda r: is_rating(r) and next(first_rating) == 1, "500")
        result = run(store, TOPIC, embedder, config, llama_engine(proxy.base_url, tmp_path))
    sel = result.selection
    assert result.status == "completed" and sel["failed_ratings"] == 4
    # The four roots of the failed call (the whole first batch: every root) are mapped, not lost.
    roots = {r["community"] for r in store.read_table(schema.COMMUNITIES).to_pylist() if r["level"] == 0}
    mapped_ids = {
        c
        for body in model.requests["map"]
        for c in map(int, re.findall(r"\[Community ID: (\d+)", body["messages"][-1]["content"]))
    }
    assert roots <= mapped_ids


def test_scripted_model_cancelled_while_rating_maps_nothing(city, embedder, tmp_path):
    store, subtree = city
    model = ScriptedModel(subtree["flood"])
    cancel = threading.Event()
    out: dict = {}
    with FaultProxy(None, responder=model) as proxy:
        held = proxy.hold(is_rating, from_nth=1)
        engine = llama_engine(proxy.base_url, tmp_path)
        worker = threading.Thread(
            target=lambda: out.setdefault("r", run(store, TOPIC, embedder, DYNAMIC, engine, cancel))
        )
        worker.start()
        held.wait_held(1)
        cancel.set()  # the client closes the held call's connection itself
        worker.join()
        held.release()
    assert out["r"].status == "cancelled" and model.requests["map"] == [] and model.requests["reduce"] == []


@pytest.mark.parametrize(
    ("question", "broad"),
    [
        ("What are the main topics covered by these passages?", True),
        ("What are the main themes of the story?", True),
        ("Summarize the key ideas of the documents.", True),
        ("Which sports are covered?", False),
        ("What are the main themes of Hamlet?", False),
    ],
)
def test_a_broad_question_names_only_the_collection(question, broad):
    from pipeline.query.retrieval.intent import is_broad

    assert is_broad(question) is broad


def test_a_topic_question_no_report_is_relevant_to_is_no_results_with_the_reason(city, embedder):
    store, _ = city
    result = run(store, "What is the boiling point of liquid nitrogen in kelvin?", embedder)
    assert result.status == "no_results" and result.batches == 0
    assert "rated relevant" in result.reason and result.usage["map_calls"] == 0
