"""What graphrag-serve writes about its callers: never an API key.

Keys are taken from headers only, yet a careless client still puts one in a URL (`?api_key=...`, refused
with 401), and uvicorn's access log writes each request's path with its query string. Query strings are
therefore dropped from the access log (the path stays; a query string is never needed to tell requests
apart in it), and any `Authorization` / `X-API-Key` value, bearer token or `grk_` key that reaches a log
line through uvicorn's loggers or the handlers of the root logger is replaced, whatever wrote it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

REDACTED = "[redacted]"
ACCESS_LOGGER = "uvicorn.access"
# uvicorn's loggers and the root logger, whose handlers every other logger's records reach
LOGGERS = ("", "uvicorn", "uvicorn.error", ACCESS_LOGGER)

_QUERY = re.compile(r"\?[^\s\"]*")
_SECRETS = (
    # a header written out: "authorization: Basic x", "X-API-Key=y", "'authorization': 'Bearer z'"
    re.compile(
        r"(?i)((?:proxy-)?authorization|x-api-key|api[_-]?key|access[_-]?token)(['\"]?\s*[:=]\s*['\"]?)"
        r"(?:(?:bearer|basic|token)\s+)?[^\s'\",&;]+"
    ),
    re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"grk_[A-Za-z0-9_-]+"),  # this service's own keys (`auth.generate_key`), wherever they sit
)


def redact(text: str) -> str:
    """`text` with every secret the patterns know replaced by `[redacted]`."""
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: (m.group(1) + m.group(2) if m.lastindex else "") + REDACTED, text)
    return text


def without_query(path: str) -> str:
    return _QUERY.sub("?" + REDACTED, path)


class RedactKeys(logging.Filter):
    """Rewrites a record's message so that it holds no key: its arguments for a `%`-style message (so
    that the message still formats), else the message itself. Access lines lose their query strings."""

    def filter(self, record: logging.LogRecord) -> bool:
        access = record.name == ACCESS_LOGGER

        def clean(value: Any) -> Any:
            if not isinstance(value, str):
                return value
            return redact(without_query(value) if access else value)

        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(clean(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: clean(v) for k, v in record.args.items()}
        if isinstance(record.msg, str):
            record.msg = clean(record.msg)
        if record.exc_info and not record.exc_text:
            # a traceback's text is formatted from the exception later: format it now, redacted
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_FILTER = RedactKeys()


def redact_logs() -> None:
    """Install the filter on uvicorn's loggers and on every handler they and the root logger have, once
    logging is configured (uvicorn's `Config` configures its own loggers when it is made)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
