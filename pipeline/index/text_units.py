"""text_units: GraphRAG's final text units table, the base text units with the ids of the entities,
relationships and claims found in each (create_final_text_units).

Rules:
1. Every row of `base_text_units`, in its order, with `entity_ids`, `relationship_ids` and
   `covariate_ids` filled by reverse map of those tables' text unit ids, each list sorted.
2. This stage is the table's one writer: resolution and claims write their own tables, so the last
   materialization of `text_units` is the step that last changed it.
"""

from __future__ import annotations

from pipeline.core import schema
from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport, Stopwatch
from pipeline.ops.resolution import link_text_units


def run(ctx: IndexContext) -> StageReport:
    clock = Stopwatch()
    store = ctx.store
    units = store.read_table(schema.BASE_TEXT_UNITS)
    links = (
        ("entity_ids", schema.ENTITIES, "text_unit_ids"),
        ("relationship_ids", schema.RELATIONSHIPS, "text_unit_ids"),
        ("covariate_ids", schema.COVARIATES, "text_unit_id"),
    )
    for column, table, unit_column in links:
        units = link_text_units(units, column, store.read_table(table, ["id", unit_column]), unit_column)
    store.write_table(schema.TEXT_UNITS, units)
    return StageReport(
        rows=units.num_rows,
        metadata={
            "text_units": units.num_rows,
            **{
                f"text_units_with_{column}": sum(1 for ids in units.column(column).to_pylist() if ids)
                for column, _, _ in links
            },
        },
        duration_s=clock.seconds(),
    )
