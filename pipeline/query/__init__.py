"""Query time over a namespace's index, one package per mode (`local`, `global_`, `drift`, `basic`) and
`common` for what they share (token packing, the index cache, the question parse, the nearest-text-units
search). Every search here takes its store, engine and embedder as arguments; `pipeline.api` builds them
from the settings for callers that start from a namespace name."""
