"""The reports global search reads: leaf-community reports (or one level's), each augmented with
claims and short source excerpts from its descendant leaf communities, ids kept."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.core.stored_regions import mask_stored
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.query.caches.index_cache import cached_index, table_versions

MAX_CLAIMS_PER_REPORT = 5
MAX_EXCERPTS_PER_REPORT = 3
EXCERPT_CHARS = 240


class GlobalContextError(ValueError):
    """The request cannot be served from this namespace's reports (e.g. a level that does not exist)."""


class LevelNotFoundError(GlobalContextError):
    """The namespace has reports, but none at the requested community level."""


@dataclass(frozen=True)
class ReportContext:
    community: int
    level: int
    title: str
    rank: float
    text: str  # what the map step reads: report + claims + excerpts


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1].rsplit(" ", 1)[0] + "…"


@dataclass(frozen=True)
class _Contexts:
    levels: list[int]
    leaves: frozenset[int]  # reports' communities without children
    by_community: dict[int, ReportContext]  # every report's, in community order


def load_report_contexts(
    store: NamespaceStore, level: int | None = None, only: Collection[int] | None = None
) -> list[ReportContext]:
    """Reports of leaf communities (default), of `level`, or of the communities `only` names (any level),
    in community order, augmented for the map step.

    Every report's context is built once per version of the tables it reads and kept (`index_cache`):
    building them reads the whole text-unit and document tables, which at 11 MB of text was most of a
    global search's time."""
    if level is not None and (not isinstance(level, int) or isinstance(level, bool) or level < 0):
        raise GlobalContextError(f"community level must be a non-negative integer, got {level!r}")
    versions = table_versions(store, _INPUTS)
    built = cached_index(store, "global_contexts", versions, lambda: _build_contexts(store))
    if level is not None and level not in built.levels:
        raise LevelNotFoundError(
            f"community level {level} does not exist in namespace {store.namespace!r}; levels are {built.levels}"
        )
    wanted = set(only) if only is not None else None
    return [
        c
        for c in built.by_community.values()
        if (
            c.community in wanted
            if wanted is not None
            else c.level == level
            if level is not None
            else c.community in built.leaves
        )
        and c.text.strip()
    ]


_INPUTS = (
    schema.COMMUNITY_REPORTS,
    schema.COMMUNITIES,
    schema.COVARIATES,
    schema.TEXT_UNITS,
    schema.DOCUMENTS,
)


def _build_contexts(store: NamespaceStore) -> _Contexts:
    try:
        reports = store.read_table(schema.COMMUNITY_REPORTS).to_pylist()
        communities = store.read_table(schema.COMMUNITIES).to_pylist()
    except TableNotFoundError as exc:
        raise TableNotFoundError(f"{exc} (global search needs community reports)") from None
    levels = sorted({c["level"] for c in communities})
    by_id = {c["community"]: c for c in communities}

    def leaves_under(cid: int) -> list[int]:
        stack, out = [cid], []
        while stack:
            c = by_id.get(stack.pop())
            if c is None:
                continue
            if c["children"]:
                stack.extend(c["children"])
            else:
                out.append(c["community"])
        return out

    claims_by_entity = _claims_by_entity(store)
    members: dict[int, tuple[list[str], list[str]]] = {}  # community -> (entity ids, unique text unit ids)
    for r in reports:
        leaves = [by_id[leaf] for leaf in leaves_under(r["community"])]
        entity_ids = [e for leaf in leaves for e in leaf["entity_ids"] or []]
        unit_ids = list(dict.fromkeys(u for leaf in leaves for u in leaf["text_unit_ids"] or []))
        members[r["community"]] = (entity_ids, unit_ids)
    unit_text = _text_units(
        store, {u for _, units in members.values() for u in units[:MAX_EXCERPTS_PER_REPORT]}
    )

    contexts: dict[int, ReportContext] = {}
    for r in sorted(reports, key=lambda r: r["community"]):
        entity_ids, unit_ids = members[r["community"]]
        claims, seen = [], set()
        for eid in entity_ids:
            for claim in claims_by_entity.get(eid, []):
                if claim["id"] not in seen:
                    seen.add(claim["id"])
                    claims.append(claim)
        lines = [(r.get("full_content") or r.get("summary") or "").strip()]
        if claims:
            lines.append("Claims:")
            lines += [
                f"- [Claim {c['id'][:12]}] ({c['status']}) {_excerpt(c['description'] or c['source_text'] or '')}"
                for c in claims[:MAX_CLAIMS_PER_REPORT]
            ]
        excerpts = [u for u in unit_ids[:MAX_EXCERPTS_PER_REPORT] if u in unit_text]
        if excerpts:
            lines.append("Source excerpts:")
            lines += [f'- [Text unit {u[:12]}] "{_excerpt(unit_text[u])}"' for u in excerpts]
        contexts[r["community"]] = ReportContext(
            r["community"], r["level"], r.get("title") or "", float(r.get("rank") or 0), "\n".join(lines)
        )
    leaves = frozenset(
        r["community"] for r in reports if not (by_id.get(r["community"], {}).get("children") or [])
    )
    return _Contexts(levels, leaves, contexts)


def _claims_by_entity(store: NamespaceStore) -> dict[str, list[dict]]:
    if not store.has_table(schema.COVARIATES):
        return {}
    out: dict[str, list[dict]] = defaultdict(list)
    for row in store.read_table(schema.COVARIATES).to_pylist():
        for key in ("subject_entity_id", "object_entity_id"):
            if row.get(key):
                out[row[key]].append(row)
    return out


def _text_units(store: NamespaceStore, ids: set[str]) -> dict[str, str]:
    """The texts of these units with their documents' front matter blanked (`pipeline.core.boilerplate`):
    a caption or a heading is no excerpt of what a community is about."""
    if not store.has_table(schema.TEXT_UNITS):
        return {}
    t = store.read_table(schema.TEXT_UNITS, columns=["id", "text", "document_id", "start_char"])
    t = t.filter(pc.is_in(t.column("id"), pa.array(sorted(ids), pa.string())))
    if store.has_table(schema.DOCUMENTS) and t.num_rows:
        wanted = t.column("document_id").unique()

        def documents() -> pa.Table:  # read only for an index whose text units carry no regions
            docs = store.read_table(schema.DOCUMENTS, columns=["id", "text"])
            return docs.filter(pc.is_in(docs.column("id"), wanted))

        t = mask_stored(t, documents)
    return dict(zip(t.column("id").to_pylist(), t.column("text").to_pylist(), strict=True))
