"""The exam report's figures, as one pydantic model: what ``report.json`` holds and the HTML
shows. Per question (distribution, mean, full/zero marks, reviews, methods, item analysis),
the exam (totals, alpha, SEM) and per student (total, rank, sections, answers under review).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pandas as pd
from pydantic import BaseModel

from grader.engine.review.queue import queue_order, recorded_error
from grader.models import Question, QuestionType
from grader.reports.items import ChoiceItem, ItemAnalysis, ItemStats, TestStats, analyse
from grader.reports.scores import ExamScores
from grader.reports.sources import chosen_option

NO_ANSWER = "(no answer)"
_CHOICE = {QuestionType.SINGLE_CHOICE, QuestionType.MULTIPLE_CHOICE, QuestionType.TRUE_FALSE}


class QuestionReport(BaseModel):
    question_id: str
    number: str
    section: str
    type: QuestionType
    stem: str
    options: dict[str, str]
    key: str | None  # the answer key as the bank has it ("BCD", "true"); None: none or text
    max_score: float | None
    answers: int  # submitted (scored or not)
    scored: int
    mean: float | None  # of the scored answers
    full_share: float | None  # of the scored answers
    zero_share: float | None
    score_counts: dict[str, int]  # "%g" of the points → answers
    review: int
    review_reasons: dict[str, int]
    methods: dict[str, int]
    items: ItemStats | None = None  # None: not in the item analysis (see notes)


class ReviewItem(BaseModel):
    submission_id: str
    question_id: str
    score: float | None
    max_score: float | None
    reasons: list[str]  # "code: message"
    answer: str | None  # with --submissions
    expected_error: float | None = None  # points (engine.review.queue); None: hard reason


class StudentReport(BaseModel):
    student: str
    total: float | None  # None while an answer is unscored
    partial: float
    rank: int | None  # 1 = highest total; ties share the rank; None without a total
    sections: dict[str, float | None]
    answered: int
    unscored: int
    under_review: list[ReviewItem]


class ExamReport(BaseModel):
    exam: str
    made: str
    max_total: float
    sections: list[str]
    questions: list[QuestionReport]
    test: TestStats | None  # None: too little data for item analysis (see notes)
    totals: list[float]  # every complete total, for the distribution
    students: list[StudentReport]
    notes: list[str]


def build_report(scores: ExamScores) -> ExamReport:
    notes = list(scores.notes)
    analysis = _item_analysis(scores, notes)
    questions = _question_reports(scores)
    for q in questions:
        q.items = analysis.items.get(q.question_id) if analysis else None
    students = _student_reports(scores)
    return ExamReport(
        exam=scores.bank.name,
        made=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        max_total=scores.max_total(),
        sections=list(scores.sections()),
        questions=questions,
        test=analysis.test if analysis else None,
        totals=[s.total for s in students if s.total is not None],
        students=students,
        notes=notes,
    )


def answers_frame(scores: ExamScores) -> pd.DataFrame:
    """One row per answer in the table: student, question, status, score, method, review."""
    rows = [
        {
            "student": student,
            "question_id": qid,
            "score": scores.score(student, qid),
            "method": record.grade.method.value if record.grade else "pending",
            "review_codes": [r.code for r in record.grade.review_reasons] if record.grade else [],
            "needs_review": bool(record.grade and record.grade.needs_review),
        }
        for (student, qid), record in scores.answers.items()
    ]
    columns = ["student", "question_id", "score", "method", "review_codes", "needs_review"]
    return pd.DataFrame(rows, columns=columns)


def _question_reports(scores: ExamScores) -> list[QuestionReport]:
    frame = answers_frame(scores)
    by_question = dict(iter(frame.groupby("question_id")))
    none = frame.iloc[0:0]
    return [_question_report(q, scores, by_question.get(q.id, none)) for q in scores.questions]


def _question_report(q: Question, scores: ExamScores, rows: pd.DataFrame) -> QuestionReport:
    top = scores.max_scores[q.id]
    scored = rows["score"].dropna()
    share = (lambda mask: float(mask.mean())) if len(scored) else (lambda mask: None)
    counts = scored.value_counts().sort_index()
    codes = Counter(code for codes in rows["review_codes"] for code in codes)
    return QuestionReport(
        question_id=q.id,
        number=q.number,
        section=q.section,
        type=q.type,
        stem=q.stem,
        options=q.options,
        key=_key_text(q),
        max_score=top,
        answers=len(rows),
        scored=len(scored),
        mean=float(scored.mean()) if len(scored) else None,
        full_share=share(scored == top) if top is not None else None,
        zero_share=share(scored == 0),
        score_counts={f"{points:g}": int(n) for points, n in counts.items()},
        review=int(rows["needs_review"].sum()),
        review_reasons=dict(codes.most_common()),
        methods={str(m): int(n) for m, n in rows["method"].value_counts().items()},
    )


def _key_text(q: Question) -> str | None:
    if q.type not in _CHOICE or q.answer is None:
        return None
    return str(q.answer).lower() if isinstance(q.answer, bool) else str(q.answer)


def score_table(scores: ExamScores) -> pd.DataFrame:
    """Students × questions: points, 0 for a question not answered, NaN for unscored."""
    frame = answers_frame(scores).assign(answered=1.0)
    shape = {"index": pd.Index(scores.students), "columns": [q.id for q in scores.questions]}
    points = frame.pivot(index="student", columns="question_id", values="score").reindex(**shape)
    answered = frame.pivot(index="student", columns="question_id", values="answered")
    return points.astype(float).where(answered.reindex(**shape).notna(), 0.0)


def _item_analysis(scores: ExamScores, notes: list[str]) -> ItemAnalysis | None:
    table = score_table(scores)
    maxima = pd.Series(scores.max_scores, dtype=float)
    answers = answers_frame(scores)
    scored = set(answers.loc[answers["score"].notna(), "question_id"])
    usable = [
        qid for qid in table.columns if qid in scored and pd.notna(maxima[qid]) and maxima[qid] > 0
    ]
    if dropped := len(table.columns) - len(usable):
        notes.append(
            f"{dropped} question(s) without any scored answer are left out of item analysis."
        )
    complete = _complete(table[usable], notes)
    if complete.shape[0] < 2 or complete.shape[1] < 1:
        notes.append("Item analysis needs at least two students with every answer scored.")
        return None
    used = list(complete.columns)
    choices = [_choice_item(scores, scores.bank.question(qid), complete.index) for qid in used]
    return analyse(complete, maxima[used], [c for c in choices if c is not None])


def _complete(table: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """The table without unscored cells: leave out the students who have one, or the
    questions that have one — whichever keeps more of the table. One failed essay costs one
    student; an exam whose essays await the judge still gets its objective part analysed."""
    unscored = table.isna()
    students, questions = unscored.any(axis=1), unscored.any(axis=0)
    if not students.any():
        return table
    if (~students).sum() * table.shape[1] >= table.shape[0] * (~questions).sum():
        notes.append(
            f"{int(students.sum())} student(s) with unscored answers are left out of item "
            "analysis and the exam figures (their totals are not known yet)."
        )
        return table.loc[~students]
    notes.append(
        f"{int(questions.sum())} question(s) with unscored answers are left out of item "
        "analysis and the exam figures: those are for the other questions."
    )
    return table.loc[:, ~questions]


def _choice_item(scores: ExamScores, q: Question, students: pd.Index) -> ChoiceItem | None:
    if q.type not in _CHOICE or q.answer is None:
        return None
    responses = pd.Series(
        [
            NO_ANSWER if (r := scores.record(s, q.id)) is None else chosen_option(q, r)
            for s in students
        ],
        index=students,
        dtype=str,
    )
    if q.type is QuestionType.TRUE_FALSE:
        options, key = ["true", "false"], frozenset({"true" if q.answer is True else "false"})
    else:
        options, key = list(q.options), frozenset(str(q.answer))
    multiple = q.type is QuestionType.MULTIPLE_CHOICE
    return ChoiceItem(q.id, options, key, multiple, responses)


def _student_reports(scores: ExamScores) -> list[StudentReport]:
    totals = {s: scores.totals(s) for s in scores.students}
    known = pd.Series({s: t.total for s, t in totals.items() if t.total is not None}, dtype=float)
    ranks = known.rank(method="min", ascending=False)
    return [
        StudentReport(
            student=s,
            total=t.total,
            partial=t.partial,
            rank=int(ranks[s]) if s in ranks.index else None,
            sections=t.sections,
            answered=t.answered,
            unscored=t.unscored,
            under_review=_under_review(scores, s),
        )
        for s, t in totals.items()
    ]


def _under_review(scores: ExamScores, student: str) -> list[ReviewItem]:
    """The student's grades under review in queue order: hard reasons first, then the
    largest expected error (``engine.review.queue``)."""
    records = {}
    for q in scores.questions:
        record = scores.record(student, q.id)
        if record is not None and record.grade is not None:
            records[q.id] = record
    return [
        ReviewItem(
            submission_id=records[grade.question_id].submission_id,
            question_id=grade.question_id,
            score=grade.score,
            max_score=grade.max_score,
            reasons=[f"{r.code}: {r.message}" for r in grade.review_reasons],
            answer=records[grade.question_id].answer,
            expected_error=recorded_error(grade),
        )
        for grade in queue_order([r.grade for r in records.values() if r.grade is not None])
    ]
