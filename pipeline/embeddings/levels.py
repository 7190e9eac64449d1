"""Similarity levels measured on the namespace's own embedding model, for any model.

A cosine means nothing alone: MiniLM puts unrelated English sentences near 0.05, text-embedding-3 near
0.1, e5 and bge near 0.7. What every model does give is two landmarks on its own scale:
- `floor`: the median cosine of unrelated sentence pairs;
- `near`: the median cosine of a sentence and its paraphrase.
Each level is `floor + k * (near - floor)`, with one `k` per level chosen once so that MiniLM lands on
the constants the code was tuned with (`bench/bench_similarity_levels.py` prints the comparison).

Why fixed probe pairs (`PROBES`), measured at index time through the namespace's embedder, rather than
the corpus's own units: landmarks taken from the corpus measure the corpus, not the model. With MiniLM,
the median cosine of random unit pairs was 0.72 on the sample book (one novel, every unit under its
title) and 0.01 on MuSiQue-100 (1,890 unrelated encyclopedia passages); their levels would differ by
0.6 for one model. The probe pairs span unrelated topics, so `floor` is the model's "unrelated" and
`near` its "same meaning", whatever the corpus. Levels are rounded to `GRID`: they are coarse by nature,
and a model served with another precision should not move every threshold by a hair.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from pipeline.embeddings.base import Calibration, EmbedderConfigError

GRID = 0.05
# (sentence, paraphrase): one topic per pair, no two pairs on one topic.
PROBES: tuple[tuple[str, str], ...] = (
    (
        "The old miser refused to give a single coin to the poor.",
        "The stingy old man would not donate any money to those in need.",
    ),
    (
        "The spacecraft entered orbit around Mars after a seven-month journey.",
        "After travelling for seven months, the probe reached Martian orbit.",
    ),
    (
        "Knead the dough for ten minutes until it becomes smooth and elastic.",
        "Work the dough by hand for about ten minutes so it turns soft and stretchy.",
    ),
    (
        "The court ruled that the contract was void because it was signed under duress.",
        "The judges decided the agreement was invalid since one party was forced to sign it.",
    ),
    (
        "The striker scored twice in the second half to win the match.",
        "Two goals from the forward after half-time gave his team the victory.",
    ),
    (
        "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.",
        "Plants use light to make glucose and oxygen from water and CO2.",
    ),
    (
        "The central bank raised interest rates to curb inflation.",
        "To slow rising prices, the monetary authority increased its lending rate.",
    ),
    (
        "Set the variable before calling the function, or it will raise an error.",
        "The function fails unless the variable has been assigned first.",
    ),
    (
        "The patient was given antibiotics for a bacterial infection of the lungs.",
        "Doctors treated the man's bacterial pneumonia with antibiotic drugs.",
    ),
    (
        "The medieval castle was built on a hill to guard the river crossing.",
        "The fortress from the Middle Ages stood on high ground watching over the ford.",
    ),
    (
        "Heavy snow closed the mountain pass for three days.",
        "The road through the mountains was shut for three days by a blizzard.",
    ),
    (
        "She learned to play the violin when she was six years old.",
        "At the age of six she started taking violin lessons.",
    ),
    (
        "The company reported a loss after sales fell sharply in the last quarter.",
        "A steep drop in quarterly sales left the firm in the red.",
    ),
    (
        "Volcanic ash grounded flights across northern Europe.",
        "Air travel over much of northern Europe stopped because of an ash cloud from an eruption.",
    ),
    (
        "The library lends books for up to three weeks.",
        "You may borrow a book from the library for at most twenty-one days.",
    ),
    (
        "The treaty ended the war and redrew the borders of the region.",
        "The peace agreement brought the fighting to a close and changed the frontiers.",
    ),
    (
        "Bees communicate the location of flowers through a waggle dance.",
        "Honeybees tell each other where nectar is by dancing.",
    ),
    ("The encryption key must never be stored in plain text.", "Never save the secret key unencrypted."),
    (
        "He was elected mayor of the city in 1998 and served two terms.",
        "Voters chose him as the town's mayor in 1998, and he held the office for eight years.",
    ),
    (
        "The river floods every spring when the snow melts in the mountains.",
        "Each spring, meltwater from the mountains makes the river overflow its banks.",
    ),
    (
        "The novel tells the story of a family across three generations.",
        "The book follows one family through grandparents, parents and children.",
    ),
    (
        "Printing the report to PDF keeps its fonts and layout intact.",
        "Exporting the document as a PDF preserves how it looks.",
    ),
    (
        "The cheetah is the fastest land animal, reaching seventy miles an hour.",
        "No animal on land runs faster than the cheetah, which can hit about 110 km/h.",
    ),
    (
        "The museum's new wing displays ancient Egyptian sculpture.",
        "Statues from ancient Egypt are shown in the museum's recently opened gallery.",
    ),
)
# k per level: (level - floor) / (near - floor) with MiniLM's landmarks and its tuned constants
# (MINILM_CALIBRATION); bench/bench_similarity_levels.py prints them.
K: dict[str, float] = {
    "related": 0.978,
    "relevant": 0.326,
    "useless": 0.181,
    "useful": 0.905,
    "entity": 0.616,
}
LEVELS = tuple(f.name for f in fields(Calibration))
METADATA_KEY = b"similarity_levels"


@dataclass(frozen=True)
class Landmarks:
    floor: float
    near: float
    pairs: int


def probe_texts() -> list[str]:
    """What `landmarks` needs embedded: each pair's sentence and paraphrase, in order."""
    return [t for pair in PROBES for t in pair]


