"""input_documents: read the namespace's input folder; id = sha256 of the text; bad files go to
ingest_errors. The final `documents` table (with `text_unit_ids`) is `pipeline.index.documents`.

Rules, in order:
1. The folder is `input_dir` when given, else `<input_root>/<namespace>/`.
2. Every readable document becomes a row; every bad file or row (binary, non-UTF-8, empty, huge, no
   text column) becomes an `ingest_errors` row naming the file (and row) and why, and never stops
   the rest.
3. The delta against the previous `input_documents` table (`documents` for an index written before
   the tables were split) (added / changed / removed / unchanged) is
   reported, so a re-index says what it will redo.
4. A folder whose every file or row was rejected fails the run with the errors listed, its first line
   `N of N files rejected (see ingest_errors)` (an empty folder is not an error: it indexes nothing).
5. The stage's metadata counts `input_files`, `files_rejected` and `rows_rejected`, from which
   `pipeline index` ends with `N of M files rejected (see ingest_errors)` instead of "no failures".
"""

from __future__ import annotations

from pathlib import Path

from pipeline.core import schema
from pipeline.index.context import IndexContext
from pipeline.index.report import Markdown, StageReport, Stopwatch, md_table
from pipeline.ops.incremental import diff_documents
from pipeline.ops.ingest import IngestOptions, documents_table, errors_table, read_documents
from pipeline.parse.bounds import ParseLimits

MAX_ERRORS_LISTED = 20


class NoDocumentsError(ValueError):
    """The input folder is not empty but yielded no document: every file or row was rejected."""

    def __init__(self, message: str, files: int = 0, files_rejected: int = 0) -> None:
        super().__init__(message)
        self.files = files
        self.files_rejected = files_rejected


def ingest_options(settings) -> IngestOptions:  # noqa: ANN001 - pipeline.settings.Settings
    return IngestOptions(
        max_document_bytes=settings.max_document_bytes,
        fallback_encodings=tuple(settings.fallback_encodings),
        id_column=settings.id_column,
        title_column=settings.title_column,
        text_column=settings.text_column,
        parse_cache_dir=_parse_cache_dir(settings),
        parse_limits=ParseLimits.from_settings(settings),
        ocr_run_max_pages=settings.ocr_run_max_pages,
        ocr_run_max_seconds=settings.ocr_run_max_seconds,
    )


def _parse_cache_dir(settings) -> str | None:  # noqa: ANN001 - pipeline.settings.Settings
    """The local cache folder for parsed files (pipeline.parse.cache); None when the caches are remote."""
    from pipeline.runtime import local_cache_folder

    try:
        return str(local_cache_folder(settings))
    except (ValueError, OSError):
        return None


def run(ctx: IndexContext, input_dir: str | Path | None = None) -> StageReport:
    clock = Stopwatch()
    folder = Path(input_dir) if input_dir else ctx.settings.input_root / ctx.namespace
    ctx.log(f"reading documents for namespace {ctx.namespace!r} from {folder}")
    result = read_documents(folder, ingest_options(ctx.settings))
    for err in result.errors:
        where = err.source_path + (f" row {err.row}" if err.row is not None else "")
        ctx.log(f"skipped {where}: {err.error_type}: {err.reason}")
    if not result.documents and result.errors:
        # rule 4: files were there and none gave a document; an empty index would look like success
        lines = [
            f"{e.source_path}{f' row {e.row}' if e.row is not None else ''}: {e.error_type}: {e.reason}"
            for e in result.errors[:MAX_ERRORS_LISTED]
        ]
        more = len(result.errors) - len(lines)
        ctx.store.write_table(schema.INGEST_ERRORS, errors_table(result.errors))  # for inspection
        raise NoDocumentsError(
            f"{result.rejection_line()}: {folder} holds {len(result.errors)} input item(s) and none "
            "became a document:\n  " + "\n  ".join(lines) + (f"\n  ... and {more} more" if more > 0 else ""),
            files=result.files,
            files_rejected=result.files_rejected,
        )
    store = ctx.store
    docs = documents_table(result.documents)
    before = store.first_table(schema.INPUT_DOCUMENTS, schema.DOCUMENTS)
    previous = store.read_table(before, ["id", "source_path", "title"]) if before else None
    delta = diff_documents(previous, docs)
    store.write_table(schema.INPUT_DOCUMENTS, docs)
    store.write_table(schema.INGEST_ERRORS, errors_table(result.errors))
    errors = [e.__dict__ for e in result.errors]
    return StageReport(
        rows=len(result.documents),
        metadata={
            **delta.as_metadata(),
            "documents": len(result.documents),
            "errors": len(result.errors),
            "duplicates_skipped": result.duplicates,
            "input_files": result.files,
            "files_rejected": result.files_rejected,
            "rows_rejected": result.rows_rejected,
            "bytes": sum(d.n_bytes for d in result.documents),
            "input_dir": str(folder),
            "ingest_errors": Markdown(
                md_table(errors, ["source_path", "row", "error_type", "reason"]) if errors else "No errors."
            ),
        },
        duration_s=clock.seconds(),
    )
