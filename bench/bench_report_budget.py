"""How the model reports' context budget (`report_context_tokens`) was chosen: tokens against what the
reports' prompts still hold, on an indexed namespace's graph; prints JSON.

    .venv/bin/python bench/bench_report_budget.py --storage ROOT --namespace NS [--budgets 1000,2000]

The namespace is indexed up to communities (any method: the budget only decides which rows a report
reads). For each budget the reports are built as a model's would be (parents from their children's
reports, `report_min_entities` small leaves extractive), with the offline writer standing in for the
model: it sends nothing, and the parents' contexts hold its reports' summaries and headlines, cut as a
model's are. Per budget: the model reports' prompt tokens (context tokens, all reports), and the share
of the communities' entities and claims that a model report's context holds, itself or through its
children's (`ReportsRun.coverage`); for leaves alone too. The default is the smallest budget past which
a doubling adds under 5 points of leaf coverage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUDGETS = (1000, 1500, 2000, 2500, 3000, 4000, 6000, 8000)


def measure(
    storage: Path, namespace: str, budgets: tuple[int, ...], parent_budget: int | None = None
) -> dict:
    from pipeline.core import schema
    from pipeline.engine.offline import OfflineEngine
    from pipeline.io.store import NamespaceStore
    from pipeline.ops.reports.build import EXTRACTIVE, build_reports
    from pipeline.settings import Settings

    settings = Settings(storage_root=storage)
    store = NamespaceStore.from_settings(settings, namespace)
    communities, entities, relationships = (
        store.read_table(t) for t in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS)
    )
    covariates = store.read_table(schema.COVARIATES) if store.has_table(schema.COVARIATES) else None
    claims_of: dict[str, set[str]] = {}
    if covariates is not None:
        for cid, eid in zip(
            covariates.column("id").to_pylist(),
            covariates.column("subject_entity_id").to_pylist(),
            strict=True,
        ):
            claims_of.setdefault(eid or "", set()).add(cid)
    rows = {c["community"]: c for c in communities.to_pylist()}
    out: dict = {"namespace": namespace, "communities": len(rows), "budgets": {}}
    for budget in budgets:
        run = build_reports(
            communities, entities, relationships, covariates, OfflineEngine(),
            budget=budget, parent_budget=parent_budget or budget, parents_from_children=True,
            min_entities=settings.report_min_entities, min_claims=settings.report_min_entities,
        )  # fmt: skip
        model = [r for r in run.reports.to_pylist() if r["method"] != EXTRACTIVE]
        held = {"all": [0, 0], "leaves": [0, 0]}
        for r in model:
            members = rows[r["community"]]["entity_ids"] or []
            items = set(members) | set().union(*(claims_of.get(e, set()) for e in members))
            cover = run.coverage[r["community"]]
            got = len(items & (cover.entities | cover.claims))
            for key in ("all", "leaves") if not r["children"] else ("all",):
                held[key][0] += got
                held[key][1] += len(items)
        out["budgets"][budget] = {
            "model_reports": len(model),
            "leaf_model_reports": sum(not r["children"] for r in model),
            "context_tokens": sum(r["context_tokens"] for r in model),
            "leaf_context_tokens": sum(r["context_tokens"] for r in model if not r["children"]),
            "parent_budget": parent_budget or budget,
            "held_share": round(held["all"][0] / max(held["all"][1], 1), 4),
            "leaf_held_share": round(held["leaves"][0] / max(held["leaves"][1], 1), 4),
        }
        print(budget, json.dumps(out["budgets"][budget]), file=sys.stderr, flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--parent-budget", type=int, default=None, help="fixed; default: each budget")
    args = parser.parse_args()
    budgets = tuple(int(b) for b in args.budgets.split(","))
    print(json.dumps(measure(args.storage, args.namespace, budgets, args.parent_budget), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
