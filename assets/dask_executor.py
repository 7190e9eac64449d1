"""The dask executor: every step of a run is a task on a dask.distributed cluster (dagster-dask).

dagster-dask 0.29's executor hands its step arguments (the run, the known execution state: Dagster
records) to `Client.submit` as they are, and dask >= 2025 walks every tuple argument looking for
tasks, which Dagster's records refuse ("Iteration is not allowed on `@record`"). This executor is
dagster-dask's, with those arguments packed in one opaque object; only the futures of the step's
upstream steps stay visible to dask, which is what orders the steps. Same config as dagster-dask's
`dask` executor, for the `existing` and `local` clusters. `execute_in_process` ignores executors."""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dask.distributed
from dagster import (
    DagsterEvent,
    Field,
    Permissive,
    Selector,
    StringSource,
    executor,
    multiple_process_executor_requirements,
)
from dagster import _check as check
from dagster._core.errors import raise_execution_interrupts
from dagster._core.execution.context.system import PlanOrchestrationContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._utils import iterate_with_context
from dagster_dask.executor import DaskExecutor, get_dask_resource_requirements, query_on_dask_worker


@dataclass(frozen=True)
class _StepArgs:
    """Everything a worker needs for one step, hidden from dask's argument parser."""

    args: tuple[Any, ...]


def _run_step(dependencies: list[Any], packed: _StepArgs) -> list[DagsterEvent]:
    return list(query_on_dask_worker(dependencies, *packed.args))


class PackedArgsDaskExecutor(DaskExecutor):
    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        check.invariant(
            plan_context.instance.is_persistent, "Dask execution requires a persistent DagsterInstance"
        )
        if self.cluster_type == "existing":
            cluster: Any = self.cluster_configuration["address"]
        elif self.cluster_type == "local":
            cluster = dask.distributed.LocalCluster(**self.build_dict(plan_context.job_name))
        else:
            raise ValueError(f"cluster type {self.cluster_type!r}: only 'existing' and 'local' are supported")
        instance_ref = plan_context.instance.get_ref()
        with dask.distributed.Client(cluster) as client:
            futures: dict[str, Any] = {}
            for level in execution_plan.get_steps_to_execute_by_level():
                for step in level:
                    upstream = [futures[k] for i in step.step_inputs for k in i.dependency_keys]
                    packed = _StepArgs(
                        (
                            plan_context.reconstructable_job,
                            plan_context.dagster_run,
                            plan_context.run_config,
                            [step.key],
                            instance_ref,
                            execution_plan.known_state,
                        )
                    )
                    futures[step.key] = client.submit(
                        _run_step,
                        upstream,
                        packed,
                        key=f"{plan_context.job_name}.{step.key}.{plan_context.run_id}",
                        resources=get_dask_resource_requirements(step.tags),
                        pure=False,
                    )
            done = dask.distributed.as_completed(list(futures.values()), with_results=True)
            for _future, events in iterate_with_context(raise_execution_interrupts, done):
                for event in events:
                    yield check.inst(event, DagsterEvent)


@executor(
    name="dask",
    requirements=multiple_process_executor_requirements(),
    config_schema={
        "cluster": Field(
            Selector(
                {
                    "existing": Field({"address": StringSource}, description="A running scheduler."),
                    "local": Field(Permissive(), is_required=False, description="LocalCluster kwargs."),
                }
            )
        )
    },
)
def packed_dask_executor(init_context: Any) -> PackedArgsDaskExecutor:
    ((cluster_type, cluster_configuration),) = init_context.executor_config["cluster"].items()
    return PackedArgsDaskExecutor(cluster_type, cluster_configuration)
