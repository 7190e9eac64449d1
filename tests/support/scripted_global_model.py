"""A scripted model for global search, for a fault proxy's responder: a map request gets one scored point
about Scrooge and Marley, a reduce request (its user message holds "Partial answers:") a cited answer."""

from __future__ import annotations

import json


def scripted_model(request: dict) -> str:
    user = request["messages"][-1]["content"]
    if "Partial answers:" in user:
        return json.dumps({"answer": "Scrooge ran the counting-house with Marley [Communities: 2]"})
    point = {"description": "Scrooge and Marley kept a counting-house.", "score": 80, "communities": []}
    return json.dumps({"points": [point]})
