"""Resources: the pipeline's settings and the embedder, configured in one place.

Both hand out what `pipeline.runtime` (the composition root) builds from the settings, so a Dagster
run, the CLI and the service get the same engine, embedder and caches."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource

from pipeline.embeddings.cached import CachedEmbedder
from pipeline.io.store import NamespaceStore
from pipeline.runtime import cached_embedder
from pipeline.settings import Settings, load_settings

# The Dagster concurrency pool of every asset that calls the model: the instance's `concurrency: pools:`
# limit caps how many such steps run at once across all runs (see dagster.yaml).
LLM_POOL = "llm"


class PipelineSettingsResource(ConfigurableResource):
    """Overrides for pipeline.settings.Settings; anything left unset comes from PIPELINE_* env vars / YAML."""

    storage_root: str | None = None
    input_root: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    encoding: str | None = None
    max_document_bytes: int | None = None
    index_method: str | None = None  # standard | fast | nlp (pipeline.runtime.stage_forms)
    # The model by name and the *name* of the variable holding its key, never the key: resource config
    # is shown in the UI.
    llm_provider: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key_env: str | None = None
    # Not settings: which namespaces (folders under input_root) the input-root sensor watches (None:
    # all), and the saved questions answered after each re-index when a run's config names none.
    namespaces: list[str] | None = None
    saved_questions: list[str] | None = None

    def get_settings(self) -> Settings:
        return load_settings(**self.model_dump(exclude={"namespaces", "saved_questions"}))

    def store(self, namespace: str) -> NamespaceStore:
        return NamespaceStore.from_settings(self.get_settings(), namespace)


class EmbedderResource(ConfigurableResource):
    """The configured embedder (one model per process) wrapped with the persistent embedding cache."""

    settings: PipelineSettingsResource

    def get_embedder(self) -> CachedEmbedder:
        return cached_embedder(self.settings.get_settings())


def default_resources(**overrides: Any) -> dict[str, Any]:
    settings = PipelineSettingsResource(**overrides)
    return {"pipeline_settings": settings, "embedder": EmbedderResource(settings=settings)}
