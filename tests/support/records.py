"""Extraction records built by hand, for the resolution and description tests."""

from __future__ import annotations

from pipeline.ops.extraction.models import RawEntity, RawRelationship, UnitExtraction


def unit(
    uid: str, entities, relationships=(), doc: str = "doc-a", method: str = "llm", **kw
) -> UnitExtraction:
    """A text unit's records: entities and relationships as tuples of their fields, or records."""
    return UnitExtraction(
        uid,
        doc,
        method,
        "test",
        entities=[RawEntity(*e) if isinstance(e, tuple) else e for e in entities],
        relationships=[RawRelationship(*r) if isinstance(r, tuple) else r for r in relationships],
        **kw,
    )
