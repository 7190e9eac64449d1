"""Relationships from the raw records (rules 7 and 8 of `pipeline.ops.resolution`, which calls these).

- `merge_relationships`: every mention of a pair of entities becomes one undirected row (id from the
  sorted endpoint ids, the first-seen orientation names source and target); a pair that resolution
  turns into a self-loop is dropped and counted; weight = the sum of LLM strengths, or for offline
  co-occurrence the number of distinct sentences.
- `prune_relationships`: offline co-occurrence edges get a sentence-level NPMI; an edge below
  `min_npmi` is pruned unless its weight reaches `keep_weight`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pipeline.core.names import normalize_name, relationship_id
from pipeline.ops.descriptions import distinct
from pipeline.ops.extraction.models import UnitExtraction


def merge_relationships(
    units: Sequence[UnitExtraction],
    index: dict[tuple[str, str], str],
    stats: Any,
    common: set[str],
) -> list[dict[str, Any]]:
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for u in units:
        for r in u.relationships:
            stats.relationship_mentions += 1
            sid = index.get((u.text_unit_id, normalize_name(r.source)))
            tid = index.get((u.text_unit_id, normalize_name(r.target)))
            if sid is None or tid is None:
                if common & {normalize_name(r.source), normalize_name(r.target)}:
                    stats.relationships_to_common_words += 1
                else:
                    stats.unresolved_endpoints += 1
                continue
            if sid == tid:
                stats.self_loops_dropped += 1
                continue
            pair = (min(sid, tid), max(sid, tid))
            agg = pairs.get(pair)
            if agg is None:
                agg = pairs[pair] = {
                    "id": relationship_id(sid, tid),
                    "source_id": sid,
                    "target_id": tid,
                    "descriptions": [],
                    "units": set(),
                    "documents": set(),
                    "evidence": set(),
                    "strength": 0.0,
                    "offline": u.method == "offline" and bool(r.evidence),
                }
            agg["descriptions"].append(r.description)
            agg["units"].add(u.text_unit_id)
            agg["documents"].add(u.document_id)
            if r.evidence:
                agg["evidence"].update((u.document_id, p) for p in r.evidence)
            else:
                agg["strength"] += float(r.strength)
    rows = []
    for agg in pairs.values():
        rows.append(
            {
                "id": agg["id"],
                "source_id": agg["source_id"],
                "target_id": agg["target_id"],
                "descriptions": distinct(agg["descriptions"]),
                "weight": float(len(agg["evidence"])) + agg["strength"],
                "text_unit_ids": sorted(agg["units"]),
                "document_ids": sorted(agg["documents"]),
                "npmi": None,
                "_evidence": agg["evidence"] if agg["offline"] else None,
            }
        )
    return rows


def prune_relationships(
    rows: list[dict[str, Any]],
    evidence_by_entity: dict[str, set[tuple[str, int]]],
    total_sentences: int,
    options: Any,
    stats: Any,
) -> list[dict[str, Any]]:
    kept = []
    for r in rows:
        evidence = r.pop("_evidence")
        if evidence is None or total_sentences <= 0:
            kept.append(r)
            continue
        px = len(evidence_by_entity[r["source_id"]]) / total_sentences
        py = len(evidence_by_entity[r["target_id"]]) / total_sentences
        pxy = len(evidence) / total_sentences
        r["npmi"] = npmi(pxy, px, py)
        if r["npmi"] < options.min_npmi and r["weight"] < options.keep_weight:
            stats.pruned_edges += 1
            continue
        kept.append(r)
    return kept


def npmi(pxy: float, px: float, py: float) -> float:
    """Normalised PMI in [-1, 1]: 1 = always together, 0 = independent, -1 = never together."""
    if pxy <= 0 or px <= 0 or py <= 0:
        return -1.0
    if pxy >= 1:
        return 1.0
    value = math.log(pxy / (px * py)) / -math.log(pxy)
    return max(-1.0, min(1.0, value))
