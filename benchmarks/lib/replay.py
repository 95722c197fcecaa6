"""The review queue as production fills it, replayed on the scorer's feature table.

``benchmarks.review_queue`` ranks grades by expected error; what reaches an instructor also
depends on what production does around the scorer, and this module replays that, per answer
of the question that no instructor graded (the setting's graded answers are left out):

- **Rule zeros**: blank and non-answers 0 (not for review); off-topic answers (topic margin
  below the zero margin) 0 and a hard ``off_topic`` reason, unless a graded answer of the
  question with a positive human score sits at ``offtopic_graded_rescue`` (0.875) or closer
  (``rule_grades.nearest_scored``): then the scorer grades it, with the judge's reading where
  the table's off-topic readings have one for an English answer, still flagged off topic.
  An answer that pastes the rubric (``coverage.pastes_rubric``) is 0 and hard.
- **Scorer grades**, in half points, then production's final rules in production's order: the
  restatement cap and wrong claims (``substance.assess``; fired: hard), the conclusion gate of
  the derived rubric (``conclusion.apply_conclusion``: a wrong conclusion capped, an unread
  one the cap would change hard, ``conclusion_undecided``).
- **Hard flags** of a scored answer: ``off_topic`` (topic margin below ``offtopic_margin``,
  or the peer margin below ``offtopic_peer_margin``, the table's peer margin read among the
  part's answers to the question), a suspected injection (``injection.flag``).

What the replay still leaves out: the judge's reading of a conclusion the rules cannot read
(production asks the judge first; here every such answer is hard, so ADS counts more hard
answers than a run with a judge), judge failures and partial readings (the table holds
successful readings only), the injection's cleaned twin (its score), derived rubrics'
``unreviewed_rubric`` (off by default), and the graded answers' own grades (the budget is
over the answers not graded; production counts every answer of the question).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from benchmarks.lib.datasets import as_bank, load
from benchmarks.lib.readings import judge_readings, judge_seen
from grader.calibrate.scorer_cv import grade_rows
from grader.calibrate.scorer_rows import GradedSetting, Neighbours, ScorerRow
from grader.config import SignalSettings
from grader.engine.finish.conclusion import apply_conclusion
from grader.engine.finish.substance import assess, capped
from grader.engine.reading.injection import flag
from grader.engine.reading.rubrics import rubric_for
from grader.engine.review.queue import budget, error_signals_of
from grader.engine.scoring.points import to_points
from grader.engine.scoring.scorer_core.rules import COPY
from grader.engine.scoring.scorer_grade import scorer_confidence
from grader.engine.scoring.scorer_model import ScorerSet
from grader.engine.signals.analysis import among_classmates
from grader.engine.signals.coverage import pastes_rubric
from grader.models import Grade, GradeStatus, Method, Question, ReviewCode, Rubric

LARGE = 0.25  # a large error: |grade − human| at least this share of the points
RATES = (0.1, 0.2, 0.3)  # review budgets: shares of each question's answers


@dataclass(frozen=True)
class Scored:
    """What a model-scored grade records for its expected error: the scorer's confidence,
    its features, who decided, and its nearest graded answers' shares and cosines."""

    sure: float | None
    features: dict[str, Any]
    decided: str
    nearest: list[float]
    sims: list[float]

    def signals(self, share: float) -> dict[str, float]:
        """``error_signals_of`` for the final ``share``, as the shipped ranking reads them."""
        return error_signals_of(share, self.sure, self.features, self.nearest, self.decided == COPY)


@dataclass(frozen=True)
class Answer:
    """One answer as the queue sees it: its final grade, the hard reason production gives it
    (None: none), and what its expected error reads (None: no model scored it, not ranked)."""

    row: ScorerRow
    fold: int
    share: float
    hard: str | None
    scored: Scored | None

    @property
    def error(self) -> float:
        """|grade − human| as a share of the points."""
        return abs(self.share - self.row.share)


def nearest_positive(row: ScorerRow, setting: str, shares: dict[str, float]) -> float:
    """The cosine of the row's nearest graded answer with a positive human score in
    ``setting`` (a graded copy of its text: 1); -1 when it has none."""
    found = row.neighbours.get(setting)
    if found is None:
        return -1.0
    if any(shares[i] > 0 for i in found.identical):
        return 1.0
    return max((s for i, s in zip(found.ids, found.sims, strict=True) if shares[i] > 0),
               default=-1.0)  # fmt: skip


