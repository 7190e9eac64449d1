"""Microsoft GraphRAG's community reports as ours: kept as written, with our fingerprint and their
citations resolved (rule 5 of `pipeline.interop.ms_graphrag_convert`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.ops.reports.citations import cited_ids
from pipeline.ops.reports.context import GraphData
from pipeline.ops.reports.fingerprint import RowDigests, report_fingerprint, request_version
from pipeline.ops.reports.models import ReportIdentity

IMPORTED_METHOD = "graphrag-import"


def _list(value: Any) -> list[Any]:
    return [] if value is None else list(value)


def imported_reports(
    rows: list[dict[str, Any]],
    converted: dict[str, pa.Table],
    identity: ReportIdentity,
    *,
    refs: dict[str, dict[int, str]],
    budget: int,
    max_words: int,
    encoding: str,
    parent_budget: int | None = None,
) -> pa.Table:
    """Our `community_reports` table of GraphRAG's report rows; `refs` maps each citable table's
    human-readable ids to row ids."""
    communities = {c["community"]: c for c in converted[schema.COMMUNITIES].to_pylist()}
    fingerprints = community_fingerprints(
        communities,
        GraphData(
            converted[schema.ENTITIES],
            converted[schema.RELATIONSHIPS],
            converted[schema.COVARIATES],
            encoding,
        ),
        {r["community"] for r in rows},
        identity,
        budget=budget,
        max_words=max_words,
        parent_budget=parent_budget,
    )
    out = []
    for r in sorted(rows, key=lambda r: r["community"]):
        c = communities.get(r["community"])
        if c is None:
            continue  # a report of a community the table lacks cites nothing a reader can reach
        text = r["full_content"] or ""
        cited = cited_ids(text)
        data_refs = {
            table: {str(i): names[i] for i in cited.get(table, []) if i in names}
            for table, names in refs.items()
        }
        data_refs["Reports"] = {str(i): i for i in cited.get("Reports", []) if i in communities}
        findings = [
            {"summary": f.get("summary"), "explanation": f.get("explanation")}
            for f in _list(r.get("findings"))
        ]
        out.append(
            {
                "id": c["id"],
                "human_readable_id": c["community"],
                "community": c["community"],
                "level": c["level"],
                "parent": c["parent"],
                "children": c["children"],
                "title": r.get("title") or c["title"],
                "summary": r.get("summary") or "",
                "full_content": text,
                "rank": float(r["rank"]) if r.get("rank") is not None else 0.0,
                "rating_explanation": r.get("rating_explanation"),
                "findings": findings,
                "full_content_json": r.get("full_content_json"),
                "period": r.get("period") or c["period"],
                "size": c["size"],
                "fingerprint": fingerprints[c["community"]],
                "method": IMPORTED_METHOD,
                "model": "Microsoft GraphRAG (kept as written)",
                "context_tokens": None,
                "sub_reports": [],
                "data_refs": json.dumps({t: v for t, v in data_refs.items() if v}, sort_keys=True),
            }
        )
    return tables.to_table(out, schema.COMMUNITY_REPORTS_SCHEMA)


def community_fingerprints(
    communities: dict[int, dict[str, Any]],
    graph: GraphData,
    reported: set[int],
    identity: ReportIdentity,
    *,
    budget: int,
    max_words: int,
    parent_budget: int | None = None,
) -> dict[int, str]:
    """community -> the fingerprint `pipeline.ops.reports.build` gives it, bottom-up, `reported` being
    the communities with a report. `parent_budget` (a model's reports): a community with a reported
    child is fingerprinted as a parent written from its children's reports."""
    digests = RowDigests(graph)
    out: dict[int, str] = {}
    for level in sorted({c["level"] for c in communities.values()}, reverse=True):
        for c in sorted(
            (c for c in communities.values() if c["level"] == level), key=lambda c: c["community"]
        ):
            kids: Sequence[int] = [k for k in c["children"] or [] if k in out]
            prompt, fp_budget = request_version(
                identity.version,
                from_children=parent_budget is not None and any(k in reported for k in kids),
                budget=budget,
                parent_budget=parent_budget,
            )
            out[c["community"]] = report_fingerprint(
                digests.rows(c["entity_ids"] or [], c["relationship_ids"] or []),
                [(out[k], k in reported) for k in kids],
                model=identity.model,
                prompt_version=prompt,
                budget=fp_budget,
                max_words=max_words,
            )
    return out
