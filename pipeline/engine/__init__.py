"""The engine of LLM tasks: `task.py` (what a task is), `base.py` (the `Engine` protocol), `offline.py`
(no model), `llm.py` (through the LLM client). `pipeline.runtime.make_engine` chooses one; nothing else
does. The tasks themselves live beside their stages; this package imports none of them."""