class Production:
    """The questions, derived rubrics and off-topic judge readings the replay needs."""

    def __init__(self, datasets: Sequence[str] = ("ads", "mohler")):
        self.signals = SignalSettings()
        self.questions: dict[str, tuple[Question, Rubric]] = {}
        for name in datasets:
            items, _, language = load(name)
            for q in as_bank(name, items, language).questions:
                self.questions[f"{name}:{q.id}"] = (q, rubric_for(q, {}))
        self.readings = judge_readings("vllm", past_off_topic=True)

    def replay(
        self,
        groups: Sequence[tuple[ScorerSet, list[int]]],
        rows: Sequence[ScorerRow],
        setting: str,
        dataset: str | None = None,
    ) -> list[Answer]:
        """Every answer of ``rows`` not graded in ``setting`` (of ``dataset`` when given),
        each fold's rows graded by its scorer (``groups``: scorer, row indices)."""
        shares = {r.id: r.share for r in rows}
        out: list[Answer] = []
        for fold, (scorer, members) in enumerate(groups):
            pool = [rows[i] for i in members if dataset in (None, rows[i].dataset)]
            mine = [r for r in pool if setting == GradedSetting.NONE or setting in r.neighbours]
            rescued = {
                r.id for r in mine if r.rule == ReviewCode.OFF_TOPIC
                and nearest_positive(r, setting, shares) >= self.signals.offtopic_graded_rescue
            }  # fmt: skip
            pasted = {
                r.id for r in mine if r.rule in (None, ReviewCode.OFF_TOPIC) and self._pastes(r)
            }
            rescued -= pasted
            graded = [self._rescued(r) if r.id in rescued else r for r in pool]
            scored = {
                g.row.id: g for g in grade_rows(graded, scorer, [setting]) if g.row.id not in pasted
            }
            for row in mine:
                g = scored.get(row.id)
                if g is None:
                    zero_hard = row.rule == ReviewCode.OFF_TOPIC or row.id in pasted
                    out.append(Answer(row, fold, 0.0, "zero by rule" if zero_hard else None, None))
                    continue
                sure = scorer_confidence(g.share, g.features, scorer)
                share, hard = self._final(row, to_points(g.share, row.points) / row.points)
                if row.id in rescued:
                    hard = hard or "off_topic (graded rescue)"
                near = Neighbours() if setting == GradedSetting.NONE else row.neighbours[setting]
                near_shares = [shares[i] for i in near.ids[:3]]
                record = Scored(sure, g.features.model_dump(), g.decided,
                                near_shares, near.sims[:3])  # fmt: skip
                out.append(Answer(row, fold, share, hard, record))
        return out

    def _rescued(self, row: ScorerRow) -> ScorerRow:
        english = row.features.language == "en"
        judge = judge_seen(self.readings.get(row.id)) if english else None
        return row.model_copy(update={"rule": None, "judge": judge})

    def _pastes(self, row: ScorerRow) -> bool:
        return row.answer is not None and pastes_rubric(row.answer, self.questions[row.question][1])

    def _final(self, row: ScorerRow, share: float) -> tuple[float, str | None]:
        """The share after the substance rules and the conclusion gate, and the first hard
        reason production gives the grade."""
        question, rubric = self.questions[row.question]
        answer = row.answer or ""
        hard: str | None = None
        features = row.features
        margin = features.topic_margin
        if (margin is not None and margin < self.signals.offtopic_margin) or among_classmates(
            features.peer_margin, self.signals
        ) is False:
            hard = "off_topic"
        if flag(answer) is not None:
            hard = hard or "suspected_injection"
        substance = assess(answer, question, rubric)
        score = share * row.points
        if substance.fired:
            score = capped(score, row.points, substance)
            hard = hard or "substance"
        grade = Grade(submission_id=row.id, question_id=question.id, status=GradeStatus.GRADED,
                      score=score, max_score=row.points, method=Method.JUDGE)  # fmt: skip
        after = apply_conclusion(grade, rubric, answer)
        if after.needs_review:
            hard = hard or "conclusion_undecided"
        return float(after.score or 0.0) / row.points, hard


@cache
def production() -> Production:
    """One ``Production`` per process (it loads both data sets)."""
    return Production()


Ranker = Callable[[Answer], float]  # a scored answer's place: larger, reviewed first


def catch(answers: Sequence[Answer], rankers: dict[str, Ranker], rates: Sequence[float]) -> dict:
    """Per rate, the share of the large errors (``LARGE``) the queue holds: per question the
    hard answers, plus the ``budget`` of the question's answers with the largest rank among
    the other model-scored ones, each ranker's; a random queue of the same size (its
    expectation), and the best any ranking could do (the hard answers' large errors, plus as
    many of the others' as the budget holds)."""
    per_q: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        per_q[a.row.question].append(a)
    large = [a for a in answers if a.error >= LARGE]
    total = len(large) or 1
    hard = [a for a in answers if a.hard]
    out: dict = {
        "answers": len(answers),
        "large_errors": len(large),
        "large_per_answer": round(len(large) / max(1, len(answers)), 3),
        "hard": len(hard),
        "hard_large_errors": sum(a.error >= LARGE for a in hard),
        "hard_reasons": dict(Counter(a.hard for a in hard)),
    }
    for rate in rates:
        caught = dict.fromkeys(rankers, 0)
        best = expected = reviewed = 0.0
        for members in per_q.values():
            take = budget(len(members), rate)
            held = [a for a in members if a.hard]
            ranked = [a for a in members if a.scored is not None and not a.hard]
            for name, rank in rankers.items():
                top = sorted(ranked, key=lambda a: -rank(a))[:take]
                caught[name] += sum(a.error >= LARGE for a in (*held, *top))
            size = len(held) + min(take, len(ranked))
            q_large = sum(a.error >= LARGE for a in members)
            expected += size / len(members) * q_large
            best += sum(a.error >= LARGE for a in held)
            best += min(take, sum(a.error >= LARGE for a in ranked))
            reviewed += size
        cell: dict = {"reviewed": round(reviewed / max(1, len(answers)), 3)}
        cell |= {name: round(c / total, 3) for name, c in caught.items()}
        cell |= {"random": round(expected / total, 3), "best": round(best / total, 3)}
        out[f"{rate:.0%}"] = cell
    return out
