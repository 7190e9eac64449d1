"""Name canonicalisation across a corpus: the forms one person takes become one entity key.

Exact keys (`pipeline.core.names.normalize_name`) already join 'Scrooge' and "Scrooge's". These rules then
join the forms a text uses for one person, over the whole namespace, before entities are grouped:

1. **Descriptor, honorific, rank or kinship word + name** -> the name: 'old marley' -> 'marley',
   'mr scrooge' -> 'scrooge', 'uncle scrooge', 'cousin fred', 'captain smith' -> the name, when the
   shorter key exists as a person (or untyped) entity. An honorific of another person never merges
   ('mrs fezziwig' is not 'fezziwig': a married title names the wife of the bare surname).
2. **Short form -> its unique long form**: a one-word key merges into the only plain personal name of two
   or three words (no connector such as 'of' or 'and', no honorific) that ends or starts with it:
   'scrooge' -> 'ebenezer scrooge', 'bob' -> 'bob cratchit'. When two long forms fit ('cratchit' ->
   'bob cratchit' or 'martha cratchit') nothing merges: the short form is ambiguous.
Both sides must be person or untyped (by their mentions' majority type), and for rule 2 one side must
hold a person mention: places and events keep their short names ('Christmas' is not 'Christmas Eve').

Each merge is returned with its rule, so that the run can log it; chains resolve to their end
('mr marley' -> 'marley' -> 'jacob marley'). The surface forms stay on the entity as aliases.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.ops.extraction.lexicon import DESCRIPTORS, HONORIFICS, NAME_CONNECTORS, OTHER_PERSON_HONORIFICS
from pipeline.ops.extraction.models import GENERIC_TYPE

PERSON = "person"
_PERSON_LIKE = frozenset({PERSON, GENERIC_TYPE})
_NOT_IN_PLAIN_NAMES = NAME_CONNECTORS | {"the", "and", "&"}
MAX_LONG_FORM_WORDS = 3


@dataclass(frozen=True)
class Merge:
    key: str
    into: str
    rule: str  # "descriptor_or_honorific" | "short_form"

    def __str__(self) -> str:
        return f"{self.key} -> {self.into} ({self.rule})"


def canonical_keys(typed_keys: Iterable[tuple[str, str]]) -> list[Merge]:
    """The merges for a corpus whose mentions have these (key, type) pairs (one per mention), by the rules
    in the module docstring; `into` is already the end of its chain."""
    types: dict[str, Counter[str]] = {}
    for key, etype in typed_keys:
        types.setdefault(key, Counter())[etype] += 1
    person_like = {k for k, c in types.items() if majority_type(c) in _PERSON_LIKE}
    has_person = {k for k in person_like if types[k][PERSON] > 0}

    step: dict[str, Merge] = {}
    for key in sorted(types):
        words = key.split()
        if len(words) < 2 or words[0] in OTHER_PERSON_HONORIFICS:
            continue
        # An honorific, rank or kinship word is itself a sign of a person, whatever type a model gave
        # the whole ('Captain Smith' tagged ORG); a descriptor is one only before a known person's name
        # ('Old Marley', not 'Old Trafford').
        rest = " ".join(words[1:])
        signed = words[0] in HONORIFICS or (
            words[0] in DESCRIPTORS and (key in person_like or rest in has_person)
        )
        if signed and rest in person_like:
            step[key] = Merge(key, rest, "descriptor_or_honorific")

    long_forms: dict[str, set[str]] = {}
    for key in person_like:
        words = key.split()
        if key in step or not 2 <= len(words) <= MAX_LONG_FORM_WORDS:
            continue
        if words[0] in HONORIFICS or words[0] in DESCRIPTORS or set(words) & _NOT_IN_PLAIN_NAMES:
            continue
        for end in {words[0], words[-1]}:
            long_forms.setdefault(end, set()).add(key)
    for key in sorted(person_like):
        if " " in key or key in step:
            continue
        candidates = long_forms.get(key, set())
        if len(candidates) == 1:
            (into,) = candidates
            if key in has_person or into in has_person:
                step[key] = Merge(key, into, "short_form")

    out = []
    for key, merge in sorted(step.items()):
        into, seen = merge.into, {key}
        while into in step and into not in seen:  # follow the chain to its end
            seen.add(into)
            into = step[into].into
        out.append(Merge(key, into, merge.rule))
    return out


def majority_type(counts: Counter[str]) -> str:
    """The most frequent type other than GENERIC_TYPE (GENERIC_TYPE when untyped; ties: name order)."""
    typed = {t: n for t, n in counts.items() if t != GENERIC_TYPE}
    return min(typed, key=lambda t: (-typed[t], t)) if typed else GENERIC_TYPE
