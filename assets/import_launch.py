"""Launch the `import_graphrag` job in this process, as `assets.launch` does `index_namespace`."""

from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance

from assets.indexing.graphrag_import import JOB
from assets.launch import add_namespace, ensure_dagster_home
from assets.namespace_lock import exclusive_namespace, holder_tags
from assets.runs import IndexRunResult, summarize_run


def run_import(
    namespace: str,
    source: str,
    instance: DagsterInstance | None = None,
    on_event: Callable[[str], None] | None = None,
) -> IndexRunResult:
    """Run `import_graphrag` for `namespace` in this process, one run per namespace at a time."""
    from assets.definitions import defs

    if instance is None:
        ensure_dagster_home()
        instance = DagsterInstance.get()
    add_namespace(instance, namespace)
    with exclusive_namespace(instance, namespace, on_wait=on_event):
        result = defs.resolve_job_def(JOB).execute_in_process(
            partition_key=namespace,
            instance=instance,
            run_config={"ops": {"graphrag_import": {"config": {"source": str(Path(source).resolve())}}}},
            tags=holder_tags(),
            raise_on_error=False,
        )
    return summarize_run(result, on_event)
