"""Grade a stored batch: the step the Celery worker and the inline server share.

It reads only submissions still ``queued`` (a redelivered task finds the rest graded and skips
them), grades them with one ``grade_many`` per exam and platform — with the platform's other
answers to the same questions as the cohort that embedding signals compare against, the ones
an instructor scored as the scorer's graded neighbours, and the exam's scorer (an instructor's
refit, ``store.scorers``) and its rubrics as the store has them now (``rubric_versions``) — and
stores the grades in one idempotent transaction. Answers the judge could not reach are not
stored: they come back for a retry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from grader.errors import ConfigError
from grader.models import Grade, GradeDetails, Submission
from grader.service.exams import Graders
from grader.service.rubric_versions import refresh
from grader.service.store import Store, StoredSubmission
from grader.service.store.scorers import ExamScorer


@dataclass
class Outcome:
    graded: int = 0
    retry: list[int] = field(default_factory=list)  # submission ids: the judge was unreachable


def grade_stored(store: Store, graders: Graders, ids: Sequence[int]) -> Outcome:
    results, retry = grade_items(store, graders, store.queue.queued(ids))
    outcome = Outcome(retry=retry)
    # the review budget is a question's share of all its stored answers, not of this batch's;
    # the webhooks of the grade versions go out from the outbox (``courier``)
    store.queue.record(results, graders.settings.review.share)
    outcome.graded = len(results)
    return outcome


def grade_items(
    store: Store, graders: Graders, stored: Sequence[StoredSubmission]
) -> tuple[list[tuple[StoredSubmission, Grade]], list[int]]:
    """Grade stored submissions (queued ones, or graded ones a regrade grades again) as the
    exam's pipeline does now: (submission, grade) for each graded, and the ids the judge could
    not reach, to grade again later."""
    by_exam: dict[tuple[str, int], list[StoredSubmission]] = defaultdict(list)
    for item in stored:
        by_exam[item.exam, item.platform_id].append(item)
    results: list[tuple[StoredSubmission, Grade]] = []
    retry: list[int] = []
    applied: dict[str, ExamScorer | None] = {}  # per exam, read once per task
    refreshed: set[str] = set()
    for (exam, platform_id), items in by_exam.items():
        if exam not in graders.exams:
            raise ConfigError(f"exam {exam!r} is not served by this worker (GRADER_BANKS)")
        items.sort(key=lambda s: s.question_id)  # one rubric prefix after another
        if exam not in refreshed:  # a rubric edited on the pages grades this batch already
            refresh(graders.exams[exam], store)
            refreshed.add(exam)
        pipeline = graders.pipeline(exam)
        cohort, scored = [], []
        if pipeline.embedder is not None:  # the answers the embedding signals compare
            questions = sorted({s.question_id for s in items})
            cohort = store.queue.cohort(platform_id, exam, questions)
            scored = store.queue.graded(platform_id, exam, questions)
        scorer = graders.scorer(exam, _applied(store, exam, applied))
        external = {str(s.id): s.external_id for s in (*cohort, *items)}
        graded = pipeline.grade_many(
            [_submission(s) for s in items],
            [_submission(s) for s in cohort],
            graded=scored,
            scorer=scorer,
        )
        for item, grade in zip(items, graded, strict=True):
            if grade.retryable:
                retry.append(item.id)
            else:
                results.append((item, _with_platform_ids(grade, external)))
    return results, retry


def chunks(items: Iterable[StoredSubmission], size: int) -> list[list[int]]:
    """Submission ids in tasks of at most ``size``, one exam per task, sorted by question so
    the answers sharing a rubric prefix sit together in the judge's batch."""
    by_exam: dict[str, list[StoredSubmission]] = defaultdict(list)
    for s in items:
        by_exam[s.exam].append(s)
    out = []
    for group in by_exam.values():
        ids = [s.id for s in sorted(group, key=lambda s: (s.question_id, s.id))]
        out += [ids[i : i + size] for i in range(0, len(ids), size)]
    return out


def _applied(store: Store, exam: str, seen: dict[str, ExamScorer | None]) -> ExamScorer | None:
    """The scorer an instructor applied to ``exam``, read once per task."""
    if exam not in seen:
        seen[exam] = store.scorers.applied(exam)
    return seen[exam]


def _submission(stored: StoredSubmission) -> Submission:
    # The store's id, not the platform's: two platforms may use the same ids.
    return Submission(
        id=str(stored.id),
        question_id=stored.question_id,
        answer=stored.answer,
        student=stored.student,
    )


def _with_platform_ids(grade: Grade, external: dict[str, str]) -> Grade:
    """The grade as the platform knows it: its own submission ids, here and in the signals."""
    update: dict = {"submission_id": external[grade.submission_id]}
    if grade.details.scorer is not None:  # the graded answers it leaned on, by platform ids
        update["details"] = with_platform_ids(grade.details, external)
    if grade.signals is not None and grade.signals.near_duplicates:
        duplicates = [
            d.model_copy(update={"submission_id": external.get(d.submission_id, d.submission_id)})
            for d in grade.signals.near_duplicates
        ]
        update["signals"] = grade.signals.model_copy(update={"near_duplicates": duplicates})
    return grade.model_copy(update=update)


def with_platform_ids(details: GradeDetails, external: dict[str, str]) -> GradeDetails:
    """``details`` with the scorer's neighbours and copies named by the platform's ids
    (anchors, ``anchor:…``, keep theirs)."""
    if details.scorer is None:
        return details
    return details.model_copy(update={"scorer": details.scorer.with_ids(external)})
