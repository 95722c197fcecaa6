"""The exam teaches the essay grader: the bank's own objective items, as labelled claims.

A true/false item is a statement with its truth; a choice item's options complete its stem
into statements, true where the key names them (inverted for "错误的是" stems); a fill-in's
key completes its blank into a true statement. Those that share enough wording with an
essay question (its stem, reference and rubric) are proposed for its rubric: false ones as
wrong claims on the criterion they read most like, true ones as what a criterion's parts
may say. An instructor accepts them (``grader rubric claims --accept``): the key of a
published paper is sometimes wrong, and nothing is added unseen.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from grader.models import Bank, Criterion, Question, QuestionType, Rubric
from grader.text import match_key, to_simplified

MIN_TOPIC = 0.25  # of a statement's 3-grams found in the essay question's own text
_BLANK = re.compile(r"_{2,}|（\s*）|\(\s*\)")
_ASKS_WRONG = ("错误的是", "不正确的是", "错误的有", "不正确的有", "不属于", "说法错误")
_LEAD = re.compile(r"^(?:以下|下列)?(?:关于|有关)?")
_TAIL = re.compile(r"(?:的)?(?:说法|描述|叙述)?[，,]?\s*(?:正确|错误|不正确)的(?:是|有)\s*$")


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """Character n-grams of the text's letters, digits and CJK, on its comparison key."""
    key = "".join(ch for ch in match_key(text) if ch.isalnum())
    return {key[i : i + n] for i in range(len(key) - n + 1)} if len(key) >= n else {key} - {""}


class ProposedClaim(BaseModel):
    """A statement from the exam's objective items, proposed for an essay question's rubric."""

    source: str  # the objective item's question id
    claim: str
    true: bool
    criterion: str  # the criterion it reads most like
    topic: float  # share of its wording found in the essay question's text


def statements(item: Question) -> list[tuple[str, bool]]:
    """The labelled statements an objective item makes, in Simplified: (statement, true)."""
    stem = to_simplified(item.stem.strip().rstrip("。.？?：:"))
    if item.type == QuestionType.TRUE_FALSE and isinstance(item.answer, bool):
        return [(_BLANK.sub("", stem).strip(), item.answer)]
    if item.type == QuestionType.FILL_BLANK and isinstance(item.answer, str) and item.answer:
        return [(_BLANK.sub(to_simplified(item.answer), stem, count=1), True)]
    if item.type in (QuestionType.SINGLE_CHOICE, QuestionType.MULTIPLE_CHOICE):
        key = item.answer if isinstance(item.answer, str) else ""
        wrong_asked = any(w in match_key(stem) for w in _ASKS_WRONG)
        subject = _TAIL.sub("", _LEAD.sub("", stem))
        return [
            (_completed(stem, subject, to_simplified(text)), (letter in key) != wrong_asked)
            for letter, text in item.options.items()
            if text.strip()
        ]
    return []


def propose(
    bank: Bank, question: Question, rubric: Rubric, *, with_true: bool = False
) -> list[ProposedClaim]:
    """The bank's false statements on this essay question's topic (the wrong claims to
    propose), with its true ones too when ``with_true``; none its rubric lists already, most
    on-topic first."""
    own = char_ngrams(_essay_text(question, rubric))
    listed = {match_key(w.claim) for c in rubric.criteria for w in c.wrong_claims}
    found = []
    for item in bank.questions:
        if not item.type.objective:
            continue
        said = statements(item)
        siblings = [claim for claim, _ in said]
        for claim, true in said:
            grams = char_ngrams(claim)
            if not grams or match_key(claim) in listed or (true and not with_true):
                continue
            topic = len(grams & own) / len(grams)
            if topic < MIN_TOPIC:
                continue
            found.append(
                ProposedClaim(
                    source=item.id,
                    claim=claim,
                    true=true,
                    criterion=_closest(claim, question.stem, rubric.criteria, siblings),
                    topic=round(topic, 3),
                )
            )
    return sorted(found, key=lambda p: -p.topic)


def _completed(stem: str, subject: str, option: str) -> str:
    """A choice completed into a statement: the option alone when the stem only asks which
    statement is right ("以下关于梯度累积的说法，正确的是"), with its subject in front when
    the option does not name it; else the stem with the option in its blank or after it."""
    option = option.strip().rstrip("。.")
    if _TAIL.search(stem):
        return option if match_key(subject) in match_key(option) else f"{subject}{option}"
    if _BLANK.search(stem):
        return _BLANK.sub(option, stem, count=1)
    return f"{stem}{option}"


def _essay_text(question: Question, rubric: Rubric) -> str:
    parts = [question.stem, question.answer if isinstance(question.answer, str) else ""]
    for c in rubric.criteria:
        parts += [c.description, *c.key_points, *(lv.descriptor for lv in c.levels)]
        parts += [w.claim for w in c.wrong_claims]
    return " ".join(parts)


def _closest(claim: str, stem: str, criteria: list[Criterion], siblings: list[str]) -> str:
    """The criterion whose text shares the most of the claim's wording beyond the stem's
    (character pairs: the question's topic words are in every criterion), first of what tells
    it from its ``siblings`` (the other statements of its item: a choice's stem is in each),
    then of all of it. A sibling accepted as a wrong claim is not the criterion's own text:
    it would draw every statement of its item by their common stem."""
    grams = char_ngrams(match_key(claim), 2) - char_ngrams(match_key(stem), 2)
    others = [char_ngrams(match_key(s), 2) for s in siblings if match_key(s) != match_key(claim)]
    telling = grams - grams.intersection(*others) if others else grams
    items = {match_key(s) for s in siblings}

    def shared(c: Criterion) -> tuple[int, int]:
        text = [c.description, *c.key_points, *(lv.descriptor for lv in c.levels)]
        text += [w.claim for w in c.wrong_claims if match_key(w.claim) not in items]
        found = char_ngrams(match_key(" ".join(text)), 2)
        return len(telling & found), len(grams & found)

    return max(criteria, key=shared).id
