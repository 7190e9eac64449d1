"""Tool inputs and store options: top_k coercion and ``database_config`` -> a store's query parameters.

``database_config`` is keyed by store type. A store receives only its own entry, with each known key
mapped to its query parameter (Mastra's camelCase names are accepted too); keys it does not know are
dropped with a warning instead of leaking into the query (Mastra flattens every entry into every
store's call). The entry of a store type we do not know is passed through flat to every store, so a
custom store can take its own options without changes here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 10

# store type -> {config key: query parameter}
STORE_OPTIONS: dict[str, dict[str, str]] = {
    "lancedb": {
        "nprobes": "nprobes",
        "refine_factor": "refine_factor",
        "refineFactor": "refine_factor",
        "distance": "distance",
        "where": "where",
        "hybrid": "hybrid",
        "fts_column": "fts_column",
        "match_pieces": "match_pieces",
    },
    "pgvector": {
        "min_score": "min_score",
        "minScore": "min_score",
        "ef": "ef",
        "probes": "probes",
    },
    "chroma": {
        "where": "where",
        "where_document": "where_document",
        "whereDocument": "where_document",
    },
}


def coerce_top_k(value: Any, default: int = DEFAULT_TOP_K) -> int:
    """The number of results for a ``top_k`` input, as Mastra accepts it: any finite number > 0, or such a
    number as a string. A fraction rounds up (0.5 -> 1, 2.7 -> 3: at least what was asked; a store's
    limit is whole). Anything else (0, negatives, NaN, infinity, booleans, other text, None) gives the
    default, 10.

    | input | 3 | "4" | " 5 " | 2.7 | 0.5 | "0.5" | 0 | -1 | nan | inf | True | "x" | None |
    | top_k | 3 | 4   | 5     | 3   | 1   | 1     | 10| 10 | 10  | 10  | 10   | 10  | 10   |
    """
    if isinstance(value, bool):
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return default
    if isinstance(value, int | float) and math.isfinite(value) and value > 0:
        return math.ceil(value)
    return default


def store_query_params(store_type: str, database_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The query parameters ``database_config`` gives a store of ``store_type``."""
    if not database_config:
        return {}
    params: dict[str, Any] = {}
    for key, entry in database_config.items():
        if key in STORE_OPTIONS or not isinstance(entry, Mapping):
            continue
        params.update(entry)  # an unknown store type: passed through flat
    own = database_config.get(store_type)
    known = STORE_OPTIONS.get(store_type)
    if isinstance(own, Mapping):
        if known is None:
            params.update(own)
        else:
            for key, value in own.items():
                if key in known:
                    params[known[key]] = value
                else:
                    log.warning("database_config[%r]: unknown option %r ignored", store_type, key)
    return params
