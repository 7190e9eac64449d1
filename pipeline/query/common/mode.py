"""What a query mode is to every door: one record per mode, exported by the mode's package (`MODE` in
`pipeline/query/<mode>/mode.py`) and listed once in `pipeline.query.registry`.

The CLI, the HTTP API and its OpenAPI schema, the MCP tools, the OpenAI door, the web app, the Dagster
query configs, assets and answer tables, `pipeline eval`, auto search's routes and `--estimate` all loop
over the registry and run a question through `registry.run`, so adding a mode is a new package plus one
registry line, and adding an option is one field in the mode's request model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
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
class Saved:
    """A mode's saved answers: the Dagster asset that answers its saved questions after each re-index
    (`assets.query.assets`) writes one row per question into `query_<mode>_answers`, whose columns are
    question, status, answer and then `columns`."""

    columns: tuple[tuple[str, pa.DataType], ...]
    row: Callable[[Any], dict[str, Any]]  # a result's own columns
    # the Markdown after a question's status in the asset's metadata
    summary: Callable[[Any], str] = lambda res: f"\n\n{res.answer}"
    deps: tuple[str, ...] = ("text_unit_embeddings",)  # the index assets its answers read
    description: str = ""  # the asset's; default: the mode's `saved_doc`
    totals: tuple[str, ...] = ()  # integer columns summed into the asset's metadata
    # more of the asset's metadata, from its table and the search's config (JSON-shaped values)
    metadata: Callable[[pa.Table, Any], dict[str, Any]] | None = None


@dataclass(frozen=True)
class RouteHint:
    """What auto search's classifier knows of a routable mode: one line for the model's prompt, plain
    questions it answers best (the offline form's nearest prototypes), and whether an offline choice of
    it is settled by comparing the passage modes' contexts (`auto.compare`) or taken as it is."""

    when: str
    examples: tuple[str, ...] = ()
    compared: bool = False


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
    route_hint: RouteHint | None = None  # how auto's classifier chooses it (a routable mode's)
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
    saved: Saved | None = None  # its saved-answer asset and table (global's three stages are their own)

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

    @property
    def saved_table(self) -> str:
        """The Parquet table its saved answers are written to."""
        return f"query_{self.name}_answers"

    def saved_schema(self) -> pa.Schema:
        """Its saved answers' table: the columns every mode's has, then its own."""
        from pipeline.core.answer_schema import answers_schema

        if self.saved is None:
            raise ValueError(f"query mode {self.name!r} has no saved answers")
        return answers_schema(*self.saved.columns)

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
