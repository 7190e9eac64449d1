"""The code location: the `GraphRAGIndex` component with its defaults (every setting from PIPELINE_*
env vars / YAML), so this repository and a `dg` project build their definitions the same way."""

from assets.component import GraphRAGIndex

defs = GraphRAGIndex().definitions()
