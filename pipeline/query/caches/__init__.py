"""Per-process caches of a namespace's tables, keyed on their versions so that a rewrite is seen: the
parsed index (`index_cache`), rows by id as Arrow (`row_cache`) and vectors in memory (`vector_cache`)."""
