"""The small hand-built Christmas Carol namespace: four paragraphs, six entities, their relationships,
two levels of communities with reports, a claim, and real MiniLM vectors (LanceDB) for entities, reports
and text units. Local search's tests and the service's namespaces are built from it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.core import schema
from pipeline.core.names import normalize_name
from pipeline.index.text_unit_embeddings import index_text_units
from pipeline.io.store import NamespaceStore

PARAGRAPHS = [
    "Ebenezer Scrooge kept the counting-house with his late partner Jacob Marley. Marley had been dead seven years.",
    "Bob Cratchit worked as Scrooge's clerk for fifteen shillings a week. His son Tiny Tim walked with a crutch.",
    "London was foggy and cold that Christmas Eve, and the gas lamps were lit by three o'clock.",
    "Old Fezziwig threw a ball for his apprentices, and young Scrooge danced until midnight in the warehouse.",
]


ENTITIES = {
    "scrooge": (
        "Ebenezer Scrooge",
        "person",
        ["Scrooge"],
        "A cold-hearted, miserly old businessman.",
        [0, 1, 3],
    ),
    "marley": (
        "Jacob Marley",
        "person",
        ["Marley"],
        "Scrooge's late business partner, dead seven years.",
        [0],
    ),
    "cratchit": ("Bob Cratchit", "person", [], "Scrooge's underpaid clerk, a kind father.", [1]),
    "tim": ("Tiny Tim", "person", [], "Bob Cratchit's sick young son who walks with a crutch.", [1]),
    "london": ("London", "geo", [], "The foggy city where the story takes place.", [2]),
    "fezziwig": (
        "Fezziwig",
        "person",
        [],
        "A jolly merchant who threw a Christmas ball for his apprentices.",
        [3],
    ),
}


EDGES = [
    ("scrooge", "marley", 5.0),
    ("scrooge", "cratchit", 3.0),
    ("cratchit", "tim", 4.0),
    ("scrooge", "fezziwig", 2.0),
    ("london", "fezziwig", 1.0),
]


RELATIONSHIP_DESCRIPTIONS = {
    ("scrooge", "marley"): "Scrooge and Marley were partners in the counting-house.",
    ("scrooge", "cratchit"): "Bob Cratchit is the clerk Scrooge pays fifteen shillings a week.",
    ("cratchit", "tim"): "Tiny Tim is Bob Cratchit's youngest son.",
    ("scrooge", "fezziwig"): "Young Scrooge was apprenticed to Fezziwig and danced at his ball.",
    ("london", "fezziwig"): "Fezziwig's warehouse stood in London.",
}


COMMUNITIES = [  # (community, level, parent, children, members)
    (0, 0, -1, [2, 3], ["scrooge", "marley", "fezziwig", "london"]),
    (1, 0, -1, [4], ["cratchit", "tim"]),
    (2, 1, 0, [], ["scrooge", "marley"]),
    (3, 1, 0, [], ["fezziwig", "london"]),
    (4, 1, 1, [], ["cratchit", "tim"]),
]


REPORTS = {
    0: ("Scrooge's business world", "Scrooge, his partner Marley and his old master Fezziwig in London."),
    1: ("The Cratchit family", "Bob Cratchit, Scrooge's clerk, and his son Tiny Tim."),
    2: (
        "Scrooge and Marley",
        "The counting-house partnership of Ebenezer Scrooge and the late Jacob Marley.",
    ),
    3: ("Fezziwig's ball in London", "Fezziwig, a jolly merchant, threw a ball for apprentices in London."),
    4: ("Bob Cratchit and Tiny Tim", "The clerk Bob Cratchit and his sick son Tiny Tim."),
}


def eid(key: str) -> str:
    return f"ent-{key}"


def lance_vectors(table_rows: list[dict], texts: list[str], embedder, lance_schema) -> pa.Table:
    """A LanceDB table of `lance_schema(dim, model)`: the given columns, the others null, the vectors of `texts`."""
    vecs = embedder.embed(texts)
    full = lance_schema(vecs.shape[1], embedder.model_id).remove_metadata()
    arr = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1).astype(np.float32)), vecs.shape[1])
    rows = pa.Table.from_pylist(table_rows, schema=full.remove(full.get_field_index("vector")))
    return rows.append_column(full.field("vector"), arr)


def build_tiny_index(store: NamespaceStore, embedder, with_claim: bool = True) -> str:
    text = "\n\n".join(PARAGRAPHS)
    doc_id = f"doc-{store.namespace}"
    spans, pos = [], 0
    for p in PARAGRAPHS:
        start = text.index(p, pos)
        spans.append((start, start + len(p)))
        pos = start + len(p)
    units = [f"{store.namespace}-u{i}" for i in range(len(PARAGRAPHS))]
    store.write_table(
        schema.DOCUMENTS,
        pa.Table.from_pylist(
            [{"id": doc_id, "title": "carol.txt", "text": text}], schema=schema.DOCUMENTS_SCHEMA
        ),
    )
    tu = pa.Table.from_pylist(
        [
            {
                "id": u,
                "human_readable_id": i,
                "text": text[s:e],
                "document_id": doc_id,
                "start_char": s,
                "end_char": e,
                "n_tokens": 20,
            }
            for i, (u, (s, e)) in enumerate(zip(units, spans, strict=True))
        ],
        schema=schema.TEXT_UNITS_SCHEMA,
    )
    store.write_table(schema.TEXT_UNITS, tu)
    index_text_units(store, tu, store.read_table(schema.DOCUMENTS), embedder)
    ents = [
        {
            "id": eid(k),
            "human_readable_id": n,
            "title": t,
            "type": ty,
            "aliases": al,
            "description": d,
            "name_key": normalize_name(t),
            "text_unit_ids": [units[i] for i in us],
            "degree": sum(k in (a, b) for a, b, _ in EDGES),
        }
        for n, (k, (t, ty, al, d, us)) in enumerate(ENTITIES.items())
    ]
    store.write_table(schema.ENTITIES, pa.Table.from_pylist(ents, schema=schema.ENTITIES_SCHEMA))
    store.write_table(
        schema.RELATIONSHIPS,
        pa.Table.from_pylist(
            [
                {
                    "id": f"rel-{a}-{b}",
                    "human_readable_id": n,
                    "source": ENTITIES[a][0],
                    "target": ENTITIES[b][0],
                    "description": RELATIONSHIP_DESCRIPTIONS[(a, b)],
                    "source_id": eid(a),
                    "target_id": eid(b),
                    "weight": w,
                }
                for n, (a, b, w) in enumerate(EDGES)
            ],
            schema=schema.RELATIONSHIPS_SCHEMA,
        ),
    )
    store.write_table(schema.COMMUNITIES, communities_table())
    store.write_table(
        schema.COMMUNITY_REPORTS,
        pa.Table.from_pylist(
            [{"community": c, "title": t, "summary": s} for c, (t, s) in REPORTS.items()],
            schema=schema.COMMUNITY_REPORTS_SCHEMA,
        ),
    )
    store.replace_lance_table(
        schema.LANCE_ENTITIES,
        lance_vectors(
            [{"id": e["id"]} for e in ents],
            [f"{e['title']}: {e['description']}" for e in ents],
            embedder,
            schema.lance_entities_schema,
        ),
    )
    levels = {c: lv for c, lv, *_ in COMMUNITIES}
    store.replace_lance_table(
        schema.LANCE_COMMUNITY_REPORTS,
        lance_vectors(
            # as report_embeddings writes it: the report's text beside its vector
            [{"community": c, "level": levels[c], "title": t, "summary": s} for c, (t, s) in REPORTS.items()],
            [s for _, s in REPORTS.values()],
            embedder,
            schema.lance_community_reports_schema,
        ),
    )
    if with_claim:
        quote = "Marley had been dead seven years."
        start = text.index(quote)
        store.write_table(
            schema.COVARIATES,
            pa.Table.from_pylist(
                [
                    {
                        "id": f"claim-{store.namespace}",
                        "human_readable_id": 0,
                        "subject_id": "Jacob Marley",
                        "type": "DEATH",
                        "description": "Jacob Marley died seven years before.",
                        "status": "TRUE",
                        "subject_entity_id": eid("marley"),
                        "object_entity_id": None,
                        "source_text": quote,
                        "text_unit_id": units[0],
                        "document_id": doc_id,
                        "start_char": start,
                        "end_char": start + len(quote),
                    }
                ],
                schema=schema.COVARIATES_SCHEMA,
            ),
        )
    return text


def communities_table(leaf_units: list[str] | None = None) -> pa.Table:
    """The hand-built communities; `leaf_units`: the text units each leaf community holds (a column global
    search reads; left null without it, as the local-search graph has it)."""
    return pa.Table.from_pylist(
        [
            {
                "community": c,
                "level": lv,
                "parent": p,
                "children": ch,
                "entity_ids": [eid(m) for m in mem],
                "text_unit_ids": None if leaf_units is None else [] if ch else leaf_units,
                "title": f"Community {c}",
            }
            for c, lv, p, ch, mem in COMMUNITIES
        ],
        schema=schema.COMMUNITIES_SCHEMA,
    )
