"""An answer cut into clauses, each with a comparison key: NFKC, case-folded, Simplified,
without spaces, hyphens or underscores ("Micro-Batch" = "micro batch" = "microbatch"), and
the way back from a key position to the words before it (English negation reads words).

Every split is a single character class over the text: linear work on untrusted answers.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from grader.engine.reading.claims.lexicon import (
    CLAUSE_TAIL,
    CONDITION_ENDS,
    CONTRACTIONS,
    DISMISSALS,
    LATIN_PREFIXES,
    STATEMENT_MARKS_ZH,
    WIDE_NEGATORS,
)
from grader.engine.reading.claims.listing import FENCE, SHORT_CHARS
from grader.text import to_simplified

_SENTENCE_END = re.compile(r"[。！？!?；;\n]|\.(?=\s|$)")
_CLAUSE_END = re.compile(r"[，,、：:（）]")
_PHRASE_START = re.compile(r"[，,（）]")
_DROPPED = frozenset(" \t\r-_‐‑–—")
# A heading or a condition is read before each clause after it: only its last characters, so a
# sentence of one long heading and many clauses costs its length, not their product.
HEADING_CHARS = 60
_LONGEST_END = max(map(len, CONDITION_ENDS))  # a condition says more than its ending
LIST_ITEMS = 6  # terms in a row, split at 「、」, each at most SHORT_CHARS long: a list
_TERM_UNIT = re.compile(r"[\u3400-\u9fff]|[a-z0-9_]+")  # a Chinese character or a Latin word
_WORD = re.compile(r"[a-z']+")


_CONTRACTION = re.compile(
    r"\b(?:" + "|".join(sorted(map(re.escape, CONTRACTIONS), key=len, reverse=True)) + r")\b"
)  # literal words between word boundaries: linear


def normal_of(text: str) -> str:
    """NFKC, case-folded, Simplified, English contractions in full words ("doesn't" →
    "does not"): what keys and English words are read from."""
    folded = to_simplified(unicodedata.normalize("NFKC", text).casefold()).replace("’", "'")
    return _CONTRACTION.sub(lambda m: CONTRACTIONS[m.group()], folded)


@lru_cache(maxsize=4096)
def key_of(text: str) -> str:
    """The comparison key of a term or a clause."""
    return "".join(ch for ch in normal_of(text) if ch not in _DROPPED)


WIDE_KEYS = tuple(key_of(w) for w in WIDE_NEGATORS)
DISMISSAL_KEYS = tuple(key_of(w) for w in DISMISSALS)


@dataclass(frozen=True)
class Clause:
    """One clause: its text as written, its key, and for each key position the text before
    it (for English negation)."""

    text: str
    key: str
    sentence: int  # which sentence of the answer it is in
    wide_negation: int  # where its first wide negator ("不需要", "无需") starts; -1 if none
    dismissal: int  # where the predicate that ends it and dismisses what precedes starts; -1
    _spaced: str
    _at: tuple[int, ...]

    @staticmethod
    def of(text: str, sentence: int, heading: str = "") -> Clause:
        """``heading``: the text before a colon that heads this clause; its wide negators
        ("without", "不需要") negate what it says, not the clause it heads."""
        spaced = normal_of(text)
        kept = [(ch, i) for i, ch in enumerate(spaced) if ch not in _DROPPED]
        key = "".join(ch for ch, _ in kept)
        body = len(key_of(f"{heading}：")) if heading else 0
        wide = [at for w in WIDE_KEYS if (at := key.find(w, body)) >= 0]
        said = key.rstrip(CLAUSE_TAIL)
        ending = [len(said) - len(w) for w in DISMISSAL_KEYS if said.endswith(w)]
        return Clause(
            text=text.strip(),
            key=key,
            sentence=sentence,
            wide_negation=min(wide, default=-1),
            dismissal=min(ending, default=-1),
            _spaced=spaced,
            _at=tuple(i for _, i in kept),
        )

    def stands_alone(self, start: int, end: int) -> bool:
        """Whether the term at key positions [start, end) is a word of its own: no Latin
        letter or underscore before it, no underscore after it (an identifier's part, "zero"
        of "zero_grad", "step" of "accum_steps")."""
        first, last = self._at[start], self._at[end - 1]
        if first > 0 and (self._latin(first - 1) or self._spaced[first - 1] == "_"):
            return False
        return not self._spaced.startswith("_", last + 1)

    def after_prefix(self, start: int) -> bool:
        """Whether the term at key position ``start`` is glued to a prefix that makes it
        another word («recomputed» for «compute»): the Latin letters right before it, back to
        a non-letter, are one of ``LATIN_PREFIXES``."""
        first = self._at[start]
        begin = first
        while begin > 0 and first - begin < 4 and self._latin(begin - 1):
            begin -= 1
        glued = self._spaced[begin:first]
        return glued in LATIN_PREFIXES and not (begin > 0 and self._latin(begin - 1))

    def runs_on(self, end: int) -> bool:
        """Whether the term ending at key position ``end`` runs on into a Latin letter as
        written, with no space or mark between ("16bit", not "16 B in total")."""
        if end <= 0 or end >= len(self.key):
            return False
        after = self._at[end - 1] + 1
        return after < len(self._spaced) and self._latin(after)

    def _latin(self, at: int) -> bool:
        """Whether the character at ``at`` of the spaced text is a Latin letter."""
        return "a" <= self._spaced[at] <= "z"

    def words(self) -> list[str]:
        """The clause's English words."""
        return _WORD.findall(self._spaced)

    def words_before(self, position: int, count: int) -> list[tuple[str, int]]:
        """The ``count`` English words that end before key position ``position``, each with
        the key position it starts at."""
        end = self._at[position] if position < len(self._at) else len(self._spaced)
        first = max(0, end - 12 * count)
        words = [
            (m.group(), bisect_left(self._at, m.start()))
            for m in _WORD.finditer(self._spaced, first, end)
        ]
        return words[-count:]


