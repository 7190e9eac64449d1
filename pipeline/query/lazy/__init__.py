"""Lazy search: LazyGraphRAG-style relevance tests over text units and their communities."""
