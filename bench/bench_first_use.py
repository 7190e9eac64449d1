"""Reports written on first use (issue 62), question by question, on MuSiQue-100; prints JSON.

    nice -n 10 .venv/bin/python bench/bench_first_use.py [--dataset DIR] [--passages N] [--log]

The corpus is indexed under `PIPELINE_INDEX_METHOD=fast` and `PIPELINE_REPORTS=on_demand` (graph stages,
then community reports: level 0 written by the model, deeper levels extractive stand-ins marked
`model = "deferred"`) through `tests.support.cost_model.UsageProxy` on 127.0.0.1, and committed, so
questions read a committed version. No report vectors are built: dynamic selection only orders its
queue by them, and with none it rates the roots in rank order; selection is the configured one (`auto`:
dynamic above 300 communities, which MuSiQue-100 under `fast` is).

Then global search (`pipeline.api.answer`) is asked the dataset's first 5 questions and one broad
question, each once, then each again. The scripted model rates every report it is shown 6 (kept, so
selection descends as far as its budget lets), answers each map part with a point and the reduce with a
sentence. For each asking: the `--estimate`'s reports phase made just before it, the report calls and
prompt tokens the server counted for it (and all its calls), its `selection.first_use`, status and wall
time. Totals: stand-ins at index time and after the questions, and whether each first asking's estimate
was at least the report calls made (an upper bound under dynamic selection, exact under static).

A second asking repeats the first's prompts only where the reports it reads did not change, so some of
its rating, map and reduce calls may be answered from the LLM cache and never reach the server.
`--log` appends the run to bench/results/bench_first_use.json (`make bench` appends it itself).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "musique_hipporag100"
NS = "musique"
BROAD = "What are the main topics covered by these passages?"
RATE_LINE = re.compile(r"^(\d+): ", re.MULTILINE)
PART = re.compile(r"\[Community ID: (\d+) \| summary part \d+\]")


def _responder() -> Any:
    from tests.support.cost_model import ModelLikeModel

    class Responder(ModelLikeModel):
        """Reports as `ModelLikeModel` writes them; every report rated 6; a map point per community part;
        one reduce answer."""

        def __call__(self, request: dict[str, Any]) -> str:
            system = str(request["messages"][0].get("content", ""))
            user = str(request["messages"][-1].get("content", ""))
            if "You judge whether community reports" in system:  # GLOBAL_RATE
                listed = user.split("Reports (id: title — summary):\n", 1)[-1].split("\n\nRate every", 1)[0]
                ids = [int(c) for c in RATE_LINE.findall(listed)]
                return json.dumps({"ratings": [{"community": c, "score": 6} for c in ids]})
            if "Partial answers:" in user:
                return json.dumps({"answer": "The passages cover several topics [Communities: 1]"})
            pieces = PART.split(user)
            if len(pieces) > 1:
                points = [
                    {
                        "description": f"Community {c}: " + " ".join(text.split()[:12]),
                        "score": 10 + len(set(text.split())) % 80,
                        "communities": [int(c)],
                    }
                    for c, text in zip(pieces[1::2], pieces[2::2], strict=True)
                ]
                return json.dumps({"points": points})
            return super().__call__(request)

    return Responder()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--passages", type=int, default=None, help="only the first N passages")
    # Opt-in: `make bench` (bench/run_all.py) appends each bench's run itself
    parser.add_argument("--log", action="store_true", help="append the run to bench/results")
    args = parser.parse_args()

    from bench.eval_retrieval import corpus_records, find_files
    from pipeline.core import schema
    from pipeline.core.report_stand_ins import deferred
    from pipeline.index import community_reports
    from pipeline.index.context import IndexContext
    from pipeline.io.manifest import commit_manifest
    from pipeline.io.store import NamespaceStore
    from pipeline.settings import Settings
    from tests.support.cost_model import UsageProxy
    from tests.support.env import scoped_env
    from tests.support.graph_stages import run_graph_stages

    corpus_file, questions_file = find_files(args.dataset)
    records = corpus_records(json.loads(corpus_file.read_text(encoding="utf-8")))[: args.passages]
    questions = [q["question"] for q in json.loads(questions_file.read_text(encoding="utf-8"))[:5]]
    questions.append(BROAD)
    work = Path(tempfile.mkdtemp(prefix="first_use_"))
    folder = work / "input"
    folder.mkdir()
    (folder / corpus_file.name).write_text(json.dumps(records), encoding="utf-8")

    with UsageProxy(_responder()) as proxy:
        env = {
            "PIPELINE_LLM_PROVIDER": "openai",
            "PIPELINE_LLM_BASE_URL": proxy.base_url,
            "PIPELINE_LLM_MODEL": "gpt-4o-mini",
            "PIPELINE_LLM_JSON_MODE": "json_object",
            "PIPELINE_LLM_API_KEY_ENV": "BENCH_FIRST_USE_KEY",
            "BENCH_FIRST_USE_KEY": "not-a-real-key",
            "PIPELINE_LLM_MAX_RETRIES": "0",
            "PIPELINE_LLM_TIMEOUT_S": "600",
            "PIPELINE_STORAGE_ROOT": str(work / "storage"),
            "PIPELINE_INDEX_METHOD": "fast",
            "PIPELINE_REPORTS": "on_demand",
        }
        with scoped_env(**env):
            settings = Settings()
            t = time.perf_counter()
            ctx = run_graph_stages(IndexContext.build(NS, settings), folder)
            community_reports.run(ctx)
            store = NamespaceStore.from_settings(settings, NS)
            commit_manifest(store)
            index_s = time.perf_counter() - t
            reports = store.pinned().read_table(schema.COMMUNITY_REPORTS)
            index_sent = proxy.sent()
            out: dict[str, Any] = {
                "dataset": str(args.dataset),
                "passages": len(records),
                "method": "fast",
                "reports": "on_demand",
                "communities": reports.num_rows,
                "index": {
                    "report_calls": sum(1 for s in index_sent if s[0] == "community_report"),
                    "stand_ins": len(deferred(reports)),
                    "run_s": round(index_s, 1),
                },
                "first_use_reports": settings.global_first_use_reports,
                "askings": [],
            }
            for round_ in (1, 2):
                for q in questions:
                    figures = _ask(store, settings, q, proxy)
                    figures["round"] = round_
                    out["askings"].append(figures)
                    print(json.dumps(figures), file=sys.stderr, flush=True)
            left = len(deferred(store.pinned().read_table(schema.COMMUNITY_REPORTS)))
    first = [a for a in out["askings"] if a["round"] == 1]
    out["totals"] = {
        "stand_ins_at_index": out["index"]["stand_ins"],
        "stand_ins_left": left,
        "reports_written_by_questions": sum(a["first_use"]["written"] for a in out["askings"]),
        "question_report_calls": sum(a["report_calls"] for a in out["askings"]),
        "question_report_prompt_tokens": sum(a["report_prompt_tokens"] for a in out["askings"]),
        "estimate_bounds_first_asking": all(a["estimate_bounds"] for a in first),
        "estimate_bounds_by_question": [a["estimate_bounds"] for a in first],
        "estimate_token_bounds_first_asking": all(a["estimate_token_bounds"] for a in first),
    }
    print(json.dumps(out, indent=2))
    if args.log:
        from bench.results_log import append_run

        command = "nice -n 10 .venv/bin/python bench/bench_first_use.py --log" + (
            f" --passages {args.passages}" if args.passages else ""
        )
        append_run("bench_first_use", out, command=command)
    return 0


def _ask(store: Any, settings: Any, question: str, proxy: Any) -> dict[str, Any]:
    """One asking: the estimate's reports phase just before it, then what the server counted for it."""
    from pipeline import api
    from pipeline.query import registry
    from pipeline.query.estimate import estimate_query

    config = registry.configure("global", settings)
    estimate = estimate_query(registry.mode("global"), store.pinned(), question, settings, None, config)
    phase = next((p for p in estimate.phases if p.phase == "reports"), None)
    before = len(proxy.sent())
    t = time.perf_counter()
    result = api.answer("global", NS, question, settings=settings)
    wall = time.perf_counter() - t
    sent = proxy.sent()[before:]
    reports = [s for s in sent if s[0] == "community_report"]
    first_use = result.selection.get("first_use") or {}
    estimate_calls = phase.calls if phase else 0
    return {
        "question": question,
        "selection": result.selection.get("mode"),
        "estimate_report_calls": estimate_calls,
        "estimate_report_prompt_tokens": phase.prompt_tokens if phase else 0,
        "estimate_basis": next((n for n in estimate.notes if n.startswith("first use:")), None),
        "report_calls": len(reports),
        "report_prompt_tokens": sum(p for _, _, p, _ in reports),
        "server_calls": len(sent),
        "server_prompt_tokens": sum(p for _, _, p, _ in sent),
        "phase_report_calls": (result.phases.get("reports") or {}).get("calls", 0),
        "first_use": {k: len(first_use.get(k, [])) for k in ("written", "ready", "skipped", "failed")},
        "estimate_bounds": estimate_calls >= len(reports),
        "estimate_token_bounds": (phase.prompt_tokens if phase else 0) >= sum(p for _, _, p, _ in reports),
        "status": result.status,
        "wall_s": round(wall, 2),
    }


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
