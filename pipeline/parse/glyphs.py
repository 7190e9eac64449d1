"""Text as a PDF's fonts mis-map it, mended at parse time (after NFKC, which already turns ligatures such
as 'ﬁ' into 'fi'):

- **Missing glyphs.** A glyph the font maps to no character comes out as U+FFFD, a private-use code
  point (symbol fonts put their bullets at U+F0B7 and the like) or a C1 control (the gnuplot manual's
  bullets are U+0088): a box in a browser, and noise in every sentence quoted from it. One that opens a
  line before a space is a list bullet and becomes '•'; anywhere else it is dropped. Other control
  characters (not tab or line breaks) are dropped too.
- **Detached accents.** LaTeX sets an accent as its own glyph before the letter, so the text layer reads
  'Br¨oker' or 'J´erˆome', which NFKC turns into 'Br ̈oker' (a space and a combining mark). A combining
  mark between two letters, with or without that space, or a spacing circumflex or caron between two
  letters, goes onto the letter after it: 'Bröker', 'Jérôme'.

Only characters are removed or joined, never added beyond the bullet, so the words stay the PDF's.
"""

from __future__ import annotations

import re
import unicodedata

_MISSING = "\ufffd\x80-\x9f\ue000-\uf8ff\U000f0000-\U0010ffff"
_BULLET = re.compile(rf"^([ \t]*)[{_MISSING}]+(?=[ \t])", re.MULTILINE)
_DROPPED = re.compile(rf"[{_MISSING}\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LETTER = r"[^\W\d_]"
# a combining mark (after the space NFKC puts before a spacing accent) or a spacing circumflex or caron,
# between two letters
_ACCENT = re.compile(rf"(?<={_LETTER}) ?([\u0300-\u036f]|[\u02c6\u02c7])({_LETTER})")
_SPACING = {"\u02c6": "\u0302", "\u02c7": "\u030c"}


def _accented(m: re.Match) -> str:
    mark = _SPACING.get(m.group(1), m.group(1))
    return unicodedata.normalize("NFC", m.group(2) + mark)


def mend_glyphs(text: str) -> str:
    """`text` (already NFKC) with missing glyphs made bullets or dropped and detached accents joined."""
    text = _BULLET.sub(r"\1•", text)
    text = _DROPPED.sub("", text)
    return _ACCENT.sub(_accented, text)
