"""Query-time retrieval over a namespace's index: global (map-reduce) and local search."""
