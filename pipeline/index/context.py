"""What every indexing runner is given: the namespace's store, the settings, the engine, the embedder,
and where to say how far it has got."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.embeddings.cached import CachedEmbedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.settings import Settings


def _quiet(message: str) -> None:
    pass


@dataclass
class IndexContext:
    store: NamespaceStore
    settings: Settings
    engine: Engine
    embedder: CachedEmbedder
    log: Callable[[str], None] = field(default=_quiet)
    """Progress and per-row warnings of long stages (Dagster's step log, or print)."""
    engines: dict[str, Engine] = field(default_factory=dict)
    """stage -> engine (`pipeline.runtime.make_stage_engines`); a stage not named uses `engine`."""
    method: str = ""
    """The indexing method and each stage's form, as metadata shows them ('nlp', 'fast', ...)."""
    forms: dict[str, str] = field(default_factory=dict)
    on_progress: Callable[[str, int, int], None] | None = None
    """Every (what, done, total) of a long loop, for a live display (the CLI's progress bar)."""

    @property
    def namespace(self) -> str:
        return self.store.namespace

    def engine_for(self, stage: str) -> Engine:
        """The engine of an indexing stage ("extraction", "claims", "descriptions", "reports")."""
        return self.engines.get(stage, self.engine)

    def method_metadata(self) -> dict[str, str]:
        """What every asset's metadata and every table's schema metadata say about the method."""
        if not self.method:
            return {}
        forms = ", ".join(f"{stage}={form}" for stage, form in self.forms.items())
        return {"index_method": self.method, "index_stage_methods": forms}

    @classmethod
    def build(
        cls,
        namespace: str,
        settings: Settings,
        *,
        engine: Engine | None = None,
        embedder: CachedEmbedder | None = None,
        log: Callable[[str], None] = _quiet,
        spent_usd: float = 0.0,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> IndexContext:
        """A context for `namespace` with the configured stage engines and embedder unless given (an
        `engine` given does every stage: tests and benches pin one). `spent_usd`: what the run spent
        before (the LLM budget counts it)."""
        from pipeline.runtime import (  # the composition root
            cached_embedder,
            index_method,
            make_stage_engines,
            stage_forms,
        )

        engines = make_stage_engines(settings, spent_usd=spent_usd) if engine is None else {}
        ctx = cls(
            store=NamespaceStore.from_settings(settings, namespace),
            settings=settings,
            engine=engine if engine is not None else engines["reports"],
            embedder=embedder if embedder is not None else cached_embedder(settings),
            log=log,
            engines=engines,
            method=index_method(settings) if engine is None else "",
            forms=stage_forms(settings) if engine is None else {},
            on_progress=on_progress,
        )
        ctx.store.table_metadata = {k.encode(): v.encode() for k, v in ctx.method_metadata().items()}
        return ctx

    def progress(self, what: str) -> Callable[[int, int], None]:
        """A (done, total) callback for `what` ('embedded', 'extracted', ...): every call reaches
        `on_progress`; the log gets a line at the first call and as each quarter is passed, so a long
        stage writes a few lines to the run's log, not one per batch."""
        logged = -1

        def report(done: int, total: int) -> None:
            nonlocal logged
            if self.on_progress is not None:
                self.on_progress(what, done, total)
            quarter = 4 * done // total if total else 4
            if quarter > logged:
                logged = quarter
                self.log(f"{what} {done}/{total}")

        return report
