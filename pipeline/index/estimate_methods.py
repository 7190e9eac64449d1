"""`pipeline index --estimate`'s side-by-side table: the namespace's estimate (`estimate.py`) under each
indexing method and each report mode (`PIPELINE_REPORTS`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.index.estimate import (
    CALL_LATENCY_S,
    METHODS,
    OUTPUT_TOKENS_PER_S,
    IndexEstimate,
    _text_units,
    estimate_index,
)
from pipeline.io.store import NamespaceStore
from pipeline.settings import Settings

REPORT_MODES = ("eager", "on_demand")


@dataclass
class MethodsEstimate:
    """The three methods' estimates of one namespace, side by side (`pipeline index --estimate`), under
    each report mode (`PIPELINE_REPORTS`): on_demand writes only the top level's model reports."""

    configured: str
    mode: str  # the configured report mode
    by_mode: dict[str, dict[str, IndexEstimate]]  # mode -> method -> estimate

    @property
    def estimates(self) -> dict[str, IndexEstimate]:
        """By method, in the configured report mode."""
        return self.by_mode[self.mode]

    def to_dict(self) -> dict[str, Any]:
        out = self.estimates[self.configured].to_dict()
        out["methods"] = {m: e._figures(e.total()) for m, e in self.estimates.items()}
        out["report_mode"] = self.mode
        out["report_modes"] = {
            mode: {m: e._figures(e.total()) for m, e in estimates.items()}
            for mode, estimates in self.by_mode.items()
        }
        return out

    def render(self) -> str:
        lines = [
            f"{'method':<10}{'reports':<11}{'calls':>8}{'prompt tok':>13}{'completion tok':>16}{'USD':>10}"
            f"{'minutes':>9}",
        ]
        for mode, estimates in self.by_mode.items():
            for method, e in estimates.items():
                t = e.total()
                mark = "  (configured)" if (method, mode) == (self.configured, self.mode) else ""
                lines.append(
                    f"{method:<10}{mode:<11}{t.calls:>8,}{t.prompt_tokens:>13,}{t.completion_tokens:>16,}"
                    f"{e.cost(t)[0]:>10.4f}{e.minutes(t):>9.1f}{mark}"
                )
        concurrency = self.estimates[self.configured].concurrency
        lines.append(
            f"(completion tokens and USD expected; minutes at llm_concurrency {concurrency}, "
            f"{CALL_LATENCY_S:g} s a call + {OUTPUT_TOKENS_PER_S:g} completion tokens/s; on_demand: the "
            "top level's model reports only, deeper ones on first use or `--reports eager`)"
        )
        return "\n".join([*lines, "", self.estimates[self.configured].render()])


def estimate_methods(
    namespace: str, settings: Settings, input_dir: str | Path | None = None
) -> MethodsEstimate:
    """`estimate_index` under each method and report mode (the configured one's stage overrides kept),
    text units read once. The nlp method writes no model report: its two modes are one estimate."""
    from pipeline.runtime import index_method

    store = NamespaceStore.from_settings(settings, namespace)
    units = _text_units(store, settings, input_dir)
    by_mode: dict[str, dict[str, IndexEstimate]] = {mode: {} for mode in REPORT_MODES}
    for m in METHODS:
        for mode in REPORT_MODES:
            if m == "nlp" and mode != REPORT_MODES[0]:
                by_mode[mode][m] = by_mode[REPORT_MODES[0]][m]
                continue
            by_mode[mode][m] = estimate_index(
                namespace, settings.with_overrides(index_method=m, reports=mode), units=units
            )
    return MethodsEstimate(index_method(settings), settings.reports, by_mode)