def clauses_of(answer: str, code_lines: bool = False) -> list[Clause]:
    """The answer's clauses in order, numbered by sentence; empty fragments dropped. A fenced
    code block (a configuration, a training loop) is one clause: its commas split nothing;
    with ``code_lines``, each of its lines is a clause of one sentence (a statement and its
    comment: where a wrong claim is read, «# 进入循环前先把旧梯度清掉» says nothing of what
    ``loss.backward()`` lines below do)."""
    found: list[Clause] = []
    for k, chunk in enumerate(answer.split(FENCE)):
        if k % 2:  # inside a fence
            n = len(found) and found[-1].sentence + 1
            lines = chunk.split("\n") if code_lines else [chunk]
            found.extend(Clause.of(line, n) for line in lines if line.strip())
            continue
        first = found[-1].sentence + 1 if found else 0
        prose = "\n".join(_row_as_sentence(line) for line in chunk.split("\n"))
        for n, sentence in enumerate(_SENTENCE_END.split(prose), start=first):
            found.extend(_clauses(sentence, n))
    return found


_ROW_MARKS = str.maketrans({"；": "，", ";": ",", "。": "，"})  # a table row is one sentence


def _row_as_sentence(line: str) -> str:
    """A table row as a sentence its first cell heads («| 小数据 + 简单模型 | 显存充足；N = 1 |»
    reads «小数据 + 简单模型：显存充足，N = 1»); a rule row (``|---|---|``) says nothing. Any other
    line as written."""
    row = line.strip()
    if len(row) < 2 or row[0] != "|" or row[-1] != "|":
        return line
    cells = [c.strip() for c in row[1:-1].split("|")]
    if all(set(c) <= set("-: ") for c in cells):
        return ""
    said = [c for c in cells[1:] if c]
    if not said:
        return cells[0]
    body = "，".join(c.translate(_ROW_MARKS) for c in said)
    return f"{cells[0]}：{body}"


def _clauses(sentence: str, n: int) -> list[Clause]:
    """A sentence's clauses; what comes before its first colon heads the rest of it
    ("小数据集、简单模型：显存够用，一般不用梯度累积"): it is read again before each clause after;
    without a colon, a condition («…的话，») heads the clauses after it until the next one."""
    sentence = _without_lists(sentence)
    out, heading, condition, at = [], "", "", 0
    depth = _brace_depths(sentence) if "{" in sentence else None
    for m in _CLAUSE_END.finditer(sentence + "，"):
        if depth and m.start() < len(sentence) and depth[m.start()] > 0:
            continue  # inside an inline object ({"stage": 3, "offload": …}): one clause
        part = sentence[at : m.start()]
        at = m.end()
        head = heading or condition
        if part.strip():
            out.append(Clause.of(f"{head}：{part}", n, head) if head else Clause.of(part, n))
        if m.group() in "：:" and not heading:
            heading = _heading(sentence[: m.start()])[-HEADING_CHARS:]
        elif m.group() in "，," and _conditional(part):
            condition = part.strip()
    return out


