"""The lines an offline community report writes itself instead of quoting the text ("A community of 12
entities around Scrooge.", "Its largest parts: ..."): the report writer (`pipeline.ops.reports.offline`)
opens a summary with them, and whatever quotes a report's sentences (a parent's summary, the offline
answers of global and DRIFT search) leaves them out."""

from __future__ import annotations

TEMPLATE_OPENINGS = ("A community of ", "Its largest parts: ")
