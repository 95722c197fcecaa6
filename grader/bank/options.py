"""Choice options: ``A.`` ``A．`` ``A、`` ``A:`` ``(A)`` ``A)`` one per line or all on one line."""

from __future__ import annotations

import re

from grader.bank.numbering import strong_boundary

_LETTERS = "ABCDEFGH"


def _option_mark(letter: str) -> str:
    return rf"{letter}\s*[.．、:：]|[（(]\s*{letter}\s*[)）]|(?<![（(]){letter}[)）]"


def _marks(region: str) -> list[tuple[int, int, int]]:
    """(letter index, mark start, text start) of each option, or [] when fewer than two."""
    # "A." right after a word ("dropA.0.5%") is an option only when nothing cleaner is there
    # ("LLaMA.cpp" is not option A), so try clean candidates first.
    candidates = list(re.finditer(_option_mark("A"), region))
    candidates.sort(key=lambda m: not strong_boundary(region, m.start()))
    for first in candidates:
        marks = [(0, first.start(), first.end())]
        for i, letter in enumerate(_LETTERS[1:], 1):
            m = re.compile(_option_mark(letter)).search(region, marks[-1][2])
            if m is None:
                break
            marks.append((i, m.start(), m.end()))
        if len(marks) >= 2:
            return marks
    return []


def options_start(region: str) -> int | None:
    """Where the options begin in ``region``, if it has any."""
    marks = _marks(region)
    return marks[0][1] if marks else None


def split_options(region: str) -> tuple[str, dict[str, str]]:
    """Split ``stem A.x B.y …`` into the stem and its options, letters in order."""
    marks = _marks(region)
    if not marks:
        return region, {}
    options = {}
    for j, (i, _, body) in enumerate(marks):
        stop = marks[j + 1][1] if j + 1 < len(marks) else len(region)
        options[_LETTERS[i]] = region[body:stop].strip()
    return region[: marks[0][1]].strip(), options