def landmarks(vectors: np.ndarray) -> Landmarks:
    """The model's two landmarks (module doc) from `probe_texts()`'s vectors."""
    v = np.asarray(vectors, dtype=np.float64).reshape(len(PROBES), 2, -1)
    first, second = v[:, 0], v[:, 1]
    near = float(np.median(np.sum(first * second, axis=1)))
    cross = first @ second.T
    floor = float(np.median(cross[~np.eye(len(PROBES), dtype=bool)]))
    return Landmarks(round(floor, 4), round(near, 4), len(PROBES))


def levels_from(marks: Landmarks) -> Calibration:
    spread = max(marks.near - marks.floor, 0.05)

    def level(name: str) -> float:
        value = marks.floor + K[name] * spread
        return float(np.clip(round(round(value / GRID) * GRID, 2), -1.0, 1.0))

    return Calibration(**{name: level(name) for name in LEVELS})


@dataclass(frozen=True)
class StoredLevels:
    """What an index keeps of its levels (the `text_units` table's metadata): how they came about."""

    levels: Calibration
    source: str  # "learned", or why the model's defaults stand in
    model_id: str
    dimension: int
    marks: Landmarks | None = None
    model: str = ""  # `model_family` of the embedder: what a query's embedder must match

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", model_family(self.model_id))

    def to_json(self) -> str:
        return json.dumps(
            {
                "levels": asdict(self.levels),
                "source": self.source,
                "model_id": self.model_id,
                "dimension": self.dimension,
                "model": self.model,
                "marks": asdict(self.marks) if self.marks else None,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, raw: bytes | str) -> StoredLevels | None:
        try:
            data = json.loads(raw)
            marks = Landmarks(**data["marks"]) if data.get("marks") else None
            levels = Calibration(**{k: float(data["levels"][k]) for k in LEVELS})
            return cls(
                levels,
                str(data["source"]),
                str(data["model_id"]),
                int(data["dimension"]),
                marks,
                str(data.get("model") or ""),
            )
        except (ValueError, KeyError, TypeError):
            return None  # a damaged or older entry: the model's defaults stand in


def learn(embedder: Any) -> StoredLevels:
    """The levels of `embedder`'s model (texts -> normalised vectors), from its landmarks."""
    marks = landmarks(embedder.embed(probe_texts()))
    return StoredLevels(
        levels_from(marks), "learned", embedder.model_id, embedder.dimension, marks, model_family(embedder)
    )


def from_metadata(metadata: dict[bytes, bytes] | None) -> StoredLevels | None:
    raw = (metadata or {}).get(METADATA_KEY)
    return StoredLevels.from_json(raw) if raw else None


def overridden(levels: Calibration, overrides: dict[str, float] | None) -> Calibration:
    """The levels with the settings' overrides (PIPELINE_SIMILARITY_LEVELS) applied."""
    return replace(levels, **overrides) if overrides else levels


class EmbedderMismatchError(EmbedderConfigError):
    """The configured embedder is not the model a namespace's vectors were made with."""


class Leveled:
    """An embedder whose `calibration` is a namespace's levels; everything else is the embedder's own."""

    def __init__(self, inner: Any, levels: Calibration, source: str) -> None:
        self._inner = inner
        self._levels = levels
        self.levels_source = source

    @property
    def calibration(self) -> Calibration:
        return self._levels

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def model_family(embedder_or_id: Any) -> str:
    """Which vector space a model's vectors live in: its name without where it is served (the same model
    moved to another host) or the number format it ran in (bf16 and int8 vectors live in fp32's)."""
    if isinstance(embedder_or_id, str):
        name = embedder_or_id
    else:
        name = getattr(embedder_or_id, "model_name", None) or embedder_or_id.model_id
    for suffix in (":bf16", ":int8"):
        name = name.removesuffix(suffix)
    return name


def stored(store: Any) -> StoredLevels | None:
    """The levels an index keeps (its `text_units` table's metadata); None before it has any."""
    from pipeline.core.schema import LANCE_TEXT_UNITS

    if not store.has_lance_table(LANCE_TEXT_UNITS):
        return None
    return from_metadata(store.open_lance_table(LANCE_TEXT_UNITS).schema.metadata)


def for_namespace(embedder: Any, found: StoredLevels | None) -> Leveled:
    """`embedder` with the levels a namespace's index measured (`found`), else the model's defaults,
    then the settings' overrides. EmbedderMismatchError when the index was embedded by another model:
    its vectors and this model's are not comparable."""
    if isinstance(embedder, Leveled):
        embedder = embedder.inner
    if found is None:
        base, source = (
            embedder.calibration,
            "model defaults (the index has none measured: its next run measures them)",
        )
    else:
        if (
            model_family(found.model_id) != model_family(embedder.model_id)
            or found.dimension != embedder.dimension
        ):
            raise EmbedderMismatchError(
                f"the index was embedded with {found.model_id} ({found.dimension}-d) and the configured "
                f"embedder is {embedder.model_id} ({embedder.dimension}-d): their vectors are not "
                "comparable. Re-embed the namespace with `pipeline index --reembed` (every vector is "
                "computed again with the configured model), index into a new namespace, or configure "
                "PIPELINE_EMBEDDING_* as the index was built"
            )
        base, source = found.levels, found.source
    overrides = getattr(embedder, "level_overrides", None) or {}
    if overrides:
        source += f"; overridden by PIPELINE_SIMILARITY_LEVELS ({', '.join(sorted(overrides))})"
    return Leveled(embedder, overridden(base, overrides), source)
