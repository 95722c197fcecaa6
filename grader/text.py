"""Text clean-up shared by the importer and the graders.

Three different jobs live here and must not be confused:

* ``clean`` repairs *display* text from exam papers (pinyin annotations, broken bytes) and is
  applied once, at import.
* ``match_key`` builds a *comparison* key (NFKC, case, spaces, Traditional → Simplified) and is
  never shown to anyone.
* ``features`` are the words and character bigrams of a text, for wording overlap (key-point
  coverage, the evidence check, the scripted judge).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from opencc import OpenCC

# Pinyin annotations such as 訓(xùn)練: a parenthesised syllable with at least one tone mark.
# Requiring a tone mark keeps real parentheticals like "(int8)" or "(BERT/GPT)" intact. Where
# the paper's bytes were mangled the opening bracket survives as "?" (因?yàn)...): strip those too.
_TONED = "āáǎàēéěèīíǐìōóǒòūúǔùǖǘǚǜńňǹḿ"
# The syllable is taken whole once a tone mark is seen in it: trying each split of a long run
# of toned letters around one tone mark was quadratic ("(" + "ā" * 20000: minutes).
_PINYIN = re.compile(rf"[(（?？\ufffd]\s*+(?=[a-zü{_TONED}]*[{_TONED}])[a-zü{_TONED}]++\s*+[)）]")
_REPLACEMENT_CHARS = re.compile("[\ufffd\u200b\u200c\u200d\u2060\ufeff]")


def strip_pinyin(text: str) -> str:
    """Remove pinyin annotations: ``訓(xùn)練`` → ``訓練``."""
    return _PINYIN.sub("", text)


def clean(text: str) -> str:
    """Display clean-up for imported text: pinyin annotations, broken bytes, zero-width marks."""
    return _REPLACEMENT_CHARS.sub("", strip_pinyin(text))


@lru_cache(maxsize=1)
def _t2s() -> OpenCC:
    import opencc

    return opencc.OpenCC("t2s")


@lru_cache(maxsize=1)
def _s2t() -> OpenCC:
    import opencc

    return opencc.OpenCC("s2t")


def to_simplified(text: str) -> str:
    simplified: str = _t2s().convert(text)
    return simplified


def to_traditional(text: str) -> str:
    traditional: str = _s2t().convert(text)
    return traditional


_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = "。．.，,、；;：:！!？?\"'“”‘’「」『』《》〈〉"


def match_key(text: str) -> str:
    """Comparison key: NFKC (full-width → half-width), case-folded, no spaces, Simplified."""
    key = unicodedata.normalize("NFKC", text).casefold()
    key = _SPACE.sub("", key)
    key = to_simplified(key)
    return key.strip(_EDGE_PUNCT)


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def language_of(text: str) -> Literal["zh", "en"]:
    """'zh' when the text has any real amount of Chinese, else 'en' (code and terms are Latin)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return "zh" if cjk >= 10 or cjk * 4 >= latin else "en"


# Sentence ends, line breaks and clause commas: key points are often one clause of a sentence.
_SENTENCE_END = re.compile(r"(?<=[。；;！!？?，,\n])|(?<=[.．])(?=\s)")
_CONTENT = re.compile(r"[\w\u3400-\u9fff\uf900-\ufaff]")


def sentences_of(text: str, min_chars: int = 2) -> list[str]:
    """The text's sentences and clauses, stripped, dropping fragments shorter than ``min_chars``."""
    parts = (p.strip(" \t\r\n，,。.．；;：:、") for p in _SENTENCE_END.split(text))
    return [p for p in parts if len(p) >= min_chars]


def content_chars(text: str) -> int:
    """Letters, digits and CJK characters: punctuation and spaces are not an answer."""
    return len(_CONTENT.findall(text))


# Wording features: what key-point coverage and the evidence check compare.
_WORD = re.compile(r"[a-z0-9_]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


def features(text: str) -> set[str]:
    """Words (Latin) and character bigrams (Chinese) of the text, on its match key."""
    key = match_key(text)
    # Words come from the text with its spaces kept: the match key drops spaces, which glued
    # every English sentence into one "word" and left English coverage at 0.
    spaced = unicodedata.normalize("NFKC", text).casefold()
    grams = {w for w in _WORD.findall(spaced) if len(w) > 1}
    for run in _CJK_RUN.findall(key):
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            grams.add(run)
    return grams


def point_coverage(key_point: str, answer_features: set[str]) -> float:
    """Share of the key point's wording features that the answer's features contain."""
    wanted = features(key_point)
    return len(wanted & answer_features) / len(wanted) if wanted else 0.0


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored or written as UTF-8, or None when it can: a NUL character
    (PostgreSQL refuses it in text) or a lone surrogate (not Unicode; JSON's ``\\ud800`` makes
    one). Every boundary that takes text into a database or a file asks this first."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (\\u{ord(text[exc.start]):04x}), which is not Unicode"
    return None
