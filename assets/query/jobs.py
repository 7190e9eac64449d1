"""Query-time jobs."""

from dagster import AssetSelection, define_asset_job

from assets.partitions import namespace_partitions

answer_questions_job = define_asset_job(
    name="answer_saved_questions",
    selection=AssetSelection.groups("query"),
    partitions_def=namespace_partitions,
    description="Answer the saved questions of one namespace in every mode with saved answers (global: "
    "batches -> map answers -> answers; the others one asset each).",
)
