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
    ) -> IndexContext:
        """A context for `namespace` with the configured engine and embedder unless given."""
        from pipeline.runtime import cached_embedder, make_engine  # the composition root

        return cls(
            store=NamespaceStore.from_settings(settings, namespace),
            settings=settings,
            engine=engine if engine is not None else make_engine(settings),
            embedder=embedder if embedder is not None else cached_embedder(settings),
            log=log,
        )

    def progress(self, what: str) -> Callable[[int, int], None]:
        """A (done, total) callback that logs `what` ('embedded', 'extracted', ...)."""

        def report(done: int, total: int) -> None:
            self.log(f"{what} {done}/{total}")

        return report
