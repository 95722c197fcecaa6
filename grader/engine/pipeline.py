"""``Pipeline.grade_many``: the one entry point that turns submissions into grades, batch-first.

1. objective questions are graded exactly; blank answers, non-answers ("不知道", a bare "满分")
   and pastes of the rubric's own text score 0 by rule, before any model (``rule_grades``),
   and so does an answer that is only an injection attempt; any other flagged answer is
   graded twice, raw and cleaned, through every step below, and keeps the lower (``injected``);
2. with an embedder, each question's answers are compared with each other and with the
   reference (``signals``): off-topic answers score 0 by rule and go to review,
   near-duplicates are flagged, answers are grouped, and each gets its closest anchors;
3. every other answer is scored by the judge in the configured mode (``modes``): in the
   probability mode one forward step per rubric check, in the verdict mode a JSON verdict —
   each on its question and anchor group's shared prefix, the whole batch in one judge call
   (or sub-batches of ``GRADER_JUDGE_CHUNK`` requests), sorted by that prefix;
4. the judge's points are turned into criteria with evidence, confidence and review flags,
   with provenance on every grade;
5. per question, review keeps the hard reasons and the answers with the largest expected
   error, at most ``GRADER_REVIEW_SHARE`` of them (``review_queue``).

A judge that fails yields ``unscored`` with a reason, never a silent 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from grader.config import Settings
from grader.engine import substance
from grader.engine.anchored import AnchorReadings, anchors_judge
from grader.engine.anchors import choose_anchors
from grader.engine.blanks import blank_reason
from grader.engine.calibrated_grade import calibrated
from grader.engine.claims import verified
from grader.engine.claims.trust import trust_of
from grader.engine.conclusion import apply_conclusion, asks_judge
from grader.engine.conclusion_judge import Ask, judge_conclusions
from grader.engine.coverage import pastes_rubric
from grader.engine.graded_answers import graded_answers
from grader.engine.injected import Flagged, as_raw, bound, flag, injection_only_grade, twin
from grader.engine.judge_plan import (
    coverage_grade,
    reads_criteria,
    with_default_plan,
    write_feedback,
)
from grader.engine.modes import MODES, AnswerToJudge
from grader.engine.progress import Progress, Stage, reporter
from grader.engine.review_queue import rank_grades
from grader.engine.rubrics import rubric_for
from grader.engine.rule_grades import (
    blank_grade,
    nearest_scored,
    needs_judge_grade,
    objective_grade,
    off_topic_grade,
    rubric_copy_grade,
    zero_off_topic,
)
from grader.engine.scorer_choice import ScorerChoice, choose_scorer, scorer_setting
from grader.engine.scorer_core.pool import GradedPool
from grader.engine.scorer_model import ScorerSet
from grader.engine.signals import QuestionAnalysis, analyze_question
from grader.judge.base import Judge
from grader.models import (
    Bank,
    Grade,
    GradedAnswer,
    GradeStatus,
    Question,
    Rubric,
    Submission,
)

if TYPE_CHECKING:
    from grader.embed import Embedder


class Pipeline:
    """Grades submissions to one bank. Holds the judge, so it is built once per process.

    ``rubrics`` is read on every call, not copied: a rubric replaced in it (an anchor
    promoted on the instructor pages) is used from the next batch on.
    """

    def __init__(
        self,
        bank: Bank,
        rubrics: dict[str, Rubric] | None = None,
        judge: Judge | None = None,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        scorer: ScorerChoice | None = None,
    ):
        self.bank = bank
        self.rubrics = rubrics if rubrics is not None else {}
        self.judge = judge
        self.settings = with_default_plan(settings or Settings())
        self.embedder = embedder
        self.mode = MODES[self.settings.judge.mode]
        # ``scorer``: the caller's choice (``choose_scorer``, which knows the exam's file);
        # else chosen here from the setting, with or without embeddings to read.
        if scorer is None:
            setting = scorer_setting(self.settings.scorer.choice)
            scorer = choose_scorer(setting, embeddings=embedder is not None)
        self.scorer: ScorerSet | None = scorer.scorer
        self._questions = {q.id: q for q in bank.questions}
        self._anchors = AnchorReadings()  # plan ``anchored``: read once per question

    def grade_many(
        self,
        submissions: Sequence[Submission],
        cohort: Sequence[Submission] = (),
        graded: Sequence[GradedAnswer] = (),
        progress: Progress | None = None,
        scorer: ScorerSet | None = None,
    ) -> list[Grade]:
        """One grade per submission, same order. Question ids must exist in the bank.

        ``cohort``: other answers to the same questions (say, the whole exam) that off-topic,
        near-duplicate and group signals compare against; the batch is always part of it.
        ``graded``: answers a human scored (a calibration CSV, the instructor pages); with the
        rubric's anchors they are the graded neighbours the scorer leans on.
        ``progress``: told as answers are ruled on, embedded, set aside and judged
        (``engine.progress``).
        ``scorer``: this call's scorer instead of the pipeline's (the service's exam scorer,
        applied on the instructor pages after the pipeline was built: ``choose_scorer``).
        """
        tell = reporter(progress)
        grades: dict[int, Grade] = {}
        subjective: dict[int, Submission] = {}
        flagged: dict[int, Flagged] = {}  # suspected injections, by index
        rubrics: dict[str, Rubric] = {}  # one rubric per question for the whole call
        for i, submission in enumerate(submissions):
            question = self._questions[submission.question_id]
            if question.type.objective:
                grades[i] = objective_grade(submission, question, self.settings.rules)
                continue
            if question.id not in rubrics:
                rubrics[question.id] = rubric_for(question, self.rubrics)
            ruled = self._by_rule(submission, rubrics[question.id])
            if isinstance(ruled, Grade):
                grades[i] = ruled
                continue
            subjective[i] = submission
            if ruled is not None:
                flagged[i] = ruled
        tell(Stage.RULED, len(grades))
        # A flagged answer's cleaned twin is graded beside it, end to end (``injected``).
        taken = {s.id for s in (*submissions, *cohort)} | {g.id for g in graded}
        twins = {len(submissions) + k: i for k, i in enumerate(flagged)}
        for j, i in twins.items():
            subjective[j] = twin(submissions[i], flagged[i].cleaned, taken)
        mine = [subjective[i] for i in subjective if i not in twins]
        shadows = [subjective[j] for j in twins]
        analyses = self._analyze(mine, cohort, rubrics, graded, tell, shadows)
        plans: dict[tuple[str, ...], object] = {}  # once per question and anchor set
        work: dict[int, AnswerToJudge] = {}
        scoring = scorer or self.scorer
        for i, submission in subjective.items():
            question = self._questions[submission.question_id]
            rubric = rubrics[question.id]
            analysis = analyses.get(question.id)
            signals = analysis.signals[submission.id] if analysis else None
            if i in twins and signals is not None and analysis is not None:
                raw = analysis.signals[submissions[twins[i]].id]  # the raw answer's anchors
                signals = signals.model_copy(update={"group": raw.group})
            nearest = nearest_scored(analysis, submission.id)
            if zero_off_topic(signals, self.settings.signals, nearest):
                grades[i] = off_topic_grade(submission, rubric, signals, self._embed_model)
            elif self.judge is None:
                grades[i] = needs_judge_grade(submission, question, rubric, signals)
            else:  # no plan: the scorer decides without the judge's reading (``judge_plan``)
                reads = self._anchored(question, rubric, scoring, bool(analysis)) or reads_criteria(
                    self.settings.judge, scoring, question.language, bool(analysis)
                )
                plan = self._plan(plans, question, rubric, submission, analysis) if reads else None
                work[i] = AnswerToJudge(submission, plan, signals, flagged.get(i))
        tell(Stage.SET_ASIDE, sum(i not in work for i in subjective if i not in twins))
        if work:
            counted = _counted(tell, sum(i not in twins for i in work))
            raw_ids = {j: submissions[i].id for j, i in twins.items()}
            self._judge(grades, work, analyses, rubrics, scoring, counted, raw_ids)
        self._conclude(grades, subjective, rubrics)  # the decisive part caps each final grade
        for j, i in twins.items():
            grades[i] = bound(grades[i], grades.pop(j), flagged[i])
        # review: hard reasons, then the top of each question's ranking by expected error
        return rank_grades([grades[i] for i in range(len(submissions))], self.settings.review.share)

    def _judge(
        self,
        grades: dict[int, Grade],
        work: dict[int, AnswerToJudge],
        analyses: dict[str, QuestionAnalysis],
        rubrics: dict[str, Rubric],
        scorer: ScorerSet | None,
        tell: Progress,
        raw_ids: dict[int, str],
    ) -> None:
        """The judge's grades of ``work`` in one batch, then the scorer's. An item without a
        plan is not read by the judge: its criteria are split by coverage (``judge_plan``).
        ``raw_ids``: the cleaned twins' raw answers, whose place they take before the scorer."""
        assert self.judge is not None
        asked = {i: item for i, item in work.items() if item.plan is not None}
        unread = [i for i in work if i not in asked]
        if asked:
            parts = self.settings.judge, self.settings.review
            anchors = self._anchor_items(asked.values(), rubrics, scorer)
            judged = self.mode.grade(
                self.judge, [*asked.values(), *anchors], *parts, self._embed_model, tell
            )
            self._anchors.store(judged[len(asked) :])
            grades.update(zip(asked, judged[: len(asked)], strict=True))
        for i in unread:
            submission, signals = work[i].submission, work[i].signals
            question = self._questions[submission.question_id]
            grades[i] = coverage_grade(
                submission, question, rubrics[question.id], signals, self._embed_model,
                self.settings.judge, self.settings.review,
            )  # fmt: skip
        tell(Stage.JUDGED, len(unread))  # nothing to wait for, as an answer without requests
        judged_answers = [(i, item.submission) for i, item in work.items()]
        self._calibrate(grades, judged_answers, analyses, rubrics, scorer, raw_ids)
        if unread and self.settings.judge.feedback == "judge":  # written once the scorer has spoken
            answers = {i: work[i].submission for i in unread}
            asks = {i: (self._questions[s.question_id], s.answer) for i, s in answers.items()}
            grades.update(write_feedback(self.judge, asks, grades, rubrics))
        for i, (submission, *_) in work.items():  # verified parts, restatements, wrong claims
            question = self._questions[submission.question_id]
            rubric = rubrics[question.id]
            trust = trust_of(grades[i].provenance.model, self.settings.judge.trust)
            grades[i] = verified.checked(grades[i], submission.answer, rubric, trust, question.stem)
            grades[i] = substance.checked(grades[i], submission.answer, question, rubric)

    def _conclude(
        self,
        grades: dict[int, Grade],
        subjective: dict[int, Submission],
        rubrics: dict[str, Rubric],
    ) -> None:
        """Each grade under its rubric's conclusion; the conclusions the rules cannot read, where
        the reading would change the grade, are asked of the judge first, in one call."""
        asks = [
            Ask(s.id, self._questions[s.question_id], conclusion, s.answer)
            for i, s in subjective.items()
            if (conclusion := rubrics[s.question_id].conclusion) is not None
            and self.judge is not None
            and asks_judge(grades[i], rubrics[s.question_id], s.answer)
        ]
        judged = judge_conclusions(self.judge, asks) if asks and self.judge else {}
        for i, s in subjective.items():
            grades[i] = apply_conclusion(
                grades[i], rubrics[s.question_id], s.answer, judged.get(s.id)
            )

    def _by_rule(self, submission: Submission, rubric: Rubric) -> Grade | Flagged | None:
        """0 by rule (blank, a non-answer, the rubric pasted, only an injection attempt), a
        suspected injection to grade raw and cleaned, or None for an ordinary answer."""
        if why := blank_reason(submission.answer, self.settings.rules.min_answer_chars):
            return blank_grade(submission, rubric, why)
        if pastes_rubric(submission.answer, rubric):
            return rubric_copy_grade(submission, rubric)
        found = flag(submission.answer)
        if found is not None and found.nothing_left(self.settings.rules.min_answer_chars):
            return injection_only_grade(submission, rubric, found)
        return found

    def _calibrate(
        self,
        grades: dict[int, Grade],
        judged: list[tuple[int, Submission]],
        analyses: dict[str, QuestionAnalysis],
        rubrics: dict[str, Rubric],
        scorer: ScorerSet | None,
        raw_ids: dict[int, str],
    ) -> None:
        """The scorer's score for every judged answer, the question's graded answers as its
        neighbours (their pool built once per question). A cleaned twin is scored as its raw
        answer, so that answer's own human score is never its neighbour or copy."""
        if scorer is None:
            return
        pools: dict[str, GradedPool] = {}
        for i, submission in judged:
            qid = submission.question_id
            analysis = analyses.get(qid)
            if analysis is None or grades[i].status != GradeStatus.GRADED:
                continue
            question, rubric = self._questions[qid], rubrics[qid]
            if i in raw_ids:
                submission, analysis = as_raw(submission, analysis, raw_ids[i])
            if qid not in pools:
                pools[qid] = GradedPool.build(
                    question, rubric, analysis.graded, analysis.vectors, scorer
                )
            anchored = self._anchored(question, rubric, scorer, analysed=True)
            grades[i] = calibrated(
                grades[i], submission, question, rubric, analysis, pools[qid], scorer,
                self.settings.review,
                self._anchors.reading(question, rubric, grades[i]) if anchored else None,
            )  # fmt: skip

    def _anchor_items(
        self, asked: Iterable[AnswerToJudge], rubrics: dict[str, Rubric], scorer: ScorerSet | None
    ) -> list[AnswerToJudge]:
        """The anchor answers of the asked questions still to read (``anchored``), each on its
        rubric's own anchors: the same prompt whichever batch reads them."""
        wanted: dict[str, tuple[Question, Rubric]] = {}
        for item in asked:
            question = self._questions[item.submission.question_id]
            if self._anchored(question, rubrics[question.id], scorer, item.signals is not None):
                wanted[question.id] = (question, rubrics[question.id])
        k = self.settings.signals.anchors_k
        return self._anchors.to_read(
            wanted.values(),
            lambda q, r: self.mode.plan(q, r, choose_anchors(r.anchors, k), self.settings.judge),
        )

    def _anchored(
        self, question: Question, rubric: Rubric, scorer: ScorerSet | None, analysed: bool
    ) -> bool:
        """Whether this question's answers get the judge's anchored reading (``anchored``)."""
        return anchors_judge(self.settings.judge, scorer, rubric, question.language, analysed)

    @property
    def _embed_model(self) -> str | None:
        return self.embedder.name if self.embedder is not None else None

    def _plan(
        self,
        plans: dict[tuple[str, ...], object],
        question: Question,
        rubric: Rubric,
        submission: Submission,
        analysis: QuestionAnalysis | None,
    ) -> object:
        """The mode's plan for this answer's question and anchors, made once: answers shown
        the same anchors share it."""
        if analysis is None or submission.id not in analysis.anchors:
            anchors = choose_anchors(rubric.anchors, self.settings.signals.anchors_k)
        else:
            anchors = analysis.anchors[submission.id]
        key = (question.id, *(a.id for a in anchors))
        if key not in plans:
            plans[key] = self.mode.plan(question, rubric, anchors, self.settings.judge)
        return plans[key]

    def _analyze(
        self,
        submissions: list[Submission],
        cohort: Sequence[Submission],
        rubrics: dict[str, Rubric],
        graded: Sequence[GradedAnswer],
        tell: Progress,
        twins: Sequence[Submission] = (),
    ) -> dict[str, QuestionAnalysis]:
        """Per question, the signals of the batch's answers within their whole cohort: the
        cohort's vectors and groups are computed once per question per call. ``twins`` (cleaned
        answers) get signals beside their raw answers, in no one else's cohort."""
        if self.embedder is None or not submissions:
            return {}
        batch: dict[str, list[Submission]] = {}
        for s in submissions:
            batch.setdefault(s.question_id, []).append(s)
        others: dict[str, list[Submission]] = {qid: [] for qid in batch}
        for s in cohort:
            if (
                s.question_id in batch
                and blank_reason(s.answer, self.settings.rules.min_answer_chars) is None
            ):
                others[s.question_id].append(s)
        analyses = {}
        for qid, mine in batch.items():
            analyses[qid] = analyze_question(
                self._questions[qid],
                rubrics[qid],
                mine,
                self.embedder,
                self.settings.signals,
                cohort=others[qid],
                graded=graded_answers(rubrics[qid], [g for g in graded if g.question_id == qid]),
                twins=[t for t in twins if t.question_id == qid],
            )
            tell(Stage.EMBEDDED, len(mine))
        return analyses


def _counted(tell: Progress, limit: int) -> Progress:
    """``tell`` with at most ``limit`` answers reported judged in all: cleaned twins are
    judged too, but each submission is reported once."""
    left = [limit]

    def capped(stage: Stage, count: int) -> None:
        if stage == Stage.JUDGED:
            count = min(count, left[0])
            left[0] -= count
        tell(stage, count)

    return capped
