"""Which store answers a request: a fixed store, a resolver called per request (multi-tenant apps), or a
name looked up in a registry of stores. A resolver's result is checked, and an invalid one raises an
error naming the store name and the tenant / schema ids found in the request context."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from pipeline.vector_tool.stores.base import VectorStore, is_vector_store

RequestContext = Mapping[str, Any]

# Context keys worth quoting when a resolver misbehaves (Mastra reads schemaId / tenantId).
_DIAGNOSTIC_KEYS = ("store_name", "schema_id", "tenant_id", "namespace")


class StoreResolverError(TypeError):
    """A resolver (or the `store` option) gave something that is not a vector store."""


def _describe(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _context_suffix(context: RequestContext, store_name: str | None) -> str:
    found = {"store_name": store_name} if store_name else {}
    for key in _DIAGNOSTIC_KEYS:
        alias = {"schema_id": "schemaId", "tenant_id": "tenantId"}.get(key)
        value = context.get(key, context.get(alias) if alias else None)
        if value is not None and key not in found:
            found[key] = value
    inner = ", ".join(f"{k}={v!r}" for k, v in found.items()) or "no store_name, schema_id or tenant_id"
    return f" (context: {inner})"


async def resolve_store(
    store: Any,
    context: RequestContext,
    *,
    store_name: str | None = None,
    registry: Mapping[str, VectorStore] | None = None,
) -> VectorStore | None:
    """The store for this request; None when a name is not registered (the tool degrades on that)."""
    if store is not None:
        if is_vector_store(store):
            return store
        if callable(store):
            result = store(context)
            if inspect.isawaitable(result):
                result = await result
            if not is_vector_store(result):
                raise StoreResolverError(
                    "store resolver returned an invalid value: expected a vector store (an object with "
                    f"`store_type` and `query`), got {_describe(result)}"
                    + _context_suffix(context, store_name)
                )
            return result
        raise StoreResolverError(
            f"store option is not a vector store or a resolver: got {_describe(store)}"
            + _context_suffix(context, store_name)
        )
    if store_name is None or registry is None:
        return None
    return registry.get(store_name)
