"""What a query mode is to every door: one record per mode, exported by the mode's package (`MODE` in
`pipeline/query/<mode>/mode.py`) and listed once in `pipeline.query.registry`.

The CLI, the HTTP API and its OpenAPI schema, the MCP tools, the Dagster query configs and assets,
`pipeline eval`, auto search's candidates and `--estimate` all loop over the registry, so adding a mode
is a new package plus one registry line, and adding an option is one field in the mode's request model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

# (kind of table, name): what a mode reads; `/status` and auto's fallback decide readiness from these.
Need = tuple[Literal["parquet", "lancedb", "snapshot"], str]
# (scope, question, config) -> the mode's result, whose `to_dict()` is what every door returns.
Search = Callable[[Any, str, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Terminal:
    """How `pipeline query <name>` shows a mode; the CLI builds the command from it and the record (a
    mode without one gets the summary as its help and `common.terminal.generic` as its printer)."""

    help: str = ""  # the subcommand's help; empty: the mode's summary
    # (result, args, scope) -> exit code: prints the result (or, with args.json, its JSON)
    render: Callable[[Any, Any, Any], int] | None = None
    json_help: str | None = "print the whole result"
    flags: Callable[[Any], None] | None = None  # adds the mode's own flags to its argparse parser
    flags_first: bool = False  # before the options' flags in its help (else after them)
    rank: int = 100  # its place in `pipeline query --help`, lowest first (ties: registry order)
    special: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # a field's own argparse form
    config_flags: tuple[str, ...] = ()  # own flags that go into the search's config (vector's --store)
    quiet: tuple[str, ...] = ()  # loggers silenced without -v: the renderer says their reason on one line


@dataclass(frozen=True)
class Mode:
    """One query mode, as every door sees it."""

    name: str  # the door's word for it: `pipeline query <name>`, `POST /v1/query/<name>`
    options: type[BaseModel]  # the request model: its fields are the mode's options at every door
    search: Search
    needs: tuple[Need, ...]
    # The search's config: a class whose `from_settings(settings, **given)` builds it
    # (`pipeline.settings.bound.FromSettings`), or `configure(settings, given)` for one that is built
    # otherwise; a None option keeps the configured value either way.
    config: Any = None
    configure: Callable[[Any, Mapping[str, Any]], Any] = None  # type: ignore[assignment]
    # One sentence: CLI help, OpenAPI description, MCP tool description; default: the request model's
    # docstring, which says what the mode does
    summary: str = ""
    tool: str = ""  # the MCP tool's name; default `<name>_search`
    question: Literal["question", "query"] = "question"  # the body's text field
    errors: tuple[type[Exception], ...] = ()  # what the search raises for a request it cannot take
    routable: bool = False  # auto search may hand a question to it, and `pipeline eval` asks it
    lane: Literal["quick", "graph"] = "graph"  # the service's worker pool: quick = no model call
    # False: the search calls no model, so a door builds it no engine (its scope's engine is None) and
    # it answers with no LLM configured
    uses_model: bool = True
    # True: the search hands the question on and sends its own `route` event once it has chosen (auto);
    # for any other mode the door sends it (`registry.search`)
    routes: bool = False
    # What each door says of it (empty: the summary)
    http_doc: str = ""  # the OpenAPI description of `POST /v1/query/<name>`
    tool_doc: str = ""  # what an agent reads about the MCP tool
    saved_doc: str = ""  # the Dagster saved-questions config's description
    hint: str = ""  # the MCP server's instructions on the tool, after its name ("answers ...")
    terminal: Terminal = Terminal()  # `pipeline query <name>`
    # Optional parts a door uses when a mode has them:
    estimate: Callable[..., None] | None = None  # adds the model calls one question costs (--estimate)
    shown: Callable[[dict[str, Any], Any], Any] | None = None  # the context a result showed (eval)
    # doors' extras that belong to the mode (e.g. the Dagster saved-answer table), by door
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.configure is None:
            if self.config is None:
                raise TypeError(f"query mode {self.name!r} needs a config class or a configure function")
            object.__setattr__(
                self, "configure", lambda settings, given: self.config.from_settings(settings, **given)
            )
        if not self.summary:
            object.__setattr__(
                self, "summary", " ".join(inspect.cleandoc(self.options.__doc__ or "").split())
            )

    @property
    def tool_name(self) -> str:
        return self.tool or f"{self.name}_search"

    def doc(self, door: Literal["http", "tool", "saved"]) -> str:
        """What door `door` says of this mode: its own text, else the summary."""
        return getattr(self, f"{door}_doc") or self.summary


# The registered modes by name, filled by `pipeline.query.registry` (which imports every mode's record):
# here, so that what validates against the registry (auto's `route`) need not import the modes.
MODES: dict[str, Mode] = {}


def routable() -> list[str]:
    """The registered modes auto search may hand a question to, in registry order."""
    return [name for name, m in MODES.items() if m.routable]


def missing(store: Any, needs: tuple[Need, ...]) -> list[str]:
    """The tables of `needs` that `store` lacks (a snapshot is a file of that name under the store)."""
    from pipeline.core import schema

    def present(kind: str, name: str) -> bool:
        if kind == "parquet":
            return store.has_table(name)
        if kind == "lancedb":
            return store.has_lance_table(name)
        return store.has_file(schema.CHUNK_GRAPH_SNAPSHOT if name == "chunk_graph" else name)

    return [name for kind, name in needs if not present(kind, name)]
