"""The vector query: the nearest text units by cosine, through the vector query tool (`pipeline.vector_tool`)."""
