"""Global search per question on the sample book and on the MuSiQue-100 index: latency, batches and the
reports rated / kept / mapped, offline; and the calls per phase through the scripted OpenAI-compatible
server (the fault proxy answering itself), checked against the settings' bound; prints JSON.

    .venv/bin/python bench/bench_global_selection.py [--musique-storage DIR] [--book-storage DIR]

Without a storage folder each corpus is indexed offline first (MuSiQue through the Dagster job, as
`make eval` does; a few minutes). Questions: one broad ("What are the main topics covered by these
passages?" / "What are the main themes of the story?") and topic questions (the first five of MuSiQue's
questions; one about Fezziwig for the book). Offline latency is given cold (a fresh embedding cache: the
question's sentences are embedded) and warm (asked again: the cache answers), with the model loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.eval_retrieval import DEFAULT_DATASET, corpus_records, find_files  # noqa: E402
from pipeline import prompts  # noqa: E402

BOOK_QUESTIONS = {
    "broad": "What are the main themes of the story?",
    "topic": "What happens at Fezziwig's party?",
}
MUSIQUE_BROAD = "What are the main topics covered by these passages?"


def index_musique(work: Path) -> Path:
    from assets.launch import run_index

    corpus_file, _ = find_files(DEFAULT_DATASET)
    input_dir = work / "input"
    input_dir.mkdir(parents=True)
    records = corpus_records(json.loads(corpus_file.read_text(encoding="utf-8")))
    (input_dir / corpus_file.name).write_text(json.dumps(records), encoding="utf-8")
    result = run_index("eval", input_dir=str(input_dir))
    if not result.success:
        raise SystemExit(f"indexing MuSiQue failed: {result.failures}")
    return work / "storage"


def index_book(work: Path) -> Path:
    from pipeline.index.run import index_folder

    index_folder("demo", str(ROOT / "samples" / "demo"))
    return work / "storage"


def offline_run(store, question: str, embedder) -> dict:  # noqa: ANN001
    from pipeline.engine.offline import OfflineEngine
    from pipeline.query.common.scope import QueryScope
    from pipeline.query.global_.search import GlobalSearchConfig, global_search_async

    out = {}
    for attempt in ("cold_s", "warm_s"):
        t = time.perf_counter()
        r = asyncio.run(
            global_search_async(QueryScope(store, OfflineEngine(), embedder), question, GlobalSearchConfig())
        )
        out[attempt] = round(time.perf_counter() - t, 2)
    out.update(status=r.status, batches=r.batches, selection=r.selection)
    return out


class ScriptedModel:
    """Rates every report 6 (a relevant-looking corpus), answers every map batch with one point, reduces."""

    def __call__(self, body: dict) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith(prompts.GLOBAL_RATE.system):
            ids = re.findall(r"^(-?\d+): ", user, re.MULTILINE)
            return json.dumps({"ratings": [{"community": int(i), "score": 6} for i in ids]})
        if "Partial answers:" in user:
            return json.dumps({"answer": "A reduced answer [Communities: 1]"})
        ids = re.findall(r"\[Community ID: (-?\d+)", user)
        return json.dumps({"points": [{"description": "A point", "score": 50, "communities": [int(ids[0])]}]})


def llm_run(store, question: str, embedder) -> dict:  # noqa: ANN001
    from pipeline.caches.sqlite_llm import LLMCache
    from pipeline.engine.llm import LLMEngine
    from pipeline.llm import LLMClient
    from pipeline.query.common.scope import QueryScope
    from pipeline.query.global_.search import GlobalSearchConfig, global_search_async
    from tests.support.fault_proxy import FaultProxy

    config = GlobalSearchConfig()
    with FaultProxy(None, responder=ScriptedModel()) as proxy:
        client = LLMClient(
            model="bench",
            api_key="bench",
            base_url=proxy.base_url,
            json_mode="json_object",
            cache=LLMCache(Path(tempfile.mkdtemp(prefix="bench_gsel_")) / "llm.sqlite"),
        )
        t = time.perf_counter()
        r = asyncio.run(global_search_async(QueryScope(store, LLMEngine(client), embedder), question, config))
        wall = time.perf_counter() - t
    bound = math.ceil(config.max_rated / config.rate_batch_size) + config.max_map_batches + 1
    calls = {p: v["calls"] for p, v in r.phases.items()}
    return {
        "status": r.status,
        "wall_s": round(wall, 2),
        "calls": calls,
        "calls_total": sum(calls.values()),
        "bound": bound,
        "within_bound": sum(calls.values()) <= bound,
        "tokens": {p: v["prompt_tokens"] + v["completion_tokens"] for p, v in r.phases.items()},
        "selection": r.selection,
    }


def measure(storage: Path, namespace: str, questions: dict[str, str]) -> dict:
    from pipeline.io.store import NamespaceStore
    from pipeline.runtime import cached_embedder
    from pipeline.settings import Settings

    store = NamespaceStore(storage, namespace)
    # A fresh embedding cache: "cold" embeds every question and sentence it reads, as a first query does.
    embedder = cached_embedder(
        Settings(storage_root=storage, cache_dir=tempfile.mkdtemp(prefix="bench_gsel_cache_"))
    )
    embedder.embed(["warm-up"])
    out = {"communities": store.read_table("communities", columns=["community"]).num_rows}
    for name, question in questions.items():
        out[name] = {"question": question, "offline": offline_run(store, question, embedder)}
        out[name]["llm_scripted"] = llm_run(store, question, embedder)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--musique-storage", type=Path, default=None, help="an index with namespace 'eval'")
    parser.add_argument("--book-storage", type=Path, default=None, help="an index with namespace 'demo'")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_gsel_"))
    os.environ["PIPELINE_STORAGE_ROOT"] = str(work / "storage")
    os.environ.setdefault("DAGSTER_HOME", str(work / "dagster_home"))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "dagster.yaml", Path(os.environ["DAGSTER_HOME"]) / "dagster.yaml")
    with contextlib.redirect_stdout(sys.stderr):  # indexing progress: stdout is the JSON alone
        book = args.book_storage or index_book(work)
        musique = args.musique_storage or index_musique(work)
    _, qfile = find_files(DEFAULT_DATASET)
    topics = [q["question"] for q in json.loads(qfile.read_text(encoding="utf-8"))[:5]]
    out = {
        "sample_book": measure(book, "demo", BOOK_QUESTIONS),
        "musique": measure(
            musique, "eval", {"broad": MUSIQUE_BROAD, **{f"topic_{i}": q for i, q in enumerate(topics, 1)}}
        ),
    }
    print(json.dumps(out, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
