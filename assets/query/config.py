"""The query assets' run config, derived from each mode's request model (`pipeline.query.requests`).

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

from pipeline.query.requests import (
    AutoOptions,
    BasicOptions,
    DriftOptions,
    GlobalOptions,
    LazyOptions,
    LocalOptions,
    QueryOptions,
)

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


GlobalQuestionsConfig = config_class(
    "GlobalQuestionsConfig", GlobalOptions, "Saved global questions; with none, a default 'main themes' one."
)
LocalQuestionsConfig = config_class(
    "LocalQuestionsConfig", LocalOptions, "Saved local questions; with none and no file, nothing is asked."
)
DriftQuestionsConfig = config_class(
    "DriftQuestionsConfig", DriftOptions, "Saved DRIFT questions; with none and no file, nothing is asked."
)
BasicQuestionsConfig = config_class(
    "BasicQuestionsConfig", BasicOptions, "Saved basic questions; with none and no file, nothing is asked."
)
LazyQuestionsConfig = config_class(
    "LazyQuestionsConfig", LazyOptions, "Saved lazy questions; with none and no file, nothing is asked."
)
AutoQuestionsConfig = config_class(
    "AutoQuestionsConfig", AutoOptions, "Saved questions routed per question; with none, nothing is asked."
)
CONFIGS: dict[str, tuple[type[Config], type[QueryOptions]]] = {
    "global": (GlobalQuestionsConfig, GlobalOptions),
    "local": (LocalQuestionsConfig, LocalOptions),
    "drift": (DriftQuestionsConfig, DriftOptions),
    "basic": (BasicQuestionsConfig, BasicOptions),
    "lazy": (LazyQuestionsConfig, LazyOptions),
    "auto": (AutoQuestionsConfig, AutoOptions),
}
