"""Offline global answers by theme: the map's points grouped by the words they share.

Without a model, the reduce cannot write prose; it can still do what a reader does with a pile of
quotes: put together the ones about the same thing, name what they share, and keep the best one or
two of each group.

1. Each point's content words: lower-cased, four letters or more, not a function word, a plural 's'
   dropped ('spirits' -> 'spirit'; not from 'christmas', 'census', 'analysis'). Words in at least half
   of all points say nothing about one theme (they are the question's own topic) and are left out.
2. Points, best first, join a theme: the one a point of the same community opened (one report, one
   theme), else the theme they overlap most (shared words / the smaller set's size, at least
   `JOIN_OVERLAP`); a point that joins none opens a theme while there are fewer than `MAX_THEMES`,
   else it is left out.
3. A theme is named by the names its points mention most and the words most of them share, and
   written as its best `SENTENCES_PER_THEME` points, cited with the communities of all of them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

MAX_THEMES = 5
SENTENCES_PER_THEME = 2
JOIN_OVERLAP = 0.34  # about one content word in three shared
LABEL_WORDS = 3
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")  # "men's" -> men, s; "instance--literally" -> two words
# Function words of four letters or more (shorter words are never content words here).
STOP_WORDS = frozenset(
    """
    about above after again against also although always among another because been before being below
    between both cannot could does doing down during each either else even ever every from further have
    having here hers herself himself into itself just least less like made make many might more most much
    must myself neither never none nothing once only onto other others ought over said same says shall
    should since some still such sure than that their theirs them then there these they this those through
    thus till under unless until upon very well were what whatever when where whether which while whom whose
    will with within without would your yours yourself
    """.split()
)


@dataclass
class Theme:
    words: Counter[str] = field(default_factory=Counter)
    points: list[int] = field(default_factory=list)  # indexes into the points, best first

    def label(self, order: list[str]) -> str:
        shared = [w for w, n in self.words.items() if n >= 2] or order[:LABEL_WORDS]
        rank = {w: i for i, w in enumerate(order)}
        best = sorted(shared, key=lambda w: (-self.words[w], rank.get(w, len(rank)), w))[:LABEL_WORDS]
        return ", ".join(best)


def content_words(text: str) -> list[str]:
    """Content words in order of first occurrence (rule 1, without the corpus-wide cut)."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if len(w) < 4 or w in STOP_WORDS:
            continue
        if w.endswith("s") and not w.endswith(("ss", "us", "is", "as")) and len(w) > 4:
            w = w[:-1]
        if w not in out:
            out.append(w)
    return out


def group_into_themes(descriptions: list[str], communities: list[list[int]] | None = None) -> list[Theme]:
    """Themes of the points (best first), by rules 1-2; points of the same community count as
    overlapping fully (they come from one report)."""
    words = [content_words(d) for d in descriptions]
    communities = communities or [[] for _ in descriptions]
    owner: dict[int, Theme] = {}
    everywhere = {
        w for w, n in Counter(w for ws in words for w in ws).items() if len(words) > 2 and n * 2 >= len(words)
    }
    words = [[w for w in ws if w not in everywhere] for ws in words]
    themes: list[Theme] = []
    for i, ws in enumerate(words):
        if not ws:
            continue
        best = next((owner[c] for c in communities[i] if c in owner), None)
        if best is None:
            best = _closest(themes, ws)
        if best is None:
            if len(themes) >= MAX_THEMES:
                continue
            best = Theme()
            themes.append(best)
        best.points.append(i)
        best.words.update(ws)
        for c in communities[i]:
            owner.setdefault(c, best)
    return themes


def _closest(themes: list[Theme], words: list[str]) -> Theme | None:
    """The theme these words overlap most, if by at least `JOIN_OVERLAP`."""
    best, best_overlap = None, JOIN_OVERLAP
    for theme in themes:
        overlap = sum(1 for w in words if w in theme.words) / min(len(words), len(theme.words))
        if overlap >= best_overlap and (best is None or overlap > best_overlap):
            best, best_overlap = theme, overlap
    return best


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def theme_label(theme: Theme, descriptions: list[str]) -> str:
    """The names its points mention most (names carry a story's or a field's themes: 'Scrooge'), then
    the content words they share."""
    names: Counter[str] = Counter()
    for i in theme.points:
        names.update(set(_NAME.findall(descriptions[i].lstrip("'\"‘“ "))))
    named = [n for n, _ in sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:2]]  # ties: by name
    words = theme.label(content_words(descriptions[theme.points[0]]))
    return "; ".join(x for x in (" and ".join(named), words) if x)
