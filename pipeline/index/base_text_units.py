"""base_text_units: token-window chunks of each document with exact character offsets (GraphRAG's
create_base_text_units); the final `text_units` with their entity/relationship/claim ids is
`pipeline.index.text_units`.

Rules, in order:
0. Only a document's content is chunked: an e-book's header and licence (`pipeline.core.boilerplate`)
   stay in `documents` but reach no unit, hence no extraction, community or answer. Front matter inside
   the content (title page, headings, contents, captions, credits, speaker tags) is chunked but blanked
   for extraction. The run reports the characters each document lost to both.
1. Each document is cut into windows of `chunk_size` tokens overlapping by `chunk_overlap`, counted
   with the configured encoding; a unit keeps its document id and character offsets.
2. A unit's id is a hash of (document id, offsets): an unchanged document keeps its unit ids, so
   every later stage can reuse what it did for them. It keeps its rows too: a document the previous
   table holds, cut under the same settings and rules, is not chunked again.
3. The final `documents` takes its `text_unit_ids` from this table (`pipeline.index.documents`).
"""

from __future__ import annotations

from pipeline.core import schema
from pipeline.index.context import IndexContext
from pipeline.index.report import Json, StageReport, Stopwatch
from pipeline.ops.chunking import chunk_documents_table
from pipeline.ops.incremental import unit_delta


def run(ctx: IndexContext) -> StageReport:
    clock = Stopwatch()
    settings, store = ctx.settings, ctx.store
    docs = store.read_table(schema.INPUT_DOCUMENTS)
    before = store.first_table(schema.BASE_TEXT_UNITS, schema.TEXT_UNITS)
    previous = store.read_table(before) if before == schema.BASE_TEXT_UNITS else None
    previous_ids = store.read_table(before, ["id"]).column("id").to_pylist() if before else []
    units, docs, outside = chunk_documents_table(
        docs, settings.chunk_size, settings.chunk_overlap, settings.encoding, previous
    )
    store.write_table(schema.BASE_TEXT_UNITS, units)
    n_tokens = units.column("n_tokens").to_pylist()
    before = previous_ids
    return StageReport(
        rows=units.num_rows,
        metadata={
            **unit_delta(before, units.column("id").to_pylist()),
            "text_units": units.num_rows,
            "documents": docs.num_rows,
            "tokens": sum(n_tokens),
            "max_tokens": max(n_tokens, default=0),
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
            "encoding": settings.encoding,
            "boilerplate_chars": sum(outside.values()),
            "documents_with_boilerplate": len(outside),
            "boilerplate_chars_by_document": Json(outside),
        },
        duration_s=clock.seconds(),
    )
