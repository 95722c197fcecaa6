"""What the pages show about a question: the points an answer may get, counts and live
agreement with the judge, and the question page itself (also re-shown with a form's error)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from grader.api.instructor.context import Pages, SignedIn
from grader.api.instructor.criteria_agreement import per_criterion
from grader.api.instructor.forms import MAX_CLAIM_CHARS, FormError, criterion_field
from grader.engine.finish.conclusion import cap_share
from grader.engine.reading.rubrics import is_anchor, rubric_for
from grader.engine.review.queue import is_hard, recorded_error
from grader.models import Criterion, GradeStatus, Question
from grader.service.exams import Exam
from grader.service.store import AnswerCounts, AnswerRow
from grader.service.store.regrades import RegradeJob
from grader.text import sentences_of

if TYPE_CHECKING:
    from grader.calibrate import Agreement

DONE = {
    "score": "Human score saved.",
    "override": "Grade overridden.",
    "anchor": "Answer promoted to an anchor.",
    "accept": "Judge's grade accepted.",
    "claim": "Wrong claim added: a new rubric version; new grades take its points from an "
    "answer asserting it (stored grades keep theirs).",
    "gate_off": "Gate switched off: a wrong conclusion is shown, not capped, in new grades.",
    "gate_on": "Gate switched on: a wrong conclusion caps new grades.",
    "rubric": "Rubric saved: a new version; new answers are graded with it at once, stored "
    "ones when you regrade the question.",
    "exam_claim": "The exam's statement added as a wrong claim: a new rubric version, matched "
    "by its wording until the rubric file gives it `when:` patterns.",
}


PAGE_SIZE = 50  # answers per page: a question page stays readable with 1,000 long answers


@dataclass(frozen=True)
class Pager:
    """One page of a long list: which page, how many in all, and what the page holds."""

    page: int
    total: int
    size: int = PAGE_SIZE

    @classmethod
    def of(cls, total: int, page: int, size: int = PAGE_SIZE) -> Pager:
        """Page ``page`` of ``total`` items; past the last page is the last page."""
        return cls(max(1, min(page, -(-total // size))), total, size)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size

    @property
    def first(self) -> int:
        return min(self.offset + 1, self.total)

    @property
    def last(self) -> int:
        return min(self.offset + self.size, self.total)


def page_of(ctx: Pages, exam: str, question_id: str, submission_id: int | None, page: int) -> int:
    """The page of the question's answers that has ``submission_id``, else ``page``."""
    if submission_id is None:
        return page
    position = ctx.store.reviews.position(submission_id, exam, question_id)
    return page if position is None else position // PAGE_SIZE + 1


@dataclass(frozen=True)
class Marking:
    """The points an instructor may give an answer: the total and, for a rubric, each
    criterion's (calibration's ``Scale`` is the same idea for CSV rows)."""

    max_score: float
    criteria: list[Criterion]


@dataclass(frozen=True)
class QuestionSummary:
    question: Question
    answers: int
    graded: int
    human: int
    open_reviews: int
    agreement: Agreement | None


def marking(ctx: Pages, exam: Exam, question: Question, row: AnswerRow | None = None) -> Marking:
    if not question.type.objective:
        rubric = rubric_for(question, exam.rubrics)
        return Marking(rubric.points, rubric.criteria)
    grade = row.submission.grade if row else None
    if grade is not None and grade.max_score is not None:
        return Marking(grade.max_score, [])
    return Marking(question.points or ctx.settings.rules.default_objective_points, [])


def summary(
    question: Question, counts: AnswerCounts, scored: list[AnswerRow], points: Marking
) -> QuestionSummary:
    """The counts, and agreement over the ``scored`` answers (those an instructor scored) that
    the judge graded too."""
    from grader.calibrate import agreement  # the calibrate extra: numpy, SciPy, scikit-learn

    pairs = [
        (r.human.score, r.submission.grade.score)
        for r in scored
        if r.human is not None
        and r.submission.grade is not None
        and r.submission.grade.status == GradeStatus.GRADED
        and r.submission.grade.score is not None
    ]
    return QuestionSummary(
        question=question,
        answers=counts.answers,
        graded=counts.graded,
        human=counts.human,
        open_reviews=counts.open_reviews,
        agreement=(
            agreement([h for h, _ in pairs], [j for _, j in pairs], points.max_score, bootstrap=0)
            if pairs
            else None
        ),
    )


