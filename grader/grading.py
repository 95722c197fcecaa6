"""Grade stored submissions: the step the Celery worker and the inline server share.

It reads only submissions still ``queued`` (a redelivered task finds the rest graded and skips
them), grades them with one ``grade_many`` per exam, and stores the grades in one idempotent
transaction. Answers the judge could not reach are not stored: they come back for a retry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from grader.errors import ConfigError
from grader.exams import Graders
from grader.models import Grade, Submission
from grader.store import Store, StoredSubmission


@dataclass
class Outcome:
    graded: int = 0
    deliveries: list[int] = field(default_factory=list)  # to send, now the grades are committed
    retry: list[int] = field(default_factory=list)  # submission ids: the judge was unreachable


def grade_stored(store: Store, graders: Graders, ids: Sequence[int]) -> Outcome:
    by_exam: dict[str, list[StoredSubmission]] = defaultdict(list)
    for stored in store.queued(ids):
        by_exam[stored.exam].append(stored)
    results: list[tuple[StoredSubmission, Grade]] = []
    outcome = Outcome()
    for exam, items in by_exam.items():
        if exam not in graders.exams:
            raise ConfigError(f"exam {exam!r} is not served by this worker (GRADER_BANKS)")
        items.sort(key=lambda s: s.question_id)  # one rubric prefix after another
        batch = [
            # The store's id, not the platform's: two platforms may use the same ids.
            Submission(id=str(s.id), question_id=s.question_id, answer=s.answer, student=s.student)
            for s in items
        ]
        for stored, grade in zip(items, graders.pipeline(exam).grade_many(batch), strict=True):
            if _judge_unavailable(grade):
                outcome.retry.append(stored.id)
            else:
                results.append(
                    (stored, grade.model_copy(update={"submission_id": stored.external_id}))
                )
    outcome.deliveries = store.record(results)
    outcome.graded = len(results)
    return outcome


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


def _judge_unavailable(grade: Grade) -> bool:
    return any(r.code == "judge_unavailable" for r in grade.review_reasons)