def _conditional(part: str) -> bool:
    """Whether a clause states the case the rest of its sentence speaks of («小数据集跟简单模型的话，
    …步数可以设很小»): it then heads the clauses after it, as a colon's heading does, until the
    next such clause."""
    said = part.strip()
    return _LONGEST_END < len(said) <= HEADING_CHARS and to_simplified(
        said[-_LONGEST_END:]
    ).endswith(CONDITION_ENDS)


def _without_lists(sentence: str) -> str:
    """The sentence without the terms it only enumerates: a list names the rubric's words
    and asserts none of its claims («涉及：有效批次、梯度噪声、更新次数、学习率、显存、通信次数»).
    Cut are the text after a sentence's heading when it is ``LIST_ITEMS`` short terms or more
    and nothing else, and any run of ``LIST_ITEMS`` − 1 short terms or more with 「、」 on both
    sides (a list's first and last terms may carry the sentence's verb: «循环里依次要用到
    zero_grad()、backward()、step()、损失缩放、no_sync、GradScaler 等工具» keeps its first and
    last clause). A term's examples in full-width brackets are part of it («优化器选择（Adam、
    SGD、LAMB）»). A shorter list («离线：AUC、GAUC、NDCG@10») is read as written: under
    a heading it may well be the answer (the features or metrics a design uses)."""
    if "、" not in sentence:
        return sentence
    flat = _without_asides(sentence)  # same length: positions are the sentence's
    colon = min((i for i in (flat.find("："), flat.find(":")) if i >= 0), default=-1)
    items = flat[colon + 1 :].split("、")
    if len(items) >= LIST_ITEMS and all(_term(i) and not _CLAUSE_END.search(i) for i in items):
        return sentence[: colon + 1]
    ends = [m.start() for m in _CLAUSE_END.finditer(flat)]
    spans = list(zip([0, *(e + 1 for e in ends)], [*(e + 1 for e in ends), len(flat)], strict=True))
    listed = [
        0 < k < len(ends) and flat[ends[k - 1]] == flat[ends[k]] == "、" and _term(flat[a:b])
        for k, (a, b) in enumerate(spans)
    ]
    kept, run = [], []
    for piece, term in zip([*(sentence[a:b] for a, b in spans), ""], [*listed, False], strict=True):
        if term:
            run.append(piece)
            continue
        if len(run) < LIST_ITEMS - 1:
            kept.extend(run)
        kept.append(piece)
        run = []
    return "".join(kept)


def _without_asides(sentence: str) -> str:
    """The sentence with each closed full-width bracket, and what it holds, blanked to spaces:
    one pass, each character blanked at most once (only the outermost bracket is)."""
    chars, opened = list(sentence), []
    for at, ch in enumerate(sentence):
        if ch == "（":
            opened.append(at)
        elif ch == "）" and opened:
            start = opened.pop()
            if not opened:
                chars[start : at + 1] = " " * (at + 1 - start)
    return "".join(chars)


def _term(text: str) -> bool:
    """Whether ``text`` is short enough to be one listed term: Chinese characters and Latin
    words (``offload_optimizer`` is one) counted alike."""
    return 0 < len(_TERM_UNIT.findall(text.casefold())) <= SHORT_CHARS


def _heading(before: str) -> str:
    """What heads the clauses after a colon: the text before it, but only its last phrase
    where that text says something itself («我认为不应该先召回后排序，而是反过来：…»: a
    contrast or a denial is a statement, not a topic)."""
    said = to_simplified(before)
    if any(mark in said for mark in STATEMENT_MARKS_ZH):
        return _PHRASE_START.split(before)[-1].strip()
    return before.strip()


def _brace_depths(sentence: str) -> list[int]:
    """How many ``{`` are open at each character: one pass, never below 0."""
    depths, depth = [], 0
    for ch in sentence:
        if ch == "}":
            depth = max(0, depth - 1)
        depths.append(depth)
        if ch == "{":
            depth += 1
    return depths
