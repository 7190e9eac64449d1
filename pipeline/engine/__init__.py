"""The engine of LLM tasks: `base.py` (the `Engine` protocol and task models), `offline.py` (no model),
`llm.py` (through the LLM client). `pipeline.runtime.make_engine` chooses one; nothing else does."""
