"""The strict table writer: rows become a table only when their columns are exactly their schema's.

`pa.Table.from_pylist(rows, schema=...)` fills a column the rows lack with nulls and drops a key the
schema lacks, so a column added to a schema but not to the code computing it was written all-null
with every test green. Writers build their tables with `to_table`, and the store checks every table
it writes with `check_stored_table` / `check_lance_table` against the registry below.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from pipeline.core.schema import (
    BASE_TEXT_UNITS,
    COMMUNITIES,
    COMMUNITIES_SCHEMA,
    COMMUNITY_REPORTS,
    COMMUNITY_REPORTS_SCHEMA,
    COVARIATES,
    COVARIATES_SCHEMA,
    DESCRIPTION_SUMMARIES,
    DESCRIPTION_SUMMARIES_SCHEMA,
    DOCUMENTS,
    DOCUMENTS_SCHEMA,
    ENTITIES,
    ENTITIES_SCHEMA,
    EXTRACTED_GRAPH,
    EXTRACTED_GRAPH_SCHEMA,
    FAILED_EXTRACTIONS,
    FAILED_EXTRACTIONS_SCHEMA,
    FAILED_REPORTS,
    FAILED_REPORTS_SCHEMA,
    INGEST_ERRORS,
    INGEST_ERRORS_SCHEMA,
    INPUT_DOCUMENTS,
    LANCE_COMMUNITY_REPORTS,
    LANCE_ENTITIES,
    LANCE_MS_COMMUNITY_FULL_CONTENT,
    LANCE_MS_ENTITY_DESCRIPTION,
    LANCE_MS_TEXT_UNIT_TEXT,
    LANCE_TEXT_UNIT_PIECES,
    LANCE_TEXT_UNITS,
    QUERY_GLOBAL_ANSWERS,
    QUERY_GLOBAL_ANSWERS_SCHEMA,
    QUERY_GLOBAL_BATCHES,
    QUERY_GLOBAL_BATCHES_SCHEMA,
    QUERY_GLOBAL_MAP_ANSWERS,
    QUERY_GLOBAL_MAP_ANSWERS_SCHEMA,
    RELATIONSHIPS,
    RELATIONSHIPS_SCHEMA,
    TEXT_UNITS,
    TEXT_UNITS_SCHEMA,
    lance_community_full_content_schema,
    lance_community_reports_schema,
    lance_entities_schema,
    lance_entity_description_schema,
    lance_text_unit_pieces_schema,
    lance_text_unit_text_schema,
    lance_text_units_schema,
)
from pipeline.core.shards import shard_base


class SchemaError(ValueError):
    """Rows or a table whose columns are not exactly those of their schema."""

    def __init__(
        self,
        table: str,
        missing: Sequence[str] = (),
        extra: Sequence[str] = (),
        mismatched: Mapping[str, tuple[str, str]] | None = None,
        where: str = "",
    ) -> None:
        self.table = table
        self.missing = list(missing)
        self.extra = list(extra)
        self.mismatched = dict(mismatched or {})
        problems = []
        if self.missing:
            problems.append(f"missing {self.missing} (in the schema, not computed)")
        if self.extra:
            problems.append(f"extra {self.extra} (computed, not in the schema)")
        problems += [
            f"column {column!r} is {got}, the schema says {want}"
            for column, (got, want) in self.mismatched.items()
        ]
        super().__init__(
            f"{table}{where} does not match its schema in pipeline/core/schema.py: " + "; ".join(problems)
        )


TABLE_SCHEMAS: dict[str, pa.Schema] = {
    INPUT_DOCUMENTS: DOCUMENTS_SCHEMA,
    DOCUMENTS: DOCUMENTS_SCHEMA,
    INGEST_ERRORS: INGEST_ERRORS_SCHEMA,
    BASE_TEXT_UNITS: TEXT_UNITS_SCHEMA,
    TEXT_UNITS: TEXT_UNITS_SCHEMA,
    EXTRACTED_GRAPH: EXTRACTED_GRAPH_SCHEMA,
    FAILED_EXTRACTIONS: FAILED_EXTRACTIONS_SCHEMA,
    ENTITIES: ENTITIES_SCHEMA,
    RELATIONSHIPS: RELATIONSHIPS_SCHEMA,
    DESCRIPTION_SUMMARIES: DESCRIPTION_SUMMARIES_SCHEMA,
    COVARIATES: COVARIATES_SCHEMA,
    COMMUNITIES: COMMUNITIES_SCHEMA,
    COMMUNITY_REPORTS: COMMUNITY_REPORTS_SCHEMA,
    FAILED_REPORTS: FAILED_REPORTS_SCHEMA,
    QUERY_GLOBAL_BATCHES: QUERY_GLOBAL_BATCHES_SCHEMA,
    QUERY_GLOBAL_MAP_ANSWERS: QUERY_GLOBAL_MAP_ANSWERS_SCHEMA,
    QUERY_GLOBAL_ANSWERS: QUERY_GLOBAL_ANSWERS_SCHEMA,
}
"""Parquet table name -> schema (a shard's part under shards/ takes its table's)."""

INDEX_TABLES: frozenset[str] = frozenset(name for name in TABLE_SCHEMAS if not name.startswith("query_"))
"""The Parquet tables an index run writes; the query_* tables are written by queries, at any time."""

# The embedding model in the metadata of two of these is not part of the check: only columns are.
LANCE_SCHEMAS: dict[str, Callable[[int], pa.Schema]] = {
    LANCE_TEXT_UNITS: lance_text_units_schema,
    LANCE_TEXT_UNIT_PIECES: lance_text_unit_pieces_schema,
    LANCE_COMMUNITY_REPORTS: lambda dim: lance_community_reports_schema(dim, ""),
    LANCE_ENTITIES: lambda dim: lance_entities_schema(dim, ""),
    LANCE_MS_ENTITY_DESCRIPTION: lance_entity_description_schema,
    LANCE_MS_COMMUNITY_FULL_CONTENT: lance_community_full_content_schema,
    LANCE_MS_TEXT_UNIT_TEXT: lance_text_unit_text_schema,
}
"""LanceDB table name -> schema for a vector dimension."""


ANSWER_TABLES: dict[str, pa.Schema] = {}
"""A query mode's saved-answer table -> schema, registered by the query registry with its mode (the
record declares its columns: `pipeline.query.common.mode.Saved`), so a new mode's table needs no line here."""


