"""The indexing methods' model bill on MuSiQue-100, counted at an OpenAI-compatible server; prints JSON.

    .venv/bin/python bench/bench_index_methods.py [--dataset DIR] [--passages N]

The corpus (one JSON file of {title, text}) is estimated under each method (`estimate_index`, what
`pipeline index --estimate` prints side by side, before anything is sent), then indexed under each method up to community reports (no embeddings:
they call no chat model) through `tests.support.cost_model.UsageProxy` on 127.0.0.1, which counts every
request's prompt tokens as OpenAI's chat models do. The scripted model behind it answers like a model
whose graph is the NLP extractor's (`ModelLikeModel`: packed requests unit by unit), so the run's calls
are the ones a real model would be sent for that graph. Each method runs on its own storage and cache.

Each model method runs under both report modes (`PIPELINE_REPORTS` eager | on_demand), the reports of
each on its own copy of the method's graph; a mode's figures are the graph's calls plus its reports'.

Targets (issue 62): standard <= 1,500 prompt tokens and <= 0.6 calls per passage, fast <= 400 prompt
tokens per passage in on_demand, nlp none; each estimate within 15% of the server's count (calls and
prompt tokens).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "musique_hipporag100"
TARGETS = {"standard": (1500, 0.6), "fast": (400, None), "nlp": (0, 0.0)}  # fast's: on_demand


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--passages", type=int, default=None, help="only the first N passages")
    args = parser.parse_args()

    from bench.eval_retrieval import corpus_records, find_files
    from pipeline.index import community_reports
    from pipeline.index.context import IndexContext
    from pipeline.index.estimate import estimate_index
    from pipeline.settings import Settings
    from tests.support.cost_model import ModelLikeModel, UsageProxy
    from tests.support.env import scoped_env
    from tests.support.graph_stages import run_graph_stages

    corpus_file, _ = find_files(args.dataset)
    records = corpus_records(json.loads(corpus_file.read_text(encoding="utf-8")))[: args.passages]
    work = Path(tempfile.mkdtemp(prefix="methods_"))
    folder = work / "input"
    folder.mkdir()
    (folder / corpus_file.name).write_text(json.dumps(records), encoding="utf-8")
    out: dict = {"dataset": str(args.dataset), "passages": len(records), "methods": {}}

    with UsageProxy(ModelLikeModel()) as proxy:
        env = {
            "PIPELINE_LLM_PROVIDER": "openai",
            "PIPELINE_LLM_BASE_URL": proxy.base_url,
            "PIPELINE_LLM_MODEL": "gpt-4o-mini",  # its price: the USD column
            "PIPELINE_LLM_JSON_MODE": "json_object",
            "PIPELINE_LLM_API_KEY_ENV": "BENCH_METHODS_KEY",
            "BENCH_METHODS_KEY": "not-a-real-key",
            "PIPELINE_LLM_MAX_RETRIES": "0",
            "PIPELINE_LLM_TIMEOUT_S": "600",
        }
        for method in ("standard", "fast", "nlp"):
            storage = work / method
            modes = ("eager",) if method == "nlp" else ("eager", "on_demand")  # nlp: no model report
            estimates, estimate_s = {}, {}
            for mode in modes:  # before anything is sent or cached, as `pipeline index --estimate` is
                with scoped_env(
                    **env,
                    PIPELINE_STORAGE_ROOT=str(storage),
                    PIPELINE_INDEX_METHOD=method,
                    PIPELINE_REPORTS=mode,
                ):
                    t = time.perf_counter()
                    estimates[mode] = estimate_index("m", Settings(), folder)
                    estimate_s[mode] = time.perf_counter() - t
            with scoped_env(**env, PIPELINE_STORAGE_ROOT=str(storage), PIPELINE_INDEX_METHOD=method):
                before = len(proxy.sent())
                t = time.perf_counter()
                run_graph_stages(IndexContext.build("m", Settings()), folder)
                graph_s = time.perf_counter() - t
                graph_sent = proxy.sent()[before:]
            for mode in modes:
                # Each mode's reports on its own copy of the graph (and of the cache, which holds no
                # report yet), so both are counted from nothing.
                root = work / f"{method}_{mode}"
                shutil.copytree(storage, root)
                with scoped_env(
                    **env,
                    PIPELINE_STORAGE_ROOT=str(root),
                    PIPELINE_INDEX_METHOD=method,
                    PIPELINE_REPORTS=mode,
                ):
                    settings = Settings()
                    before = len(proxy.sent())
                    t = time.perf_counter()
                    community_reports.run(IndexContext.build("m", settings))
                    run_s = graph_s + time.perf_counter() - t
                sent = graph_sent + proxy.sent()[before:]
                figures = _figures(sent, estimates[mode], len(records), method)
                figures.update(estimate_s=round(estimate_s[mode], 1), run_s=round(run_s, 1))
                out["methods"].setdefault(method, {})[mode] = figures
                print(f"{method} {mode}: {json.dumps(figures)}", file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))
    return 0


def _figures(sent: list, estimate: Any, n: int, method: str) -> dict[str, Any]:
    calls, prompt = len(sent), sum(p for _, _, p, _ in sent)
    total = estimate.total()
    by_task: dict[str, int] = {}
    for task, *_ in sent:
        by_task[task] = by_task.get(task, 0) + 1
    target_tokens, target_calls = TARGETS[method]
    return {
        "server_calls": calls,
        "server_prompt_tokens": prompt,
        "server_completion_tokens": sum(c for *_, c in sent),
        "server_calls_by_task": by_task,
        "calls_per_passage": round(calls / n, 3),
        "prompt_tokens_per_passage": round(prompt / n, 1),
        "estimate_calls": total.calls,
        "estimate_prompt_tokens": total.prompt_tokens,
        "estimate_calls_ratio": round(total.calls / calls, 3) if calls else None,
        "estimate_prompt_ratio": round(total.prompt_tokens / prompt, 3) if prompt else None,
        "estimate_minutes": round(estimate.minutes(total), 1),
        "estimate_usd": round(estimate.cost(total)[0], 4),
        "targets": {"prompt_tokens_per_passage": target_tokens, "calls_per_passage": target_calls},
    }


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
