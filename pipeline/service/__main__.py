"""`python -m pipeline.service serve | mcp | hash-key`."""

from __future__ import annotations

import argparse
import sys

from pipeline.service.auth import generate_key, hash_key


def hash_key_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.service hash-key",
        description="Print the sha256 of an API key read from stdin (kept out of shell history and ps), "
        "for the key_sha256 field of PIPELINE_API_KEYS_FILE.",
    )
    parser.add_argument("--generate", action="store_true", help="make a new random key and print it too")
    args = parser.parse_args(argv)
    if args.generate:
        key = generate_key()
        print(f"key:        {key}\nkey_sha256: {hash_key(key)}")
        return 0
    key = sys.stdin.readline().strip()
    if not key:
        print("error: no key on stdin", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command, rest = (argv[0], argv[1:]) if argv else ("", [])
    if command == "serve":
        from pipeline.service.app import main as serve

        return serve(rest)
    if command == "mcp":
        from pipeline.service.mcp_server import main as mcp

        return mcp(rest)
    if command == "hash-key":
        return hash_key_command(rest)
    print(
        "usage: python -m pipeline.service serve [--host H --port P] | mcp | hash-key [--generate]",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
