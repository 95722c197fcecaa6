"""Reading short answers written by people: choice letters and true/false marks.

Used on both sides of objective grading: the answer keys printed in papers (``答案：B、C、D``,
``（√）``, ``答案：正确``) and the students' answers (``b``, ``（B）``, ``选B``, ``a, b, d``).
Both return ``None`` when the text is not an answer of that kind, so callers can report it
instead of guessing.
"""

from __future__ import annotations

import re
import unicodedata

from grader.text import to_simplified

_LETTERS = "ABCDEFGH"
_PREFIX = re.compile(
    r"^(?:答案|正确答案|参考答案|我的答案|答|选项|选择|选|answer|ans|option|options|choice)"
    r"\s*+(?:是|为|[:：=])?\s*+",
    re.IGNORECASE,
)
_BRACKETS = str.maketrans({c: " " for c in "()（）[]【】{}<>《》「」\"'“”‘’"})
# Letters separated by nothing, spaces, commas, 、, slashes, 和/与/及, "and", "&" or "+".
# Student text: every run of spaces is taken whole (``\s*+``), so "A A A … z" is read in one
# pass instead of trying each way of splitting the spaces around an absent separator.
_LETTER_LIST = re.compile(
    rf"^([{_LETTERS}](?:\s*+(?:(?:[,，、/;；&+]|和|与|及|\band\b)\s*+)?[{_LETTERS}])*)"
    r"\s*+(?:[.．:：、]\s*\S.*|[。.]?)$",
    re.IGNORECASE | re.DOTALL,
)

_AND = re.compile(r"\band\b", re.IGNORECASE)


def _prepare(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = to_simplified(text).translate(_BRACKETS).strip()
    text = _PREFIX.sub("", text).strip()
    return text


def choice_letters(text: str, options: dict[str, str] | None = None) -> str | None:
    """The chosen letters, sorted and de-duplicated ("BCD"), or None if ``text`` names none.

    A trailing option text is allowed ("B. PyTorch"); with ``options`` given, an answer that is
    exactly one option's text is read as that option's letter.
    """
    body = _prepare(text)
    if not body:
        return None
    m = _LETTER_LIST.match(body)
    if m:
        listed = _AND.sub(" ", m.group(1))  # the "a" and "d" of "and" are no choices
        letters = {c.upper() for c in listed if c.upper() in _LETTERS}
        return "".join(sorted(letters))
    if options:
        from grader.text import match_key

        wanted = match_key(body)
        hits = [letter for letter, option in options.items() if match_key(option) == wanted]
        if len(hits) == 1:
            return hits[0]
    return None


_TRUE = {"√", "✓", "✔", "☑", "对", "是", "正确", "t", "true", "yes", "y", "r", "right", "correct"}
_FALSE = {
    "×",
    "✗",
    "✘",
    "x",
    "☒",
    "错",
    "否",
    "错误",
    "不正确",
    "不对",
    "f",
    "false",
    "no",
    "n",
    "wrong",
}
_TF_STRIP = re.compile(r"[\s。.！!,，、]+")


def true_false(text: str) -> bool | None:
    """True for ✓-like marks (√ 对 正确 T true), False for ✗-like ones, None otherwise."""
    token = _TF_STRIP.sub("", _prepare(text)).casefold()
    # NFKC turns "×" into itself but some fonts' "ｘ" into "x": both are in _FALSE.
    if token in _TRUE:
        return True
    if token in _FALSE:
        return False
    return None
