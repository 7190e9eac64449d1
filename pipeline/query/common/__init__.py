"""What the query modes share, importing none of them: the mode record and the scope; the answer context
and its citations; local retrieval (the graph index, entity matching, community ranking and selection,
passage ranking, the mixed context), which local search and DRIFT's follow-ups answer and lazy search
ranks passages with; the passage answer of basic and lazy search; token budgets; the per-process index
cache; the question parse; the nearest-text-units search."""
