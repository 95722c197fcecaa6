"""Conclusions the rules cannot read, asked of the judge: one token, asked both ways.

A rubric's conclusion that ``conclusion_read`` leaves undecided (an answer that never says
正确/错误 plainly, a value in words) would go to review. The judge is asked instead, one forward
step as in the probability mode (``prompts/conclusion_check/``): "is the answer's conclusion
<expected>?" and, sharing the answer's prefix, "does it differ from <expected>?". The embedded
1.5B says yes to nearly any such question (P(是) 0.84–0.99 whether or not the answer makes the
claim: measured on the seed answers), so one question decides nothing: the judge's reading counts only when the two
questions disagree by ``MARGIN`` (match: P(yes | is) − P(yes | differs) ≥ MARGIN; mismatch: the
reverse), its confidence is that gap, and anything closer stays undecided (review). The
evidence is the answer's own sentence nearest the expected conclusion, never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grader.engine.judging.prompts import defuse_delimiters, load_prompt, render_template
from grader.engine.reading.conclusion_read import EVIDENCE_CHARS, ConclusionRead
from grader.judge.base import Judge, LabelRequest, LabelScores
from grader.models import Conclusion, Question
from grader.text import features, point_coverage, sentences_of

MARGIN = 0.3  # the two questions' P(yes) this far apart, or the judge decides nothing
YES_NO = {"zh": ("否", "是"), "en": ("no", "yes")}  # worst first, as the protocol orders labels
PROMPT = "conclusion_check"


@dataclass(frozen=True)
class Ask:
    """One answer whose conclusion the rules left undecided."""

    key: str  # unique within a call (the submission id)
    question: Question
    conclusion: Conclusion
    answer: str


def requests(ask: Ask) -> list[LabelRequest]:
    """The two questions (``is``, then ``differs``) on one shared prefix."""
    language = ask.question.language
    prompt = load_prompt(PROMPT, language)
    system = prompt.render_part("system")
    head = prompt.render_part("user", question=ask.question, answer=defuse_delimiters(ask.answer))[
        "content"
    ]
    out = []
    for differs in (False, True):
        question = render_template(
            PROMPT, language, "ask", expected=ask.conclusion.expected, differs=differs
        )
        out.append(
            LabelRequest(
                id=f"{ask.key}/conclusion/{'differs' if differs else 'is'}",
                group=f"conclusion:{ask.question.id}+{prompt.version}",
                messages=[system, {"role": "user", "content": f"{head}\n\n{question}"}],
                labels=YES_NO.get(language, YES_NO["en"]),
                subject=question,
                answer=ask.answer,
                shared_chars=len(head) + 2,
            )
        )
    return out


def judge_conclusions(judge: Judge, asks: Sequence[Ask]) -> dict[str, ConclusionRead]:
    """The judge's reading of each ask's conclusion, by key, in one judge call; an ask whose
    questions got no distribution, or too close a pair, reads as undecided."""
    batch = [r for ask in asks for r in requests(ask)]
    if not batch:
        return {}
    scores = judge.score_labels(batch)
    return {
        ask.key: reading_of(ask, scores[2 * k], scores[2 * k + 1]) for k, ask in enumerate(asks)
    }


def reading_of(ask: Ask, is_: LabelScores, differs: LabelScores) -> ConclusionRead:
    """Match, mismatch or undecided from the two distributions (module docstring)."""
    if is_.error is not None or differs.error is not None:
        return ConclusionRead(decision="undecided")
    yes = YES_NO.get(ask.question.language, YES_NO["en"])[1]
    gap = is_.probabilities.get(yes, 0.0) - differs.probabilities.get(yes, 0.0)
    if abs(gap) < MARGIN:
        return ConclusionRead(decision="undecided", confidence=round(abs(gap), 3))
    return ConclusionRead(
        decision="match" if gap > 0 else "mismatch",
        read=ask.conclusion.expected if gap > 0 else None,
        evidence=nearest_sentence(ask.answer, ask.conclusion.expected),
        confidence=round(abs(gap), 3),
        by="judge",
    )


def nearest_sentence(answer: str, expected: str) -> str:
    """The answer's sentence sharing most of the expected conclusion's wording (the first
    when none shares any: a verdict usually opens the answer)."""
    sentences = sentences_of(answer) or [answer.strip()]
    return max(sentences, key=lambda s: point_coverage(expected, features(s)))[:EVIDENCE_CHARS]
