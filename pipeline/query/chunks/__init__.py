"""Chunk-graph search: a random walk with restart over the chunk-similarity graph (`pipeline.chunk_graph`)."""
