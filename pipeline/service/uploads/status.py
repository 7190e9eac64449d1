"""What the service's records add to a namespace's documents: queued, parsing, deleted and failed runs.

`UploadState.merge` takes the committed index's files (`pipeline.service.documents.indexed_files`) and
lays over each file the state of its last change through the API: the run that takes it in is queued
(`queued`), in flight (`parsing`), or failed (`failed`, reason `run_<why>`: the document is retried with
POST .../documents/{id}/retry); a delete is `deleted`. A file of the input folder that no run has read
yet is `queued`. Once the run has succeeded, the index says what became of the file.
"""

from __future__ import annotations

from typing import Any

from pipeline.ops.input_folder import scan
from pipeline.service.uploads import changes
from pipeline.service.uploads.folders import input_folder
from pipeline.service.uploads.runs import IndexRuns
from pipeline.settings import Settings


def input_files(settings: Settings, namespace: str) -> dict[str, int]:
    """The input folder's readable files, by their place in it, with their sizes."""
    folder = input_folder(settings, namespace)
    if not folder.is_dir():
        return {}
    return {e.rel: e.stat.st_size for e in scan(folder) if e.readable and e.stat is not None}


class UploadState:
    """One reading of a namespace's change log, runs and input folder."""

    def __init__(self, settings: Settings, namespace: str, runs: IndexRuns) -> None:
        self.files = input_files(settings, namespace)
        self.last = changes.latest(settings, namespace)
        # only the runs that documents' last changes name: a namespace's history grows, a list is read often
        named = {entry["run"] for entry in self.last.values() if entry.get("run")}
        found = ((run_id, runs.record(namespace, run_id)) for run_id in sorted(named))
        self.runs = {run_id: record for run_id, record in found if record is not None}

    def merge(self, indexed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from pipeline.service.documents import _entry

        out = dict(indexed)
        for name, size in self.files.items():
            if name not in out:
                out[name] = _entry(name, size=size, index_ids=[])  # queued: no run has read it yet
        for entry in self.last.values():
            name = entry["name"]
            doc = out.get(name) or _entry(name, index_ids=[])
            run = self.runs.get(entry["run"] or "")
            doc = {**doc, "run": entry["run"], "changed_at": entry["at"], "change": entry["action"]}
            if entry.get("size") is not None and entry["action"] != "delete":
                doc["size"] = entry["size"]
            doc.update(self._status(entry, run, name in indexed, name in self.files))
            if run is not None and run["status"] == "succeeded" and doc["status"] == "indexed":
                doc["last_indexed"] = run["ended_at"]
            out[name] = doc
        return out

    def _status(
        self, entry: dict[str, Any], run: dict[str, Any] | None, in_index: bool, in_folder: bool
    ) -> dict[str, Any]:
        state = run["status"] if run is not None else None
        if entry["action"] == "delete":
            # Deleted at once for the reader; `removed` says whether the index has let go of it yet.
            return {"status": "deleted", "reason": None, "removed": not in_index and state == "succeeded"}
        if state == "queued":
            return {"status": "queued", "reason": None}
        if state == "running":
            return {"status": "parsing", "reason": None}
        if state == "failed":
            failures = run.get("failures") or []
            return {
                "status": "failed",
                "reason": f"run_{run.get('reason') or 'failed'}",
                "detail": failures[0] if failures else None,
                "retryable": True,
            }
        if state == "succeeded" and in_folder and not in_index:
            return {
                "status": "failed",
                "reason": "not_indexed",
                "detail": "the run read the file but the index holds no document of it (its text may be "
                "another document's)",
            }
        return {}  # the index's own verdict stands
