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
    on_progress: Callable[[str, int, int], None] | None = None
    """Every (what, done, total) of a long loop, for a live display (the CLI's progress bar)."""

    @property
    def namespace(self) -> str:
        return self.store.namespace

    @classmethod
    def build(
        cls,
        namespace: str,
        settings: Settings,
        *,
        engine: Engine | None = None,
        embedder: CachedEmbedder | None = None,
        log: Callable[[str], None] = _quiet,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> IndexContext:
        """A context for `namespace` with the configured engine and embedder unless given."""
        from pipeline.runtime import cached_embedder, make_engine  # the composition root

        return cls(
            store=NamespaceStore.from_settings(settings, namespace),
            settings=settings,
            engine=engine if engine is not None else make_engine(settings),
            embedder=embedder if embedder is not None else cached_embedder(settings),
            log=log,
            on_progress=on_progress,
        )

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
