"""The mode contract, importing no mode: the mode record, the scope a search runs in, the events it
sends, the checks of its options, how the terminal and `pipeline eval` show a result, and the result of
the retrieval-only modes (chunks, vector)."""
