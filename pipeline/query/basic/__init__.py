"""Basic search: vector RAG with an answer, the baseline every graph mode must beat."""
