"""Local search: local retrieval (`pipeline.query.retrieval.local_retrieval`: entities in the question → graph
neighbourhood → ranked communities → ranked passages → one mixed context within a token budget) answered
by local's own answer task, cited to document offsets."""
