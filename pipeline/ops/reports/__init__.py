"""Community reports: bottom-up summaries of the hierarchical communities, reused by fingerprint.

- `models.py`: the report task's input (a budgeted context) and output (GraphRAG's report JSON).
- `context.py`: a community's context within the token budget, with sub-community reports substituted
  for raw rows when its own context does not fit.
- `fingerprint.py`: the hash of everything a report depends on.
- `offline.py`: the extractive report the offline engine writes; `task.py`: the `REPORT` task.
- `build.py`: the bottom-up run over all levels, and the stage that reads and writes the store.
"""
