"""Synthetic community reports for global search: `write_reports` gives a namespace n leaf communities
with one report each on a handful of city topics (one of them very long), optionally under two parents."""

from __future__ import annotations

import pyarrow as pa

from pipeline.core import schema
from pipeline.io.store import NamespaceStore

TOPICS = [
    "Solar panels on municipal buildings cut the city's electricity bills by a third.",
    "The river flood of 2019 destroyed the old harbour warehouses.",
    "A new tram line connects the university to the central station.",
    "The football club's youth academy produced three national team players.",
]


def write_reports(
    store: NamespaceStore, n: int = 40, oversized: int | None = 7, levels: bool = False
) -> None:
    """n leaf communities with one report each (community `oversized` gets a very long report)."""
    communities, reports = [], []
    for i in range(n):
        body = f"# Community {i}\n\n{TOPICS[i % len(TOPICS)]} Report number {i} adds its own detail {i * 7}."
        if i == oversized:
            body += " " + " ".join(
                f"Long finding {k} about district {k % 13} and its budget." for k in range(400)
            )
        communities.append(
            {
                "community": i,
                "level": 1 if levels else 0,
                "parent": (i % 2) + 1000 if levels else -1,
                "children": [],
                "entity_ids": [],
                "text_unit_ids": [],
            }
        )
        reports.append(
            {
                "community": i,
                "level": 1 if levels else 0,
                "title": f"Community {i}",
                "summary": body,
                "full_content": body,
                "rank": float(i % 5),
            }
        )
    if levels:
        for p in (1000, 1001):
            kids = [i for i in range(n) if (i % 2) + 1000 == p]
            communities.append(
                {
                    "community": p,
                    "level": 0,
                    "parent": -1,
                    "children": kids,
                    "entity_ids": [],
                    "text_unit_ids": [],
                }
            )
            reports.append(
                {
                    "community": p,
                    "level": 0,
                    "title": f"Parent {p}",
                    "summary": f"Parent {p} overview.",
                    "full_content": f"# Parent {p}\n\nParent {p} overview of the city.",
                    "rank": 5.0,
                }
            )
    store.write_table(schema.COMMUNITIES, pa.Table.from_pylist(communities, schema=schema.COMMUNITIES_SCHEMA))
    store.write_table(
        schema.COMMUNITY_REPORTS, pa.Table.from_pylist(reports, schema=schema.COMMUNITY_REPORTS_SCHEMA)
    )
