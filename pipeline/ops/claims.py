"""Claims -> the `covariates` table (GraphRAG's name), with subjects and objects resolved to entities.

A claim's subject/object name is looked up by normalised name among the entities' titles and aliases.
When the name belongs to several entities (same name, different types), the one mentioned in the
claim's text unit wins, then the most frequent. A name that matches no entity keeps its text in
`subject_id`/`object_id` (GraphRAG's columns hold names) and a null `*_entity_id`.
Claim ids hash (text unit, round, position), so a re-run gives the same ids. An unknown object or date
is stored as GraphRAG stores it, "NONE" (`schema.CLAIM_NONE`), so its query engine reads our table as
its own; `known` turns it back into None for our readers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.core.names import normalize_name, stable_id
from pipeline.ops.extraction.models import UnitExtraction


def known(value: str | None) -> str | None:
    """A claim's object or date, None when unknown (null, or GraphRAG's "NONE")."""
    return None if value is None or value == schema.CLAIM_NONE else value


@dataclass
class ClaimStats:
    claims: int = 0
    subjects_resolved: int = 0
    objects: int = 0
    objects_resolved: int = 0
    by_status: dict[str, int] | None = None


class _EntityLookup:
    def __init__(self, entities: pa.Table) -> None:
        self._by_key: dict[str, list[tuple[str, str, set[str], int]]] = defaultdict(list)
        cols = entities.select(["id", "title", "aliases", "text_unit_ids", "frequency"]).to_pylist()
        for e in cols:
            units = set(e["text_unit_ids"] or [])
            for name in {e["title"], *(e["aliases"] or [])}:
                key = normalize_name(name)
                if key:
                    self._by_key[key].append((e["id"], e["title"], units, e["frequency"]))

    def find(self, name: str | None, unit: str) -> tuple[str, str] | None:
        """(entity id, title) for a name mentioned in `unit`, or None."""
        if not name:
            return None
        candidates = self._by_key.get(normalize_name(name), [])
        if not candidates:
            return None
        best = min(candidates, key=lambda c: (unit not in c[2], -c[3], c[0]))
        return best[0], best[1]


def build_covariates(units: Sequence[UnitExtraction], entities: pa.Table) -> tuple[pa.Table, ClaimStats]:
    lookup = _EntityLookup(entities)
    rows = []
    stats = ClaimStats(by_status=defaultdict(int))
    for u in units:
        for position, c in enumerate(u.claims):
            subject = lookup.find(c.subject, u.text_unit_id)
            obj = lookup.find(c.object, u.text_unit_id)
            stats.subjects_resolved += subject is not None
            stats.objects += bool(c.object)
            stats.objects_resolved += obj is not None
            stats.by_status[c.status] += 1
            rows.append(
                {
                    "id": stable_id("claim", u.text_unit_id, str(c.round), str(position)),
                    "human_readable_id": len(rows),
                    "covariate_type": "claim",
                    "type": c.claim_type,
                    "description": c.description,
                    "subject_id": subject[1] if subject else c.subject,
                    "object_id": obj[1] if obj else (c.object or schema.CLAIM_NONE),
                    "status": c.status,
                    "start_date": c.start_date or schema.CLAIM_NONE,
                    "end_date": c.end_date or schema.CLAIM_NONE,
                    "source_text": c.source_text,
                    "text_unit_id": u.text_unit_id,
                    "subject_entity_id": subject[0] if subject else None,
                    "object_entity_id": obj[0] if obj else None,
                    "document_id": u.document_id,
                    "start_char": c.start_char,
                    "end_char": c.end_char,
                    "round": c.round,
                }
            )
    stats.claims = len(rows)
    stats.by_status = dict(stats.by_status)
    return tables.to_table(rows, schema.COVARIATES_SCHEMA), stats
