"""The community report task: GraphRAG's report JSON for one community's budgeted context, written
extractively (`offline.py`) or by the model (the `COMMUNITY_REPORT` prompt). Its identity (method,
model, version) enters every report's fingerprint."""

from __future__ import annotations

from typing import Any

from pipeline import prompts
from pipeline.engine.task import Task, TaskContext
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse, ReportIdentity
from pipeline.ops.reports.offline import OFFLINE_REPORT_VERSION, offline_report


async def _offline(request: CommunityReportRequest, ctx: TaskContext) -> CommunityReportResponse:
    return offline_report(request.context)


async def _model(request: CommunityReportRequest, ctx: TaskContext) -> CommunityReportResponse:
    prompt = prompts.COMMUNITY_REPORT
    messages = prompt.messages(context=request.context.text, max_words=request.max_words)
    return await ctx.ask(prompt, messages, CommunityReportResponse)


def _offline_identity(options: Any = None) -> ReportIdentity:
    return ReportIdentity("offline", "offline", OFFLINE_REPORT_VERSION)


def _model_identity(client: Any, options: Any = None) -> ReportIdentity:
    return ReportIdentity("llm", f"{client.endpoint}/{client.model}", prompts.COMMUNITY_REPORT.version)


REPORT: Task[CommunityReportRequest, CommunityReportResponse] = Task(
    "community_report",
    offline=_offline,
    model=_model,
    limit="report",
    offline_identity=_offline_identity,
    model_identity=_model_identity,
)