def question_page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    question_id: str,
    *,
    page: int = 1,
    at: int | None = None,
    error: FormError | str | None = None,
    error_answer: int | None = None,
) -> HTMLResponse:
    """A question with its rubric and one page of its answers (the page with answer ``at``,
    or ``error_answer``, when given); 422 when re-shown with a form's error."""
    question = exam.bank.get(question_id)
    if question is None:
        raise HTTPException(404, f"no question {question_id!r} in {exam.name}")
    reviews = ctx.store.reviews
    counts = reviews.counts(exam.name, question_id).get(question_id, AnswerCounts())
    pager = Pager.of(counts.answers, page_of(ctx, exam.name, question_id, error_answer or at, page))
    rows = reviews.answers(exam.name, question_id, offset=pager.offset, limit=pager.size)
    scored = reviews.answers(exam.name, question_id, scored_only=True)
    rubric = None if question.type.objective else rubric_for(question, exam.rubrics)
    points = marking(ctx, exam, question, rows[0] if rows else None)
    notice = DONE.get(request.query_params.get("done", ""))
    on_page = at is not None and any(r.submission.id == at for r in rows)
    return ctx.render(
        request,
        "question.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        question=question,
        rubric=rubric,
        anchors={
            s.id
            for s in (r.submission for r in rows)
            if rubric and any(is_anchor(a, s.id, s.external_id, s.answer) for a in rubric.anchors)
        },
        scale=points,
        rows=rows,
        pager=pager,
        summary=summary(question, counts, scored, points),
        by_criterion=per_criterion(rubric.criteria, [(r.human, r.submission.grade) for r in scored])
        if rubric
        else [],
        criterion_field=criterion_field,
        claim_choices={r.submission.id: claim_choices(r.submission.answer) for r in rows},
        max_claim_chars=MAX_CLAIM_CHARS,
        conclusion_cap=cap_share(rubric.conclusion) if rubric and rubric.conclusion else None,
        last_regrade=latest_regrade(ctx, exam, question_id) if rubric else None,
        error=str(error) if error else None,
        error_answer=error_answer,
        # the notice of a form posted from an answer's card goes in that card, in view
        done=None if on_page else notice,
        card_done=notice if on_page else None,
        at=at,
        focus=_next_unscored(rows, at),
    )


def _next_unscored(rows: list[AnswerRow], at: int | None) -> int | None:
    """The answer on the page whose score field gets the focus: the first not scored after
    ``at`` (the answer just saved), or on the page when there is none."""
    ids = [r.submission.id for r in rows]
    start = ids.index(at) + 1 if at in ids else 0
    return next((r.submission.id for r in rows[start:] + rows[:start] if r.human is None), None)


def latest_regrade(ctx: Pages, exam: Exam, question_id: str) -> RegradeJob | None:
    """The question's newest regrade against a rubric version, if any."""
    return ctx.store.regrades.latest(exam.name, question_id)


def claim_choices(answer: str) -> list[str]:
    """The answer's sentences an instructor may mark as a wrong claim (short enough to be one)."""
    return list(dict.fromkeys(s for s in sentences_of(answer) if len(s) <= MAX_CLAIM_CHARS))


def back_to(row: AnswerRow, form: dict[str, str], done: str) -> RedirectResponse:
    """After a form: back to the review queue's page, to the question's answers to grade first
    (``first``, its ``k`` kept) or to the answer on its question page."""
    s = row.submission
    if form.get("back") == "first":
        k = form.get("k", "")
        url = f"/instructor/exams/{quote(s.exam, safe='')}/questions/"
        url += f"{quote(s.question_id, safe='')}/first?done={done}"
        url += f"&k={k}" if k.isascii() and k.isdigit() and len(k) < 4 else ""
        url += f"#a{s.id}"
    elif form.get("back") == "review":
        page = form.get("page", "")
        url = f"/instructor/exams/{s.exam}/review?done={done}"
        url += f"&page={page}" if page.isascii() and page.isdigit() and len(page) < 10 else ""
    else:
        url = f"/instructor/exams/{s.exam}/questions/{s.question_id}?done={done}&at={s.id}#a{s.id}"
    return RedirectResponse(url, status_code=303)


def ranked_rows(rows: list[AnswerRow]) -> list[AnswerRow]:
    """Open reviews in the queue's order: hard reasons first, then the largest expected
    error (``engine.review.queue``), submission order among equals."""

    def key(row: AnswerRow) -> tuple[bool, float]:
        grade = row.submission.grade
        if grade is None:
            return (False, 0.0)
        return (not is_hard(grade), -(recorded_error(grade) or 0.0))

    return sorted(rows, key=key)


@dataclass(frozen=True)
class CopiedPair:
    """Two students' answers to one question that are nearly the same text."""

    question_id: str
    similarity: float
    first: AnswerRow
    second: AnswerRow


def copied_pairs(rows: list[AnswerRow]) -> list[CopiedPair]:
    """The near-duplicates the grades' signals name (an integrity matter, not a review
    reason: ``engine.review.queue``), each pair once, most similar first. A platform's ids
    name the other answer, so pairs stay within one platform."""
    by_id = {(r.submission.platform_id, r.submission.external_id): r for r in rows}
    pairs: dict[tuple[int, int], CopiedPair] = {}
    for row in rows:
        grade = row.submission.grade
        if grade is None or grade.signals is None:
            continue
        for copy in grade.signals.near_duplicates:
            other = by_id.get((row.submission.platform_id, copy.submission_id))
            if other is None or other.submission.question_id != row.submission.question_id:
                continue
            first, second = sorted((row, other), key=lambda r: r.submission.id)
            pairs.setdefault(
                (first.submission.id, second.submission.id),
                CopiedPair(row.submission.question_id, copy.similarity, first, second),
            )
    return sorted(pairs.values(), key=lambda p: (-p.similarity, p.first.submission.id))
