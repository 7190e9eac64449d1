"""Errors of the chunk graph, each with a message that says what to fix."""

from __future__ import annotations


class ChunkGraphError(ValueError):
    """Bad input to build or query a chunk graph (lengths, dimensions, parameters, filters)."""


class SnapshotError(ChunkGraphError):
    """A snapshot that cannot be loaded: not a snapshot, unsupported version, wrong dimension, bad edges."""
