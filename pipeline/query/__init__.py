"""Query time over a namespace's index: one package per mode (`basic`, `local`, `drift`, `global_`,
`lazy`, `auto`, `chunks`, `vector`), listed once in `registry`, and `common` for what they share. A mode
never imports another (`tests/test_layout.py`); auto finds the modes it routes to in its scope. Every
search here takes its store, engine and embedder as arguments; `pipeline.api` builds them from the
settings for callers that start from a namespace name."""
