"""Graph retrieval, which local search answers from, DRIFT's follow-ups reuse and lazy search ranks
passages with: the question parse (`intent`), the graph index, entity matching, community ranking and
selection, passage and sentence ranking, the mixed context, and the nearest-text-units search over
LanceDB (`nearest`). A new retrieval signal belongs here; it imports no mode."""