def registered_schema(name: str) -> pa.Schema | None:
    """The schema of the Parquet table stored as `name`, or None when none is registered."""
    base = shard_base(name) or name
    return TABLE_SCHEMAS.get(base) or ANSWER_TABLES.get(base)


def vector_dimension(schema: pa.Schema) -> int | None:
    """The size of a schema's fixed-size `vector` column, or None when it has none."""
    if "vector" not in schema.names:
        return None
    vector = schema.field("vector").type
    return vector.list_size if pa.types.is_fixed_size_list(vector) else None


def schema_name(schema: pa.Schema) -> str:
    """The registered name of `schema`, for messages; its column list when it is not registered."""
    for name, registered in TABLE_SCHEMAS.items():
        if registered is schema or registered.equals(schema):
            return name
    dim = vector_dimension(schema)
    if dim is not None:
        for name, make in LANCE_SCHEMAS.items():
            if make(dim).equals(schema):
                return f"LanceDB {name}"
    return f"schema ({', '.join(schema.names)})"


def to_table(
    rows: Sequence[Mapping[str, Any]] | Mapping[str, Any], schema: pa.Schema, *, name: str | None = None
) -> pa.Table:
    """Rows (dicts) or columns (name -> list or array) as a table of `schema`, cast to its types.

    Raises SchemaError when a row's keys or the columns' names are not exactly the schema's fields,
    down to the fields of struct values (extraction's raw records). No rows give an empty table."""
    label = name or schema_name(schema)
    nested = [(f.name, f.type) for f in schema if _has_struct(f.type)]
    if isinstance(rows, Mapping):
        if rows.keys() != set(schema.names):
            raise _difference(rows.keys(), schema.names, label, " columns")
        for column, type_ in nested:
            values = rows[column]
            if isinstance(values, list):
                for i, value in enumerate(values):
                    _check_value(value, type_, label, f"{column}[{i}]")
        return pa.table(dict(rows), schema=schema)
    listed = list(rows)  # read twice (checked, then converted): a generator would be empty the second time
    expected = set(schema.names)
    for i, row in enumerate(listed):
        if row.keys() != expected:
            raise _difference(row.keys(), schema.names, label, f" row {i}")
        for column, type_ in nested:
            _check_value(row[column], type_, label, f"row {i}, {column}")
    return pa.Table.from_pylist(listed, schema=schema)


