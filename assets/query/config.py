"""The query assets' run config, derived from each registered mode's request model
(`pipeline.query.registry`; `config_of` makes a mode's class when it is first asked for).

Every option becomes a config field of the same name, description and default (None: the mode's
configured default), beside the saved questions themselves. Dagster's config has no union of a number
and a word, so an option that takes a level number or 'auto' is two fields here: `level` (the number)
and `auto_level` (true for 'auto'); a choice of words (`selection`) is a string the model validates.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

from dagster import Config
from pydantic import Field, create_model

from pipeline.query import registry
from pipeline.query.common.mode import Mode
from pipeline.query.requests import QueryOptions

QUESTIONS_FIELDS: dict[str, Any] = {
    "questions": (list[str], Field(default=[], description="Questions to answer")),
    "questions_file": (
        str | None,
        Field(
            default=None, description="A text file (one question per line) or a CSV with a 'question' column"
        ),
    ),
}


def _config_type(annotation: Any) -> tuple[Any, bool]:
    """Dagster's type for an option's type, and whether it also takes the word 'auto' (`auto_<name>`)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    literals = [a for a in args if typing.get_origin(a) is Literal]
    plain = [a for a in args if a not in literals]
    if literals and not plain:
        return str | None, False
    if literals and plain == [int]:
        return int | None, True
    return annotation, False


def config_class(name: str, model: type[QueryOptions], doc: str) -> type[Config]:
    fields: dict[str, Any] = dict(QUESTIONS_FIELDS)
    for option, info in model.model_fields.items():
        kind, auto = _config_type(info.annotation)
        fields[option] = (kind, Field(default=None, description=info.description))
        if auto:
            fields[f"auto_{option}"] = (bool, Field(default=False, description=f"'auto' for {option}"))
    cls = create_model(name, __base__=Config, __doc__=doc, **fields)
    return typing.cast(type[Config], cls)


def options_of(config: Config, model: type[QueryOptions]) -> QueryOptions:
    """The mode's request model from a run's config (validated like every other door's)."""
    values = {}
    for option in model.model_fields:
        value = getattr(config, option)
        if getattr(config, f"auto_{option}", False):
            value = "auto"
        if value is not None:
            values[option] = value
    return model(**values)


_CONFIGS: dict[tuple[str, type], type[Config]] = {}


def config_of(mode: Mode | str) -> type[Config]:
    """The saved-questions run config of a registered mode (one class per mode, named after its
    options: `LocalOptions` gives `LocalQuestionsConfig`), described by its record."""
    mode = registry.mode(mode) if isinstance(mode, str) else mode
    key = (mode.name, mode.options)
    if key not in _CONFIGS:
        name = mode.options.__name__.removesuffix("Options") + "QuestionsConfig"
        _CONFIGS[key] = config_class(name, mode.options, mode.doc("saved"))
    return _CONFIGS[key]


def configs() -> dict[str, tuple[type[Config], type[QueryOptions]]]:
    """Each answering mode's run config and request model, as the registry stands now (the
    retrieval-only modes, which take a `query` and answer nothing, save no answers)."""
    return {
        name: (config_of(mode), mode.options)
        for name, mode in registry.MODES.items()
        if mode.question == "question"
    }
