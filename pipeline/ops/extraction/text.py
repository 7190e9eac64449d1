"""Sentences, tokens and dates for offline extraction: regular expressions only, no downloaded models."""

from __future__ import annotations

import re

from pipeline.core.sentences import ABBREVIATIONS, Sentence, split_sentences

__all__ = ["ABBREVIATIONS", "TOKEN", "Sentence", "find_dates", "split_sentences"]

TOKEN = re.compile(r"\w+(?:[’'\-.&]\w+)*\.?|[^\w\s]", re.UNICODE)

# ---- dates --------------------------------------------------------------------------------------
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        str.split("january february march april may june july august september october november december")
    )
}
_MONTH_RE = "|".join(_MONTHS)
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})\s+(?P<m1>{_MONTH_RE})\s+(?P<y1>\d{{4}})"
    rf"|(?P<m2>{_MONTH_RE})\s+(?:(?P<d2>\d{{1,2}}),?\s+)?(?P<y2>\d{{4}})"
    r"|(?P<y3>(?:1[0-9]|20)\d{2})(?P<decade>s)?)\b",
    re.IGNORECASE,
)


def find_dates(sentence: str) -> list[str]:
    """ISO-8601 dates in the order they occur, at the precision stated: '1960', '1960-01', '1960-01-15'.

    A decade ('the 1940s') gives its first year.
    """
    dates: list[str] = []
    for m in _DATE.finditer(sentence):
        if m.group("y1"):
            dates.append(f"{m['y1']}-{_MONTHS[m['m1'].lower()]:02d}-{int(m['d1']):02d}")
        elif m.group("y2"):
            month = _MONTHS[m["m2"].lower()]
            day = f"-{int(m['d2']):02d}" if m.group("d2") else ""
            dates.append(f"{m['y2']}-{month:02d}{day}")
        else:
            dates.append(m["y3"])
    return dates
