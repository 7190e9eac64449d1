"""Which stored community reports stand in for a model report not written yet.

With `PIPELINE_REPORTS=on_demand` the index writes model reports for the top level only; a deeper
community gets an extractive report in its place, marked `model = DEFERRED`, and the first query that
needs it has the model's written (`pipeline.index.community_reports_on_demand`). Indexing writes the
mark and querying reads it, so it lives here: a query can tell a stand-in from a community too small to
be worth a model's report (`model = EXTRACTIVE`) without the index-time threshold that decided it.
"""

from __future__ import annotations

import pyarrow as pa

# The method (and model) of a report written without a model: a small community's, or a stand-in's method
EXTRACTIVE = "extractive"
# The model of a stand-in: an extractive report in place of a deferred model report
DEFERRED = "deferred"


def deferred(reports: pa.Table) -> set[int]:
    """The communities whose stored report is a stand-in for a deferred model report."""
    if "model" not in reports.column_names:
        return set()
    rows = reports.select(["community", "model"]).to_pylist()
    return {r["community"] for r in rows if r["model"] == DEFERRED}
