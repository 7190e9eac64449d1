"""Namespaces with nothing in them: `build_empty_index` writes every table a finished index has, with no
rows, as when every stage ran on documents that yielded nothing."""

from __future__ import annotations

from pipeline.core import schema, tables
from pipeline.io.store import NamespaceStore


def build_empty_index(store: NamespaceStore, dimension: int) -> None:
    """A namespace whose stages all ran on documents that yielded nothing: every table, no rows."""
    for name, table_schema in (
        (schema.ENTITIES, schema.ENTITIES_SCHEMA),
        (schema.RELATIONSHIPS, schema.RELATIONSHIPS_SCHEMA),
        (schema.COMMUNITIES, schema.COMMUNITIES_SCHEMA),
        (schema.COMMUNITY_REPORTS, schema.COMMUNITY_REPORTS_SCHEMA),
        (schema.TEXT_UNITS, schema.TEXT_UNITS_SCHEMA),
    ):
        store.write_table(name, tables.to_table([], table_schema))
    store.replace_lance_table(
        schema.LANCE_COMMUNITY_REPORTS, schema.lance_community_reports_schema(dimension, "").empty_table()
    )
    store.replace_lance_table(
        schema.LANCE_TEXT_UNITS, schema.lance_text_units_schema(dimension).empty_table()
    )
