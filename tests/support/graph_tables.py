"""Small hand-built graph tables (entities, relationships, covariates, communities) in the real schemas."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from pipeline.core import schema


def eid(title: str) -> str:
    return f"e-{title}"


@dataclass
class Graph:
    entities: list[dict] = field(default_factory=list)
    relationships: list[dict] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)
    communities: list[dict] = field(default_factory=list)

    def entity(self, title: str, description: str, degree: int = 1, type: str = "person") -> Graph:  # noqa: A002
        self.entities.append(
            {
                "id": eid(title),
                "human_readable_id": len(self.entities),
                "title": title,
                "type": type,
                "description": description,
                "text_unit_ids": ["tu-1"],
                "frequency": 1,
                "degree": degree,
                "aliases": [],
                "document_ids": ["doc-1"],
                "name_key": title.lower(),
            }
        )
        return self

    def edge(self, a: str, b: str, description: str, weight: float = 1.0) -> Graph:
        degree = {e["title"]: e["degree"] for e in self.entities}
        self.relationships.append(
            {
                "id": f"r-{a}-{b}",
                "human_readable_id": len(self.relationships),
                "source": a,
                "target": b,
                "description": description,
                "weight": weight,
                "combined_degree": degree.get(a, 0) + degree.get(b, 0),
                "text_unit_ids": ["tu-1"],
                "source_id": eid(a),
                "target_id": eid(b),
                "document_ids": ["doc-1"],
                "npmi": None,
            }
        )
        return self

    def claim(self, subject: str, description: str, status: str = "TRUE") -> Graph:
        self.claims.append(
            {
                "id": f"c-{len(self.claims)}",
                "human_readable_id": len(self.claims),
                "covariate_type": "claim",
                "type": "STATEMENT",
                "description": description,
                "subject_id": subject,
                "object_id": None,
                "status": status,
                "start_date": None,
                "end_date": None,
                "source_text": description,
                "text_unit_id": "tu-1",
                "subject_entity_id": eid(subject),
                "object_entity_id": None,
                "document_id": "doc-1",
                "start_char": None,
                "end_char": None,
                "round": 0,
            }
        )
        return self

    def community(
        self, n: int, level: int, members: list[str], parent: int = -1, children: list[int] | None = None
    ) -> Graph:
        ids = {eid(m) for m in members}
        inner = [r["id"] for r in self.relationships if r["source_id"] in ids and r["target_id"] in ids]
        self.communities.append(
            {
                "id": f"community-{level}-{'-'.join(sorted(members))}",
                "human_readable_id": n,
                "community": n,
                "level": level,
                "parent": parent,
                "children": children or [],
                "title": f"Community {n}",
                "entity_ids": sorted(ids),
                "relationship_ids": sorted(inner),
                "text_unit_ids": ["tu-1"],
                "period": "2026-01-01",
                "size": len(members),
                "method": "leiden",
            }
        )
        return self

    def tables(self) -> dict[str, pa.Table]:
        return {
            "entities": pa.Table.from_pylist(self.entities, schema=schema.ENTITIES_SCHEMA),
            "relationships": pa.Table.from_pylist(self.relationships, schema=schema.RELATIONSHIPS_SCHEMA),
            "covariates": pa.Table.from_pylist(self.claims, schema=schema.COVARIATES_SCHEMA),
            "communities": pa.Table.from_pylist(self.communities, schema=schema.COMMUNITIES_SCHEMA),
        }


def _words(topic: str, n: int = 40) -> str:
    return " ".join(f"{topic} detail {i} matters to the story." for i in range(n // 6 + 1))


def two_group_graph() -> Graph:
    """Community 0 (level 0) = child 1 (the A group, 4 members) + child 2 (the B group, 2 members)."""
    g = Graph()
    for name in ("Alder", "Birch", "Cedar", "Dogwood"):
        g.entity(name, f"{name} is a member of the A group. " + _words(name), degree=3)
    for name in ("Elm", "Fir"):
        g.entity(name, f"{name} is a member of the B group. " + _words(name), degree=2)
    for a, b in (("Alder", "Birch"), ("Birch", "Cedar"), ("Cedar", "Dogwood"), ("Alder", "Dogwood")):
        g.edge(a, b, f"{a} works closely with {b}. " + _words(a + b, 20), weight=3.0)
    g.edge("Elm", "Fir", "Elm and Fir share a grove. " + _words("ElmFir", 20), weight=5.0)
    g.edge("Alder", "Elm", "Alder once met Elm at the river. " + _words("AlderElm", 20), weight=1.0)
    g.claim("Alder", "Alder founded the A group in the spring.")
    g.claim("Elm", "Elm keeps the records of the B group.")
    g.community(1, 1, ["Alder", "Birch", "Cedar", "Dogwood"], parent=0)
    g.community(2, 1, ["Elm", "Fir"], parent=0)
    g.community(0, 0, ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir"], children=[1, 2])
    g.communities.sort(key=lambda c: c["community"])
    return g
