"""Command line: `pipeline index|status|query ...` (also `python -m assets ...`), one module per command
group: `index`, `status` (and `communities`), `import_`, `graph`, `eval`, `show`, `query` (one command
per registered query mode), with `exits` holding the exit codes they share.

It lives beside the Dagster layer because `index` hands the work to it (`assets.launch`), so that a
CLI run is the same materialization the UI performs; the other commands call `pipeline` directly.
Dagster is imported only when `index` runs, which keeps the query commands quick to start.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from assets.cli.eval import add_eval_parser
from assets.cli.exits import damaged, not_ready, unavailable
from assets.cli.graph import add_graph_parser
from assets.cli.import_ import add_import_parser
from assets.cli.index import add_index_parser
from assets.cli.query import add_query_parsers
from assets.cli.show import add_show_parser
from assets.cli.status import add_status_parsers
from pipeline.core.namespace import InvalidNamespaceError, validate_namespace
from pipeline.embeddings.base import EmbedderConfigError
from pipeline.io.damage import IndexDamaged
from pipeline.io.repair import diagnose
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.llm.errors import EmbeddingUnavailableError
from pipeline.settings import ConfigError, load_settings

__all__ = ["build_parser", "main"]


def _namespace(value: str) -> str:
    try:
        return validate_namespace(value)
    except InvalidNamespaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipeline", description="GraphRAG indexing and query on Dagster")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="debug logging: Dagster's event stream and the libraries' own log lines",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    add_index_parser(sub, _namespace)
    add_status_parsers(sub, _namespace)
    add_import_parser(sub, _namespace)
    add_graph_parser(sub, _namespace)
    add_eval_parser(sub, _namespace)
    add_show_parser(sub, _namespace)

    q = sub.add_parser("query", help="query an index").add_subparsers(dest="query_kind", required=True)
    add_query_parsers(q, _namespace)
    return parser


def quiet_libraries(verbose: bool) -> None:
    """Debug logging with -v; otherwise warnings only, also from the libraries that set their own
    level (bm25s logs at DEBUG) or log from Rust (LanceDB's WARN "No existing dataset" per new table)."""
    level = logging.DEBUG if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # a logger's own level does not stop its records at the root's handler
    if not verbose:
        os.environ.setdefault("LANCEDB_LOG", "error")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_libraries(args.verbose)
    try:
        return args.func(args)
    except TableNotFoundError as exc:
        return not_ready(str(exc))
    except IndexDamaged as exc:
        return damaged(exc)
    except (ConfigError, InvalidNamespaceError, FileNotFoundError, EmbedderConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EmbeddingUnavailableError as exc:
        return unavailable(exc)
    except Exception:
        # A Lance data file cut short fails deep inside a read, naming no table: look for one.
        found = _damage_behind(args)
        if found is None:
            raise
        return damaged(found)


def _damage_behind(args: argparse.Namespace) -> IndexDamaged | None:
    """The damaged table of the command's namespace, if it has one (an index run repairs its own)."""
    namespace = getattr(args, "namespace", None)
    if args.command == "index" or not namespace:
        return None
    try:
        return diagnose(NamespaceStore.from_settings(load_settings(), namespace))
    except Exception:  # noqa: BLE001 - no diagnosis: the original error is raised
        return None


if __name__ == "__main__":
    sys.exit(main())
