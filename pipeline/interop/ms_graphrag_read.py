"""Reading the output folder that Microsoft GraphRAG's `graphrag index` writes (2.x and 3.x).

The folder holds one Parquet file per table (`documents`, `text_units`, `entities`, `relationships`,
`communities`, `community_reports`, and `covariates` when claims were extracted) and a `lancedb/`
folder of vectors. Every table is read and its columns checked before anything else happens, so a
folder missing a table or a column fails with the file and column named and nothing written.

Versions: 3.x text units have `document_id`; 2.x ones a `document_ids` list (one document each under
2.x's default chunking by document), and 2.x names its vector tables `default-entity-description`,
`default-community-full_content` and `default-text_unit-text` instead of 3.x's `entity_description`,
`community_full_content` and `text_unit_text`. Their vectors are not read: they come from another
model than ours, and the import embeds again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REQUIRED_TABLES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports")
OPTIONAL_TABLES = ("covariates",)

# The columns the import cannot do without (the others get GraphRAG's defaults or are recomputed).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("id", "text"),
    "text_units": ("id", "text"),
    "entities": ("id", "title"),
    "relationships": ("source", "target"),
    "communities": ("community", "level", "entity_ids"),
    "community_reports": ("community", "full_content"),
    "covariates": ("subject_id", "text_unit_id"),
}

VECTOR_TABLES = {
    "3.x": ("entity_description", "community_full_content", "text_unit_text"),
    "2.x": ("default-entity-description", "default-community-full_content", "default-text_unit-text"),
}


class GraphRAGImportError(ValueError):
    """The folder is not a Microsoft GraphRAG output folder the import can read; nothing was written."""


@dataclass
class GraphRAGOutput:
    folder: Path
    version: str  # "3.x" | "2.x", from the text units' document column and the vector table names
    rows: dict[str, list[dict[str, Any]]]  # table -> its rows (covariates: [] when absent)
    vector_tables: list[str] = field(default_factory=list)  # their LanceDB tables, for the record

    def table(self, name: str) -> list[dict[str, Any]]:
        return self.rows.get(name, [])


def _read(path: Path, name: str) -> pa.Table:
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise GraphRAGImportError(f"{path}: cannot read the {name!r} table: {exc}") from exc


def read_output(folder: str | Path) -> GraphRAGOutput:
    """Every table of a GraphRAG output folder, checked; GraphRAGImportError naming what is missing."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GraphRAGImportError(
            f"{folder} is not a folder (give the `output` folder `graphrag index` wrote)"
        )
    missing = [f"{t}.parquet" for t in REQUIRED_TABLES if not (folder / f"{t}.parquet").is_file()]
    if missing:
        raise GraphRAGImportError(
            f"{folder} is not a complete Microsoft GraphRAG output folder: missing {', '.join(missing)} "
            f"(an import needs {', '.join(f'{t}.parquet' for t in REQUIRED_TABLES)}); nothing was written"
        )
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in (*REQUIRED_TABLES, *OPTIONAL_TABLES):
        path = folder / f"{name}.parquet"
        if not path.is_file():
            rows[name] = []
            continue
        table = _read(path, name)
        needed = list(REQUIRED_COLUMNS[name])
        if name == "text_units":
            needed.append("document_id" if "document_ids" not in table.column_names else "document_ids")
        absent = [c for c in needed if c not in table.column_names]
        if absent:
            raise GraphRAGImportError(
                f"{path}: the {name!r} table lacks column(s) {', '.join(absent)} "
                f"(it has {', '.join(table.column_names)}); nothing was written"
            )
        rows[name] = table.to_pylist()
    lance = folder / "lancedb"
    vectors = sorted(p.name.removesuffix(".lance") for p in lance.glob("*.lance")) if lance.is_dir() else []
    two = "document_id" not in _columns(folder / "text_units.parquet") or any(
        v in VECTOR_TABLES["2.x"] for v in vectors
    )
    return GraphRAGOutput(folder, "2.x" if two else "3.x", rows, vectors)


def _columns(path: Path) -> list[str]:
    return pq.read_schema(path).names
