"""`pipeline eval`: every query mode measured on a namespace's own questions, on what the model is given.

`questions` reads a questions file (JSONL, CSV or JSON; HippoRAG's and GraphRAG-Bench's shapes as they
are), `context` takes from each mode's result the context it put in front of the model, `metrics` scores
it (context recall, answer coverage) and aggregates per mode and type, `judge` asks a configured model
whether the answer is correct, `run` puts them together and `report` writes Markdown, HTML and JSON.
"""
