"""What the query modes share: token-budgeted packing, the per-process index cache, the question parse and the nearest-text-units search."""
