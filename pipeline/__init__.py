"""GraphRAG core: plain Python (never imports dagster), usable from a notebook, a CLI, a server or a test."""
