"""What an auto search showed the model (`pipeline.query.common.shown`): the context of the mode it routed
to, as that mode's record reads it (auto finds the record among the registered modes, not by importing
its sibling)."""

from __future__ import annotations

from typing import Any

from pipeline.io.store import NamespaceStore
from pipeline.query.common.mode import MODES
from pipeline.query.common.shown import Context


def auto_shown(result: dict[str, Any], store: NamespaceStore) -> Context:
    routed = MODES[result["route"]]
    return routed.shown(result.get("result") or {}, store) if routed.shown else Context()
