"""Local search: entities in the question → graph neighbourhood → ranked communities → ranked passages → one mixed context within a token budget → an answer cited to document offsets."""
