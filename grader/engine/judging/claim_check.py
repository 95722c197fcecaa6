"""Claims the rules left unread, asked of a judge: one token, against an empty answer.

A judge whose claim reading was measured (``scoring.judge_trust``: a margin per answer
language, fitted on graded answers) is asked, for each decisive part the rules found absent,
"does the answer state <claim>?" (one forward step, ``prompts/claim_check/``). Small models say
yes to nearly any such question, so the question is asked twice: on the answer, and once per
claim on an empty answer to the same question; the answer states the claim when its P(yes)
exceeds the empty answer's by the judge's margin (``MARGIN`` for a judge trusted on criteria
whose claim reading was never fitted). A part so read verifies its points (``by: judge``,
``finish.verified``). Rules decide first: a claim they read asserted or negated is never asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grader.engine.judging.prompts import defuse_delimiters, load_prompt, render_template
from grader.judge.base import Judge, LabelRequest, LabelScores
from grader.models import Question

MARGIN = 0.3  # P(yes) above the empty answer's, or the judge reads nothing
YES_NO = {"zh": ("否", "是"), "en": ("no", "yes")}  # worst first, as the protocol orders labels
PROMPT = "claim_check"
EMPTY = {"zh": "（空）", "en": "(empty)"}


@dataclass(frozen=True)
class ClaimAsk:
    """One claim to read in one answer."""

    key: str  # unique within a call: answer id and the claim's place in its rubric
    question: Question
    claim: str
    answer: str


def judge_claims(judge: Judge, asks: Sequence[ClaimAsk]) -> dict[str, float]:
    """Each ask's gap, P(yes | answer) − P(yes | empty answer), by key, in one judge call;
    an ask whose distribution failed is left out (read as nothing)."""
    if not asks:
        return {}
    empties = {(a.question.id, a.claim): a for a in asks}
    batch = [_request(a, a.answer, a.key) for a in asks]
    batch += [
        _request(a, EMPTY[_language(a)], f"empty/{n}") for n, a in enumerate(empties.values())
    ]
    scores = judge.score_labels(batch)
    baseline = {
        key: _yes(ask, scores[len(asks) + n]) for n, (key, ask) in enumerate(empties.items())
    }
    gaps = {}
    for ask, got in zip(asks, scores[: len(asks)], strict=True):
        yes, empty = _yes(ask, got), baseline[(ask.question.id, ask.claim)]
        if yes is not None and empty is not None:
            gaps[ask.key] = round(yes - empty, 3)
    return gaps


def stated(gap: float | None, margin: float = MARGIN) -> bool:
    return gap is not None and gap >= margin


def _request(ask: ClaimAsk, answer: str, key: str) -> LabelRequest:
    language = _language(ask)
    prompt = load_prompt(PROMPT, language)
    head = prompt.render_part("user", question=ask.question, answer=defuse_delimiters(answer))
    question = render_template(PROMPT, language, "ask", claim=ask.claim)
    return LabelRequest(
        id=f"{key}/claim",
        group=f"claim:{ask.question.id}+{prompt.version}",
        messages=[
            prompt.render_part("system"),
            {"role": "user", "content": f"{head['content']}\n\n{question}"},
        ],
        labels=YES_NO[language],
        subject=ask.claim,
        answer=answer,
        shared_chars=len(head["content"]) + 2,
    )


def _language(ask: ClaimAsk) -> str:
    return "en" if ask.question.language == "en" else "zh"


def _yes(ask: ClaimAsk, scores: LabelScores) -> float | None:
    if scores.error is not None:
        return None
    return scores.probabilities.get(YES_NO[_language(ask)][1], 0.0)
