"""Full index vs re-index after 1% of the documents changed, on MuSiQue's passages; prints JSON.

    .venv/bin/python bench/bench_incremental.py [--docs N] [--changed-fraction 0.01] [--modes offline,proxy]

Each passage becomes one .txt file of a namespace folder. Both runs go through Dagster (`run_index`),
with a fresh storage root per mode so the first run pays for everything:

- offline: the default engine (rule-based extraction, extractive reports) and MiniLM;
- proxy: LLM extraction and reports through the real client and tests/support/fault_proxy.py, whose
  scripted model (tests/support/graph_model.py) answers instantly and counts every call.

Reported per mode: wall time, LLM calls (counted at the proxy), embeddings computed by the model
(text units + entities + reports) and the re-index / full ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "data" / "musique_hipporag100" / "musique_train_corpus.json"
EDIT = " This passage was revised for the incremental benchmark."


def _embedded(result) -> int:  # noqa: ANN001 - assets.launch.IndexRunResult
    total = 0
    for step in result.steps:
        m = step.metadata
        total += int(m.get("embeddings_computed", 0) or 0)
        total += int(m.get("reports_embeddings_computed", 0) or 0) + int(
            m.get("entities_embeddings_computed", 0) or 0
        )
    return total


def _step(result, asset: str) -> dict:  # noqa: ANN001
    return next((s.metadata for s in result.steps if s.asset == asset), {})


def run_mode(mode: str, passages: list[dict], changed: int, work: Path, instance) -> dict:  # noqa: ANN001
    from assets.launch import run_index
    from tests.support.fault_proxy import FaultProxy
    from tests.support.graph_model import ScriptedGraphModel

    folder = work / f"input_{mode}"
    folder.mkdir()
    for i, p in enumerate(passages):
        (folder / f"p{i:05d}.txt").write_text(f"{p['title']}\n\n{p['text']}\n", encoding="utf-8")
    env = {"PIPELINE_STORAGE_ROOT": str(work / f"storage_{mode}")}
    model = ScriptedGraphModel()
    proxy = None
    if mode == "proxy":
        proxy = FaultProxy(None, responder=model).start()
        env.update(
            PIPELINE_LLM_PROVIDER="openai",
            PIPELINE_LLM_BASE_URL=proxy.base_url,
            PIPELINE_LLM_MODEL="scripted-graph",
            PIPELINE_LLM_JSON_MODE="json_object",
            PIPELINE_LLM_API_KEY_ENV="BENCH_KEY",
            BENCH_KEY="bench",
            PIPELINE_EXTRACTION_MAX_GLEANINGS="0",
        )
    os.environ.update(env)
    try:
        runs = {}
        for phase in ("full", "reindex"):
            if phase == "reindex":  # edit the first `changed` files, spread over the corpus
                step = max(len(passages) // max(changed, 1), 1)
                for i in range(0, step * changed, step):
                    path = folder / f"p{i:05d}.txt"
                    path.write_text(
                        path.read_text(encoding="utf-8").rstrip("\n") + EDIT + "\n", encoding="utf-8"
                    )
            calls_before = model.total()
            started = time.perf_counter()
            result = run_index(f"bench_{mode}", input_dir=str(folder), instance=instance)
            wall = time.perf_counter() - started
            if not result.success:
                raise RuntimeError(f"{mode} {phase} failed: {result.failures}")
            reports = _step(result, "community_reports")
            runs[phase] = {
                "wall_s": round(wall, 2),
                "llm_calls": model.total() - calls_before,
                "llm_calls_by_task": dict(model.snapshot()),
                "embeddings_computed": _embedded(result),
                "text_units": _step(result, "text_units").get("rows"),
                "extraction_reused_offline": _step(result, "extracted_graph").get(
                    "reused_offline_extractions"
                ),
                "extraction_cache_hits": _step(result, "extracted_graph").get("llm_cache_hits"),
                "reports": reports.get("reports"),
                "reports_generated": reports.get("generated"),
                "reports_reused": reports.get("reused"),
                "communities": _step(result, "communities").get("communities"),
                "entities": _step(result, "entities").get("entities"),
            }
        full, re = runs["full"], runs["reindex"]
        return {
            **runs,
            "wall_ratio": round(re["wall_s"] / full["wall_s"], 3),
            "llm_call_ratio": round(re["llm_calls"] / full["llm_calls"], 4) if full["llm_calls"] else None,
            "embedding_ratio": round(re["embeddings_computed"] / full["embeddings_computed"], 4)
            if full["embeddings_computed"]
            else None,
        }
    finally:
        if proxy is not None:
            proxy.stop()
        for key in env:
            os.environ.pop(key, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--docs", type=int, default=0, help="first N passages (0 = all 1,890)")
    parser.add_argument("--changed-fraction", type=float, default=0.01)
    parser.add_argument("--modes", default="offline,proxy")
    args = parser.parse_args()
    passages = json.loads(args.corpus.read_text(encoding="utf-8"))
    if args.docs:
        passages = passages[: args.docs]
    changed = max(1, round(len(passages) * args.changed_fraction))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="bench_incremental_") as tmp:
        work = Path(tmp)
        import shutil

        from dagster import DagsterInstance

        home = work / "dagster_home"
        home.mkdir()
        shutil.copyfile(ROOT / "dagster.yaml", home / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(home)
        instance = DagsterInstance.get()
        out: dict = {"corpus": str(args.corpus), "documents": len(passages), "documents_changed": changed}
        for mode in args.modes.split(","):
            out[mode] = run_mode(mode, passages, changed, work, instance)
        instance.dispose()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
