"""``Pipeline.grade_many``: the one entry point that turns submissions into grades, batch-first.

It composes the engine's stages in the order an answer goes through them:

1. ``reading``: objective questions graded exactly; blank answers, non-answers ("不知道", a
   bare "满分"), pastes of the rubric's own text and answers that are only an injection
   attempt score 0 by rule (``judging.rule_grades``); any other flagged answer gets a cleaned
   twin, graded beside it through every step below;
2. ``signals``: with an embedder, each question's answers compared with each other and with
   the reference: off-topic answers score 0 by rule and go to review, near-duplicates are
   flagged, answers are grouped, and each gets its closest anchors;
3. ``judging``: every other answer read by the judge in the configured mode (``modes``), the
   whole batch in one judge call (or sub-batches of ``GRADER_JUDGE_CHUNK`` requests), sorted by
   each question and anchor group's shared prefix; or, where the scorer weighs no judge
   reading, split by key-point coverage (``budget``);
4. ``scoring`` and ``finish``: what the scorer reads of each answer, then ``finish.final``
   decides every final score in one place (scorer, substance, conclusion, injection bound),
   each move on the grade's trail;
5. ``review``: per question, the hard reasons and the answers with the largest expected
   error, at most ``GRADER_REVIEW_SHARE`` of them (``review.queue``).

A judge that fails yields ``unscored`` with a reason, never a silent 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from grader.config import Settings
from grader.engine.finish.context import Finishing, Scoring
from grader.engine.finish.final import finish_many
from grader.engine.finish.injection_bound import as_raw, twin
from grader.engine.judging.budget import coverage_grade, with_default_plan
from grader.engine.judging.modes import MODES, AnswerToJudge
from grader.engine.judging.progress import Progress, Stage, judged_at_most, reporter
from grader.engine.judging.reasons import injection_reason
from grader.engine.judging.rule_grades import (
    blank_grade,
    injection_only_grade,
    nearest_scored,
    needs_judge_grade,
    objective_grade,
    off_topic_grade,
    rubric_copy_grade,
    zero_off_topic,
)
from grader.engine.reading.blanks import blank_reason
from grader.engine.reading.injection import Flagged, flag
from grader.engine.reading.rubrics import rubric_for
from grader.engine.review.queue import rank_grades
from grader.engine.scoring.anchored import AnchorReadings, anchors_judge
from grader.engine.scoring.features import judge_reading
from grader.engine.scoring.judge_reads import reads_criteria
from grader.engine.scoring.scorer_choice import ScorerChoice, choose_scorer, scorer_setting
from grader.engine.scoring.scorer_core.pool import GradedPool
from grader.engine.scoring.scorer_grade import answer_evidence
from grader.engine.scoring.scorer_model import ScorerSet
from grader.engine.signals.analysis import QuestionAnalysis, analyze_question
from grader.engine.signals.anchors import choose_anchors
from grader.engine.signals.coverage import pastes_rubric
from grader.engine.signals.graded_answers import graded_answers
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
        (``engine.judging.progress``).
        ``scorer``: this call's scorer instead of the pipeline's (the service's exam scorer,
        applied on the instructor pages after the pipeline was built: ``choose_scorer``).
        """
        tell = reporter(progress)
        grades: dict[int, Grade] = {}
        subjective: dict[int, Submission] = {}
        flagged: dict[int, Flagged] = {}  # suspected injections, by index
        rubrics: dict[str, Rubric] = {}  # one rubric per question for the whole call
        self._read(submissions, grades, subjective, flagged, rubrics)
        tell(Stage.RULED, len(grades))
        # A flagged answer's cleaned twin is graded beside it, end to end (``injection_bound``).
        taken = {s.id for s in (*submissions, *cohort)} | {g.id for g in graded}
        twins = {len(submissions) + k: i for k, i in enumerate(flagged)}
        for j, i in twins.items():
            subjective[j] = twin(submissions[i], flagged[i].cleaned, taken)
        mine = [subjective[i] for i in subjective if i not in twins]
        shadows = [subjective[j] for j in twins]
        analyses = self._analyze(mine, cohort, rubrics, graded, tell, shadows)
        prefixes: dict[tuple[str, ...], object] = {}  # once per question and anchor set
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
            else:  # no prefix: the scorer decides without the judge's reading (``judge_reads``)
                reads = self._anchored(question, rubric, scoring, bool(analysis)) or reads_criteria(
                    self.settings.judge, scoring, question.language, bool(analysis)
                )
                prefix = (
                    self._prefix(prefixes, question, rubric, submission, analysis)
                    if reads
                    else None
                )
                work[i] = AnswerToJudge(submission, prefix, signals, flagged.get(i))
        tell(Stage.SET_ASIDE, sum(i not in work for i in subjective if i not in twins))
        if work:
            counted = judged_at_most(tell, sum(i not in twins for i in work))
            self._judge(grades, work, rubrics, scoring, counted)
        # one place decides every final score: scorer, substance, conclusion, injection bound
        raw_ids = {j: submissions[i].id for j, i in twins.items()}
        scored = self._scoring(grades, work, analyses, rubrics, scoring, raw_ids)
        grades.update(self._finish(grades, subjective, rubrics, scored, twins, flagged))
        for j in twins:
            grades.pop(j)  # the cleaned twin bound its raw answer's grade
        # review: hard reasons, then the top of each question's ranking by expected error
        return rank_grades([grades[i] for i in range(len(submissions))], self.settings.review.share)

    def _judge(
        self,
        grades: dict[int, Grade],
        work: dict[int, AnswerToJudge],
        rubrics: dict[str, Rubric],
        scorer: ScorerSet | None,
        tell: Progress,
    ) -> None:
        """The judge's grades of ``work`` in one batch. An item without a prefix is not read by
        the judge: its criteria are split by coverage (``judging.budget``)."""
        assert self.judge is not None
        asked = {i: item for i, item in work.items() if item.prefix is not None}
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

    def _finish(
        self,
        grades: dict[int, Grade],
        subjective: dict[int, Submission],
        rubrics: dict[str, Rubric],
        scored: dict[int, Scoring],
        twins: dict[int, int],
        flagged: dict[int, Flagged],
    ) -> dict[int, Grade]:
        """Every subjective answer's final grade (``finish.final``), its cleaned twin, if any,
        finished beside it and binding it."""
        order = list(subjective)
        position = {i: k for k, i in enumerate(order)}
        twin_of = {i: j for j, i in twins.items()}
        by_judge = self.settings.judge.feedback == "judge"
        contexts = []
        for i in order:
            question = self._questions[subjective[i].question_id]
            j = twin_of.get(i)
            contexts.append(
                Finishing(
                    answer=subjective[i].answer, rubric=rubrics[question.id], question=question,
                    scoring=scored.get(i), judge=self.judge, feedback_by_judge=by_judge,
                    trust_file=self.settings.judge.trust,
                    measure_claims=self.settings.judge.plan == "full",
                    twin=None if j is None else position[j],
                    injection=None if j is None else injection_reason(flagged[i].findings),
                )
            )  # fmt: skip
        finished = finish_many([grades[i] for i in order], contexts)
        return dict(zip(order, finished, strict=True))

    def _read(
        self,
        submissions: Sequence[Submission],
        grades: dict[int, Grade],
        subjective: dict[int, Submission],
        flagged: dict[int, Flagged],
        rubrics: dict[str, Rubric],
    ) -> None:
        """Objective answers graded, the answers that score 0 by rule ruled on; the others
        are ``subjective``, a suspected injection also ``flagged``."""
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

    def _scoring(
        self,
        grades: dict[int, Grade],
        work: dict[int, AnswerToJudge],
        analyses: dict[str, QuestionAnalysis],
        rubrics: dict[str, Rubric],
        scorer: ScorerSet | None,
        raw_ids: dict[int, str],
    ) -> dict[int, Scoring]:
        """What the scorer reads of every judged answer, the question's graded answers as its
        neighbours (their pool built once per question). A cleaned twin is read as its raw
        answer, so that answer's own human score is never its neighbour or copy."""
        if scorer is None:
            return {}
        pools: dict[str, GradedPool] = {}
        scored = {}
        for i, item in work.items():
            submission, qid = item.submission, item.submission.question_id
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
            judged = judge_reading(grades[i])
            inputs = answer_evidence(submission, question, rubric, analysis, pools[qid], judged)
            anchored = self._anchored(question, rubric, scorer, analysed=True)
            reading = self._anchors.reading(question, rubric, grades[i]) if anchored else None
            scored[i] = Scoring(scorer, inputs, self.settings.review.below_confidence, reading)
        return scored

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
            lambda q, r: self.mode.prefix(q, r, choose_anchors(r.anchors, k), self.settings.judge),
        )

    def _anchored(
        self, question: Question, rubric: Rubric, scorer: ScorerSet | None, analysed: bool
    ) -> bool:
        """Whether this question's answers get the judge's anchored reading (``anchored``)."""
        return anchors_judge(self.settings.judge, scorer, rubric, question.language, analysed)

    @property
    def _embed_model(self) -> str | None:
        return self.embedder.name if self.embedder is not None else None

    def _prefix(
        self,
        prefixes: dict[tuple[str, ...], object],
        question: Question,
        rubric: Rubric,
        submission: Submission,
        analysis: QuestionAnalysis | None,
    ) -> object:
        """The mode's prefix for this answer's question and anchors, made once: answers shown
        the same anchors share it."""
        if analysis is None or submission.id not in analysis.anchors:
            anchors = choose_anchors(rubric.anchors, self.settings.signals.anchors_k)
        else:
            anchors = analysis.anchors[submission.id]
        key = (question.id, *(a.id for a in anchors))
        if key not in prefixes:
            prefixes[key] = self.mode.prefix(question, rubric, anchors, self.settings.judge)
        return prefixes[key]

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
