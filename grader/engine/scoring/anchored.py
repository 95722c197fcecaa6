"""Plan ``anchored``: on an instructor's reviewed rubric, the judge reads every
answer in a language the scorer weighs no judge for, and its reading counts once it is set
against the same judge's reading of the question's own anchors.

The embedded 1.5B says yes to nearly every criterion check, so its raw share of a Chinese
answer barely follows the human's (Pearson 0.25 on the development seed sets). Beside it, each
question gets three anchor answers read the same way: its reference (worth full marks), its
stem restated and a content-free sentence (both worth 0). An answer's reading then counts only
as far as it rises above what an answer with nothing in it gets:
``(share − zero) / (reference − zero)``, clipped to 0..1, zero the higher of the two empty
anchors. That reading takes ``scorer_core.rules.ANCHORED_WEIGHT`` of the final share. On the
seed answers (``judge_contrast``, docs/research/explorations.md) it lifts Pearson from 0.50 to 0.54 on the
development sets and from 0.58 to 0.62 on the held-out set 2, and answers worth 0 drop from 0.55
to 0.45 of the points; it costs the judge's reading of every such answer.

The anchors are read once per question and rubric version for the pipeline's life, in the
judge call of the first batch that needs them and with the rubric's own anchors in the prompt
(never an answer group's), so no grade depends on the batch it came in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from grader.config import JudgeSettings
from grader.engine.judging.modes import AnswerToJudge
from grader.engine.scoring.features import judge_reading
from grader.engine.scoring.scorer_core.rules import ANCHORED_WEIGHT
from grader.engine.scoring.scorer_model import ScorerSet
from grader.models import AnchoredReading, Grade, Question, Rubric, Submission

ANCHOR_ID = "anchor-reading"  # the anchor answers' submission ids: anchor-reading:<name>:<qid>
VAGUE = {
    "zh": "这个问题要根据具体情况具体分析，选择合适的方法，才能取得更好的效果。",
    "en": "It depends on the situation: choose a suitable method and the result will be better.",
}
EMPTY = ("stem", "vague")  # the anchors worth 0


def anchors_judge(
    judge: JudgeSettings, scorer: ScorerSet | None, rubric: Rubric, language: str, analysed: bool
) -> bool:
    """Whether the judge's reading of this question's answers is anchored and blended: plan
    ``anchored``, a reviewed rubric, and a scorer (with the question's signals) that weighs no
    judge reading in its language."""
    return (
        judge.plan == "anchored"
        and scorer is not None
        and analysed
        and rubric.reviewed
        and not scorer.weighs_judge(language)
    )


@dataclass(frozen=True)
class Anchors:
    """The judge's shares of a question's reference and of the higher of its empty anchors."""

    reference: float
    zero: float


PrefixFor = Callable[[Question, Rubric], object]


class AnchorReadings:
    """Each question's anchor readings, per rubric version, read once and kept."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], Anchors | None] = {}
        self._asked: list[tuple[str, str, str]] = []  # (question, rubric version, anchor name)

    def to_read(
        self, questions: Iterable[tuple[Question, Rubric]], prefix_for: PrefixFor
    ) -> list[AnswerToJudge]:
        """The anchor answers not read yet, for the same judge call as the answers."""
        items: list[AnswerToJudge] = []
        self._asked = []
        for question, rubric in questions:
            key = (question.id, rubric.version)
            if key in self._found or any(a[:2] == key for a in self._asked):
                continue
            reference = question.answer if isinstance(question.answer, str) else ""
            if not reference.strip():
                self._found[key] = None  # nothing worth full marks to set a reading against
                continue
            prefix = prefix_for(question, rubric)
            texts = {
                "reference": reference,
                "stem": question.stem,
                "vague": VAGUE[question.language],
            }
            for name, text in texts.items():
                self._asked.append((*key, name))
                answer = Submission(
                    id=f"{ANCHOR_ID}:{name}:{question.id}", question_id=question.id, answer=text
                )
                items.append(AnswerToJudge(answer, prefix, None))
        return items

    def store(self, grades: Sequence[Grade]) -> None:
        """Keep the judge's readings of the anchors ``to_read`` gave, in its order."""
        shares: dict[tuple[str, str], dict[str, float]] = {}
        for (qid, version, name), grade in zip(self._asked, grades, strict=True):
            reading = judge_reading(grade)
            if reading is not None:
                shares.setdefault((qid, version), {})[name] = reading.share
        for key in {a[:2] for a in self._asked}:
            read = shares.get(key, {})
            zeros = [read[name] for name in EMPTY if name in read]
            found = "reference" in read and bool(zeros)
            self._found[key] = Anchors(read["reference"], max(zeros)) if found else None
        self._asked = []

    def reading(self, question: Question, rubric: Rubric, grade: Grade) -> AnchoredReading | None:
        """The judge's reading of this answer set between its anchors; None when the question's
        anchors or the answer's reading are missing."""
        found = self._found.get((question.id, rubric.version))
        judge = judge_reading(grade)
        if found is None or judge is None:
            return None
        spread = found.reference - found.zero
        calibrated = (judge.share - found.zero) / spread if spread > 0 else None
        return AnchoredReading(
            judge_share=round(judge.share, 4),
            reference=round(found.reference, 4),
            zero=round(found.zero, 4),
            calibrated=None if calibrated is None else round(min(1.0, max(0.0, calibrated)), 4),
            weight=ANCHORED_WEIGHT,
        )