def check_table(table: pa.Table, schema: pa.Schema, *, name: str | None = None) -> pa.Table:
    """`table` itself when its columns are exactly `schema`'s, with its types; SchemaError otherwise.

    For tables built without `to_table` (concatenated, set_column, read back). Column order, schema
    metadata and the names of list items are not compared: readers go by column name."""
    got = table.schema
    label = name or schema_name(schema)
    if set(got.names) != set(schema.names):
        raise _difference(got.names, schema.names, label)
    mismatched = {
        f.name: (str(got.field(f.name).type), str(f.type))
        for f in schema
        if not got.field(f.name).type.equals(f.type)
    }
    if mismatched:
        raise SchemaError(label, mismatched=mismatched)
    return table


def check_stored_table(name: str, table: pa.Table) -> None:
    """SchemaError unless `table` fits the schema registered for the Parquet table `name` (if any)."""
    registered = registered_schema(name)
    if registered is not None:
        check_table(table, registered, name=name)


def check_lance_table(name: str, table: pa.Table) -> None:
    """SchemaError unless `table` fits the schema registered for the LanceDB table `name` (if any),
    for the dimension of its own vectors."""
    make = LANCE_SCHEMAS.get(name)
    if make is not None:
        # a table without a fixed-size vector column is reported against dimension 1's vector type
        check_table(table, make(vector_dimension(table.schema) or 1), name=f"LanceDB {name}")


def _difference(keys: Iterable[str], names: Sequence[str], label: str, where: str = "") -> SchemaError:
    present, known = set(keys), set(names)
    missing = [n for n in names if n not in present]
    extra = sorted(present - known)
    return SchemaError(label, missing, extra, where=where)


def _has_struct(type_: pa.DataType) -> bool:
    if pa.types.is_struct(type_):
        return True
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return _has_struct(type_.value_type)
    return False


@functools.cache
def _struct_fields(type_: pa.DataType) -> tuple[list[str], frozenset[str], list[pa.Field]]:
    """(field names, as a set, the fields holding structs) of a struct type: every row checks them, so
    they are worked out once per type."""
    fields = [type_.field(i) for i in range(type_.num_fields)]
    names = [f.name for f in fields]
    return names, frozenset(names), [f for f in fields if _has_struct(f.type)]


def _check_value(value: Any, type_: pa.DataType, label: str, path: str) -> None:
    if value is None:
        return
    if pa.types.is_struct(type_):
        if not isinstance(value, Mapping):
            return  # not a dict: Arrow's conversion reports the wrong type itself
        names, name_set, nested = _struct_fields(type_)
        if value.keys() != name_set:
            raise _difference(value.keys(), names, label, f" {path}")
        for f in nested:
            _check_value(value[f.name], f.type, label, f"{path}.{f.name}")
    elif _has_struct(type_):
        for i, item in enumerate(value):
            _check_value(item, type_.value_type, label, f"{path}[{i}]")
