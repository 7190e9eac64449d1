"""The changes a write key makes to a namespace, each logged and handed to the namespace's next run."""

from __future__ import annotations

import contextlib
import time
from typing import IO, Any

from pipeline.service.auth import Principal
from pipeline.service.errors import Forbidden, ServiceError
from pipeline.service.uploads import changes, intake
from pipeline.service.uploads.folders import ManagedNamespaces
from pipeline.service.uploads.runs import Command, IndexRuns, index_command
from pipeline.service.uploads.status import UploadState
from pipeline.settings import Settings


class NotFailed(ServiceError):
    status, code = 409, "not_failed"


class Uploads:
    """Managed namespaces, their index runs and the changes (upload, replace, delete, retry)."""

    def __init__(self, settings: Settings, command: Command = index_command) -> None:
        self.settings = settings
        self.managed = ManagedNamespaces(settings)
        self.runs = IndexRuns(settings, command)
        self.started = time.time()

    def state(self, namespace: str) -> UploadState:
        return UploadState(self.settings, namespace, self.runs)

    def documents(self, caller: Principal, store: Any) -> dict[str, Any]:
        """The namespace's documents with their status (`pipeline.service.documents`), and whether
        `caller` may change them; every door lists them through here."""
        from pipeline.service.documents import document_list

        listed = document_list(store, self.state(store.namespace))
        return {**listed, "writable": self.may_write(caller, store.namespace)}

    def may_write(self, caller: Principal, namespace: str) -> bool:
        return caller.may_write(namespace) and self.managed.writable(namespace)

    def check_write(self, caller: Principal, namespace: str) -> str:
        """The namespace, when `caller` may change it (403 otherwise: a read-only key, another tenant's
        namespace, an operator's folder not open to uploads)."""
        caller.authorize_write(namespace)
        self.managed.check_writable(namespace)
        return namespace

    def create_namespace(self, caller: Principal, namespace: str) -> dict[str, Any]:
        if not caller.writes_all:
            raise Forbidden("creating a namespace takes a key with `write: true`")
        return self.managed.create(namespace, caller.tenant, caller.key_id)

    def receive(self, caller: Principal, namespace: str, name: str | None, source: IO[bytes]) -> Any:
        """One uploaded part, received beside the folder (`intake.receive`); the key is checked first."""
        self.check_write(caller, namespace)
        return intake.receive(self.settings, namespace, name, source)

    def add(
        self, caller: Principal, namespace: str, parts: list[intake.Incoming], replacing: str | None = None
    ) -> dict[str, Any]:
        """Place received parts into the folder, log them and ask for the run; the 202's body."""
        self.check_write(caller, namespace)
        action = "replace" if replacing else "upload"
        try:
            with intake.namespace_lock(namespace):
                known = {
                    e["name"]: e["sha256"] for e in changes.read(self.settings, namespace) if e["sha256"]
                }
                written, duplicates = intake.place(
                    self.settings, namespace, parts, replacing=replacing, known=known
                )
                entries = [
                    changes.change(action, p.name, caller, size=p.size, sha256=p.sha256, kind=p.kind)
                    for p in written
                ]
                run = self._log_and_run(namespace, entries)
        finally:
            for part in parts:
                part.discard()  # what was not moved into the folder
        listed = [
            {"id": e["document"], "name": e["name"], "status": "queued", "size": e["size"], "type": e["type"]}
            for e in entries
        ]
        listed += [
            {
                "id": changes.file_id(same),
                "name": same,
                "status": "duplicate",
                "duplicate_of": same,
                "uploaded_as": part.name,
            }
            for part, same in duplicates
        ]
        return {"namespace": namespace, "documents": listed, "run": run}

    def replace(
        self, caller: Principal, namespace: str, document_id: str, part: intake.Incoming
    ) -> dict[str, Any]:
        name = intake.find(self.settings, namespace, document_id, {})
        if part.name != name:
            part.name = name  # a replacement keeps the document's place, whatever the part was called
        return self.add(caller, namespace, [part], replacing=name)

    def delete(self, caller: Principal, namespace: str, document_id: str) -> dict[str, Any]:
        from pipeline.service.uploads.folders import input_folder

        self.check_write(caller, namespace)
        with intake.namespace_lock(namespace):
            name = intake.find(self.settings, namespace, document_id, {})
            (input_folder(self.settings, namespace) / name).unlink(missing_ok=True)
            run = self._log_and_run(namespace, [changes.change("delete", name, caller)])
        self._forget_pages(namespace, name)
        return {
            "namespace": namespace,
            "documents": [{"id": document_id, "name": name, "status": "deleted"}],
            "run": run,
        }

    def _forget_pages(self, namespace: str, name: str) -> None:
        """Drop the deleted file's cached page images (`page_images`): keyed by its text's id, which no
        later document reuses unless it is the same text, they would only take space."""
        from pipeline.io.store import NamespaceStore
        from pipeline.service.documents import indexed_files
        from pipeline.service.page_source import CACHE_FOLDER

        store = NamespaceStore.from_settings(self.settings, namespace)
        if not store.exists():
            return
        for index_id in indexed_files(store.pinned()).get(name, {}).get("index_ids", []):
            for cached in store.files(f"{CACHE_FOLDER}/{index_id}"):
                store.delete_file(cached)

    def retry(self, caller: Principal, namespace: str, document_id: str | None) -> dict[str, Any]:
        """Run again the failed documents (one, or with None every one)."""
        self.check_write(caller, namespace)
        with intake.namespace_lock(namespace):
            from pipeline.io.store import NamespaceStore
            from pipeline.service.documents import document_list

            store = NamespaceStore.from_settings(self.settings, namespace)
            docs = document_list(store, self.state(namespace))["documents"]  # as the list shows them
            failed = [d for d in docs if d["status"] == "failed"]
            if document_id is not None:
                failed = [d for d in failed if d["id"] == document_id]
                if not failed:
                    intake.find(self.settings, namespace, document_id, {})  # 404 when unknown
                    raise NotFailed(
                        f"document {document_id!r} has not failed: nothing to retry",
                        detail={"id": document_id},
                    )
            entries = [changes.change("retry", d["name"], caller) for d in failed]
            run = self._log_and_run(namespace, entries) if entries else None
        listed = [{"id": e["document"], "name": e["name"], "status": "queued"} for e in entries]
        return {"namespace": namespace, "documents": listed, "run": run}

    def _log_and_run(self, namespace: str, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
        if not entries:
            return None
        run = self.runs.request(namespace, [e["id"] for e in entries], [e["document"] for e in entries])
        for entry in entries:
            entry["run"] = run["id"]
        changes.append(self.settings, namespace, entries)
        return {"id": run["id"], "status": run["status"]}

    def resume(self) -> None:
        """A new service: parts a stopped one was receiving are dropped (no upload is in flight yet), and
        the runs it left are settled (`IndexRuns.resume`)."""
        from pipeline.service.uploads.folders import state_folder

        namespaces = sorted(set(self.managed.owners()) | set(self.settings.service_upload_namespaces))
        for namespace in namespaces:
            for part in (state_folder(self.settings, namespace) / "incoming").glob("*"):
                with contextlib.suppress(FileNotFoundError):
                    if part.stat().st_mtime < self.started:  # not one this service is receiving
                        part.unlink()
        self.runs.resume(namespaces)

    def close(self) -> None:
        self.runs.close()
