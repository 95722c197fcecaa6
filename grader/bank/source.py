"""A paper's text, made regular before anything is parsed, with offsets that map to its lines.

Exported Word files and scans bring characters that look alike but match differently
(full-width ``Ａ１``, no-break and ideographic spaces, tabs) and lines that are not the paper
(``第 3 页 共 8 页``, ``- 3 -``, the title repeated at the top of every page, the 密封线 of the
answer sheet). They are normalised line by line, so a report can still name the printed line.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from grader.errors import BankError
from grader.text import clean

# Full-width letters and digits read as ASCII (Ａ．→ A．); punctuation keeps its width, the
# patterns accept both.
_FULL_WIDTH = {c: c - 0xFEE0 for r in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A))
               for c in range(r[0], r[1] + 1)}  # fmt: skip
_ODD_SPACES = re.compile("[\t\v\f\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_PAGE_MARK = re.compile(
    r"第\s*\d+\s*[页頁]\s*[,，、/／]?\s*(?:共\s*\d+\s*[页頁])?"
    r"|共\s*\d+\s*[页頁]\s*[,，、]?\s*(?:第\s*\d+\s*[页頁])?"
    r"|^\s*[-—–－]\s*\d+\s*[-—–－]\s*$|^\s*\d+\s*/\s*\d+\s*$|^\s*page\s*\d+(?:\s*(?:of|/)\s*\d+)?\s*$",
    re.IGNORECASE,
)
_SEAL_FILLER = re.compile(r"[\s.·…\-—_－=○●◆*|]+")
_SEAL_WORDS = set("装订线密封内外不要请勿答题")
# The score boxes a Word paper prints before each section: 得分 | 评卷人
_SCORE_BOX = re.compile(
    r"^(?:得分|评卷人|評卷人|阅卷人|閱卷人|评分人|評分人|复核人|復核人|核分人|签名)+$"
)


def decode(raw: bytes, file: str | Path) -> str:
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise BankError("not UTF-8 or GB18030 text", file=file)  # pragma: no cover


def _is_furniture(line: str, title: str) -> bool:
    """A page number, a running title, the 密封线 of an answer sheet or a 得分/评卷人 box."""
    if not line.strip():
        return False
    rest = _PAGE_MARK.sub("", line).strip()
    if rest != line.strip() and (not rest or rest.replace(" ", "") == title):
        return True
    seal = _SEAL_FILLER.sub("", line)
    if _SCORE_BOX.match(seal):
        return True
    return bool(seal) and set(seal) <= _SEAL_WORDS and ("线" in seal or "封" in seal)


def normalise(text: str) -> str:
    """Clean every line; page furniture becomes an empty line so line numbers stay as printed."""
    lines = [
        clean(_ODD_SPACES.sub(" ", line.rstrip("\r"))).translate(_FULL_WIDTH)
        for line in text.split("\n")
    ]
    first = next((line for line in lines if line.strip()), "")
    title = _PAGE_MARK.sub("", first).replace(" ", "")
    seen_title = False
    out = []
    for line in lines:
        if line.replace(" ", "") == title:
            out.append("" if seen_title else line)  # the title again at the top of a page
            seen_title = True
        else:
            out.append("" if _is_furniture(line, title) else line)
    return "\n".join(out)


class PaperText:
    """The normalised text of one paper: offsets → printed lines, and the text around a place."""

    def __init__(self, raw: str, file: str):
        self.file = file
        self.text = normalise(raw)
        self._line_starts = [0] + [i + 1 for i, c in enumerate(self.text) if c == "\n"]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset)

    def around(self, offset: int, width: int = 60) -> str:
        """About ``width`` characters from ``offset`` on one line, to show in a report."""
        start = max(0, offset - width // 4)
        snippet = " ".join(self.text[start : start + width].split())
        return ("…" if start else "") + snippet + ("…" if start + width < len(self.text) else "")
