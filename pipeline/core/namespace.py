"""Namespace (tenant) names: the one place they are validated."""

from __future__ import annotations

import re

NAMESPACE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class InvalidNamespaceError(ValueError):
    """The namespace name is not allowed; the message says what the rule is."""


def validate_namespace(name: object) -> str:
    """Return `name` if it is a valid namespace, else raise InvalidNamespaceError."""
    if not isinstance(name, str) or not NAMESPACE_PATTERN.fullmatch(name):
        raise InvalidNamespaceError(
            f"invalid namespace {name!r}: use 1-63 characters of lower-case letters, digits, '_' and '-', "
            "starting with a letter or digit (pattern ^[a-z0-9][a-z0-9_-]{0,62}$)"
        )
    return name
