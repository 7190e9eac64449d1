"""Name spotting and typing for offline extraction: which words in a sentence name an entity, of what type.

- Names are runs of capitalised words, joined by particles ('University of Copenhagen', 'Van Helsing'),
  acronyms, honorific titles ('Mr. Fezziwig') and quoted title-case phrases (names of works).
- A stop list removes function words at the edges; all-capital headings are skipped; a lone word that
  opens a sentence is a name only with more evidence (see keep_initial).
- Types come from head words, honorifics, a gazetteer, acronyms and context; the votes of a name's
  mentions in a unit decide its type, else GENERIC_TYPE.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pipeline.core.names import normalize_name
from pipeline.ops.extraction import lexicon as lx
from pipeline.ops.extraction.models import GENERIC_TYPE
from pipeline.ops.extraction.text import ABBREVIATIONS, Sentence

MAX_NAME_TOKENS = 7  # longer capitalised runs are headings or title-case lines, not names

OPENERS = frozenset("'\"‘“([_:;—-")
_POSSESSIVE_TOKEN = re.compile(r"^(.*\w)(?:['’]s|s['’])$")
CALENDAR = lx.NOT_NAMES_ALONE & frozenset(
    str.split(
        "january february march april may june july august september october november december "
        "monday tuesday wednesday thursday friday saturday sunday"
    )
)
_YEAR_OR_ORDINAL = re.compile(r"^(?:1[0-9]{3}|20[0-9]{2}|[0-9]+(?:st|nd|rd|th))$")
_PLURAL_POSSESSORS = frozenset({"people", "men", "women", "children"})
_ROMAN = re.compile(r"^[IVXLC]+$")
_STRONG, _WEAK = 3, 1
# Verbs of speech before a name ('said Scrooge', 'returned the Ghost')
_SPEECH_BEFORE = frozenset({"said", "says", "cried", "replied", "asked", "returned", "exclaimed", "answered"})


@dataclass
class Tok:
    text: str
    start: int  # offsets within the sentence
    end: int

    @property
    def word(self) -> str:
        return self.text.rstrip(".").lower()


@dataclass
class Mention:
    key: str
    surface: str
    sentence: int  # index into the unit's sentences
    first_token: int
    last_token: int  # inclusive
    votes: Counter[str]
    # A lone capitalised word opening a sentence: a name only with more evidence (see keep_initial)
    initial_single: bool = False
    before_verb: bool = False


def is_shouting(tokens: list[Tok]) -> bool:
    words = [t.text for t in tokens if t.text[0].isalpha() and len(t.text.rstrip(".")) > 1]
    upper = sum(1 for w in words if w.isupper())
    return upper >= 2 and upper >= 0.6 * len(words)


def _is_name_word(tok: Tok, shouting: bool) -> bool:
    t = tok.text
    if not t[0].isalpha() or not t[0].isupper():
        return False
    return not (shouting and len(t.rstrip(".")) > 1 and t.isupper())


def _is_initial(tokens: list[Tok], i: int) -> bool:
    """Whether token i opens the sentence or a quotation (capitalised for that reason alone)."""
    j = i - 1
    while j >= 0 and tokens[j].text in OPENERS:
        j -= 1
    return j < 0 or (j < i - 1 and not tokens[j].text[0].isalnum())


def capitalised_inside(tokens: list[Tok]) -> list[str]:
    """Words capitalised where the position does not ask for it (not opening a sentence or quotation):
    the evidence that a word is part of a name."""
    if is_shouting(tokens):
        return []
    return [t.word for i, t in enumerate(tokens) if _is_name_word(t, False) and not _is_initial(tokens, i)]


def spot(
    sentence: Sentence,
    index: int,
    tokens: list[Tok],
    lower_vocab: set[str],
    capitalised: Counter[str] | None = None,
) -> list[Mention]:
    """The name mentions of one sentence. `capitalised` counts, over the whole text unit, the words that
    `capitalised_inside` found: a sentence-initial word that the unit writes in lower case and never
    capitalises elsewhere does not start a name whose next word is ('Suddenly Rudolph' -> 'Rudolph');
    a first name is never written in lower case, so 'Ada Lovelace' stays whole."""
    shouting = is_shouting(tokens)
    spans: list[tuple[int, int]] = []
    i, n = 0, len(tokens)
    while i < n:
        if not _is_name_word(tokens[i], shouting):
            i += 1
            continue
        j = i
        while True:
            nxt = j + 1
            if _ends_sentence(tokens[j]) or (
                _POSSESSIVE_TOKEN.match(tokens[j].text) and not _possessive_inside(tokens, j, shouting)
            ):
                break
            if nxt < n and _is_name_word(tokens[nxt], shouting) and not _style_break(tokens, j, nxt):
                j = nxt
                continue
            # connectors ('of', 'van', 'of the') only inside a name: a name word must follow them
            k = nxt
            while k < n and k - nxt < 2 and _is_connector(tokens, k):
                k += 1
            if k > nxt and k < n and _is_name_word(tokens[k], shouting) and tokens[k].word not in CALENDAR:
                j = k
                continue
            break
        spans.append((i, j))
        i = j + 1

    mentions = []
    for first, last in spans:
        span = trim_span(tokens, first, last, lower_vocab)
        if span is None:
            continue
        first, last = span
        if (
            last > first
            and capitalised is not None
            and _is_initial(tokens, first)
            and tokens[first].word not in lx.HONORIFICS
            and capitalised[tokens[first].word] == 0
            and tokens[first].word in lower_vocab
            and capitalised[tokens[first + 1].word] >= 2
        ):
            first += 1
        if len({tokens[k].word for k in range(first, last + 1)}) == 1:
            last = first  # 'Scrooge Scrooge': one name said twice
        words = [tokens[k].text for k in range(first, last + 1)]
        surface = surface_form(sentence.text[tokens[first].start : tokens[last].end])
        key = normalize_name(surface)
        if not key or not acceptable_name(words, key, shouting):
            continue
        votes = _type_votes(tokens, first, last, key, shouting)
        first, last = _adjust_edges(tokens, first, last)
        surface = surface_form(sentence.text[tokens[first].start : tokens[last].end])
        key = normalize_name(surface)
        mention = Mention(key, surface, index, first, last, votes)
        if first == last and _is_initial(tokens, first):
            mention.initial_single = True
            mention.before_verb = bool(_POSSESSIVE_TOKEN.match(tokens[first].text)) or _verb_follows(
                tokens, first
            )
        mentions.append(mention)
    mentions.extend(_quoted_titles(sentence, index, tokens, mentions))
    return mentions


def _caps_word(tok: Tok) -> bool:
    t = tok.text.rstrip(".")
    return len(t) >= 2 and t[0].isalpha() and t.isupper()


def _style_break(tokens: list[Tok], a: int, b: int) -> bool:
    """Whether a name must not run on from token a to b: an all-capital heading word meets a title-case
    word ('MARLEY'S GHOST Marley', 'CHAPTER IV Rudolph'). A short acronym alone ('NASA Ames') may."""
    if _caps_word(tokens[a]) == _caps_word(tokens[b]):
        return False
    caps, other = (a, b) if _caps_word(tokens[a]) else (b, a)
    beyond = caps - 1 if caps < other else caps + 1
    heading = 0 <= beyond < len(tokens) and _caps_word(tokens[beyond])
    return heading or len(tokens[caps].text.rstrip(".")) >= 6


def _adjust_edges(tokens: list[Tok], first: int, last: int) -> tuple[int, int]:
    """'Professor Abraham Van Helsing' -> 'Abraham Van Helsing' (the honorific only typed it; with
    one name word left, as in 'Mr. Fezziwig', it stays); '2017 World Series' keeps its year."""
    words = [tokens[k].word for k in range(first, last + 1)]
    head = words[words.index("of") - 1] if "of" in words[1:] else words[-1]
    headed = head in lx.ORGANIZATION_HEADS or head in lx.GEO_HEADS or head in lx.EVENT_HEADS
    if words[0] in lx.DROPPED_HONORIFICS and len(words) >= 3 and not headed:
        first += 1
    if head in lx.EVENT_HEADS and first > 0 and _YEAR_OR_ORDINAL.match(tokens[first - 1].text):
        first -= 1
    return first, last


def _possessive_inside(tokens: list[Tok], j: int, shouting: bool) -> bool:
    """Whether a possessive belongs inside a name ("Men's Studies Press", "St. Paul's Cathedral")
    rather than ending one ("Scrooge's nephew", "Marley's Ghost")."""
    m = _POSSESSIVE_TOKEN.match(tokens[j].text)
    nxt = j + 1
    if m is None or nxt >= len(tokens) or not _is_name_word(tokens[nxt], shouting):
        return False
    if m.group(1).lower() in _PLURAL_POSSESSORS or (j > 0 and tokens[j - 1].word in ("st", "saint")):
        return True
    k = nxt
    while k + 1 < len(tokens) and _is_name_word(tokens[k + 1], shouting):
        k += 1
    return tokens[k].word in lx.ORGANIZATION_HEADS or tokens[k].word in lx.GEO_HEADS


def _verb_follows(tokens: list[Tok], i: int) -> bool:
    if i + 1 >= len(tokens):
        return False
    w = tokens[i + 1].text
    lw = w.lower()
    if w == "(":  # 'Aschenbrödel ("Cinderella") is ...', 'Betrayed (1917) is ...'
        return True
    return (
        lw in lx.CLAIM_VERBS or lw in lx.PERSON_VERBS or (w.islower() and lw.endswith("ed") and len(lw) >= 5)
    )


def keep_initial(mentions: list[Mention]) -> list[Mention]:
    """A lone word opening a sentence ('External heat ...', 'Paris is ...') is kept when the unit also
    capitalises it elsewhere, a type rule recognises it, or a verb follows it (it is the subject)."""
    elsewhere = {m.key for m in mentions if not m.initial_single}
    return [
        m
        for m in mentions
        if not m.initial_single
        or m.key in elsewhere
        or m.before_verb
        or max(m.votes.values(), default=0) >= _STRONG
    ]


def _ends_sentence(tok: Tok) -> bool:
    """A word carrying a sentence's final period ('Joe.'), unlike 'Mr.', 'T.' or 'U.S.'."""
    word = tok.text[:-1]
    return tok.text.endswith(".") and len(word) >= 2 and "." not in word and word.lower() not in ABBREVIATIONS


def _is_connector(tokens: list[Tok], k: int) -> bool:
    word = tokens[k].text.lower()
    if word in lx.NAME_CONNECTORS and word not in ("and", "&"):
        return True
    return word in lx.ARTICLE_AFTER_OF and k > 0 and tokens[k - 1].text.lower() == "of"


def trim_span(tokens: list[Tok], first: int, last: int, lower_vocab: set[str]) -> tuple[int, int] | None:
    """Drop leading/trailing stop words and connectors, and a common word that only opens the sentence."""
    while first <= last:
        word = tokens[first].word
        # 'Van Helsing', 'De Gaulle': a capitalised particle opens the name
        connector = word in lx.NAME_CONNECTORS and tokens[first].text.islower()
        stop = connector or (word in lx.STOP_WORDS and word not in lx.HONORIFICS)
        # a lone word opening the sentence and written in lower case elsewhere is a common word
        common = first == last and _is_initial(tokens, first) and word in lower_vocab
        if not (stop or common):
            break
        first += 1
    while last >= first and (tokens[last].word in lx.NAME_CONNECTORS or tokens[last].word in lx.STOP_WORDS):
        if tokens[last].text == "I" and last > first:
            break  # a regnal number ('Nicholas I'), not the pronoun
        last -= 1
    return (first, last) if first <= last else None


def surface_form(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    m = _POSSESSIVE_TOKEN.match(text)
    if m:
        text = m.group(1)
    last = text.rsplit(" ", 1)[-1]
    if last.endswith(".") and _ends_sentence(Tok(last, 0, 0)):
        text = text[:-1]
    return text


def acceptable_name(words: list[str], key: str, shouting: bool) -> bool:
    if len(words) > MAX_NAME_TOKENS:
        return False
    significant = [w for w in words if w.rstrip(".").lower() not in lx.HONORIFICS]
    if not significant:
        return False  # 'Sir', 'Mr.' alone
    if len(words) == 1:
        w = words[0].rstrip(".")
        if len(w) < 2 or w.lower() in lx.STOP_WORDS or w.lower() in lx.NOT_NAMES_ALONE or w.isdigit():
            return False
        if w.isupper() and (w.lower() in lx.ACRONYM_STOP or _ROMAN.match(w) or len(w) > 6):
            return False
    return key not in lx.STOP_WORDS and key not in lx.NOT_NAMES_ALONE


def _type_votes(tokens: list[Tok], first: int, last: int, key: str, shouting: bool) -> Counter[str]:
    votes: Counter[str] = Counter()
    words = [tokens[k].word for k in range(first, last + 1)]
    head = words[words.index("of") - 1] if "of" in words[1:] else words[-1]
    if head in lx.ORGANIZATION_HEADS:
        votes["organization"] += _STRONG
    elif head in lx.GEO_HEADS or words[0] in lx.GEO_FIRST:
        votes["geo"] += _STRONG
    elif head in lx.EVENT_HEADS:
        votes["event"] += _STRONG
    elif words[0] in lx.HONORIFICS and len(words) > 1:
        votes["person"] += _STRONG
    elif key in lx.GEO_NAMES:
        votes["geo"] += _STRONG
    elif words[0] in lx.GIVEN_NAMES and len(words) <= 3 or head in lx.PERSON_HEADS:
        votes["person"] += _STRONG
    elif len(words) == 1 and key in lx.NATIONALITIES:
        votes["geo"] += _STRONG
    elif len(words) == 1 and tokens[first].text.rstrip(".").replace(".", "").isupper() and len(key) > 1:
        votes["geo" if key.replace(" ", "") in lx.GEO_ACRONYMS else "organization"] += _STRONG
    elif len(words) > 1 and any(
        len(w) == 1 and tokens[first + i].text.endswith(".") for i, w in enumerate(words)
    ):
        votes["person"] += _STRONG  # an initial: 'George T. Solomon'
    after = tokens[last + 1].word if last + 1 < len(tokens) else ""
    after2 = tokens[last + 2].word if last + 2 < len(tokens) else ""
    before = tokens[first - 1].word if first > 0 else ""
    possessive = bool(_POSSESSIVE_TOKEN.match(tokens[last].text))
    if (
        after in lx.PERSON_VERBS
        or after in lx.PERSON_FOLLOWERS
        or before in _SPEECH_BEFORE
        or (after == "," and after2 in lx.PERSON_FOLLOWERS)
        or (possessive and after in lx.KINSHIP)
    ):
        votes["person"] += _WEAK
    elif (
        before in lx.ORGANIZATION_BEFORE
        or after in lx.ORGANIZATION_VERBS
        or (possessive and after in lx.ORGANIZATION_NOUNS)
    ):
        votes["organization"] += _WEAK
    elif before in lx.GEO_PREPOSITIONS and not possessive:
        votes["geo"] += _WEAK
    return votes


def _quoted_titles(sentence: Sentence, index: int, tokens: list[Tok], found: list[Mention]) -> list[Mention]:
    """Title-case phrases in double quotes: names of works ('"The Hollywood Reporter"')."""
    out = []
    for m in re.finditer(r"[\"“]([^\"“”]{2,80})[\"”]", sentence.text):
        inner = m.group(1).strip()
        words = inner.split()
        if not words or len(words) > 8 or inner[-1] in ".,!?;:" or not words[0][0].isupper():
            continue
        content = [w for w in words if w.lower() not in lx.NAME_CONNECTORS and w.lower() not in lx.STOP_WORDS]
        if not content or sum(w[0].isupper() for w in content) < len(content):
            continue
        key = normalize_name(inner)
        if not key or key in lx.STOP_WORDS:
            continue
        first = next((k for k, t in enumerate(tokens) if t.start >= m.start(1)), 0)
        last = max((k for k, t in enumerate(tokens) if t.end <= m.end(1)), default=first)
        # a name spotted inside the title is part of the title, not a mention of its own
        found[:] = [f for f in found if f.sentence != index or f.last_token < first or f.first_token > last]
        out.append(Mention(key, inner, index, first, last, Counter()))
    return out


def decide_type(mentions: list[Mention], allowed: set[str]) -> str:
    votes: Counter[str] = Counter()
    for m in mentions:
        votes.update(m.votes)
    ranked = sorted(((v, t) for t, v in votes.items() if t in allowed), key=lambda vt: (-vt[0], vt[1]))
    return ranked[0][1] if ranked else GENERIC_TYPE


def most_common(values: list[str]) -> str:
    counts = Counter(values)
    return min(counts, key=lambda v: (-counts[v], v))
