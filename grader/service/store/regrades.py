"""Regrades of a question's stored answers against a new rubric version, as jobs in the store:
started on the instructor pages, worked a batch at a time by whichever grading process claims
them (a worker's task, the inline grader's loop), their progress and what they moved read back.

A job records the grade each answer had when it started (``before``), so the page can show
what moved, before and after, however long it runs. Each batch's new grades replace the
answers' grades of that rubric version, are ranked into the review queue and become grade
versions (cause ``rubric``: their platforms are told) in the transaction that counts the
batch done. A claim is released at the end of each batch; one held past ``stale_after`` (its
process died) may be taken again, and that batch is graded again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from grader.models import Grade
from grader.service.store import rows
from grader.service.store.engine import insert_ignore
from grader.service.store.records import StoredSubmission, utcnow
from grader.service.store.review_rank import rerank_in
from grader.service.store.schema import grades, regrade_jobs, review_queue, submissions
from grader.service.store.versions import settle

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"


@dataclass(frozen=True)
class RegradeJob:
    id: int
    exam: str
    question_id: str
    rubric_version: str
    status: str
    total: int
    done: int
    changed: int  # answers whose grade (the judge's) moved: its score or a criterion's points
    before: dict[int, int]  # submission id -> the grade row it had at the start
    error: str | None
    created_by: str
    created_at: datetime
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status in (DONE, FAILED)


class Regrades:
    def __init__(self, engine: Engine):
        self.engine = engine

    def start(self, exam: str, question_id: str, rubric_version: str, by: str) -> RegradeJob:
        """A job over every graded answer of the question, their grades now its ``before``."""
        with self.engine.begin() as conn:
            found = conn.execute(
                sa.select(submissions.c.id, grades.c.id.label("grade_id"))
                .select_from(submissions.join(grades, grades.c.id == rows.newest_grade_id()))
                .where(submissions.c.exam == exam, submissions.c.question_id == question_id)
                .order_by(submissions.c.id)
            ).all()
            before = {str(r.id): r.grade_id for r in found}
            job_id = conn.execute(
                regrade_jobs.insert().values(
                    exam=exam, question_id=question_id, rubric_version=rubric_version,
                    status=PENDING if before else DONE, total=len(before), done=0, changed=0,
                    before=before, created_by=by[:100], created_at=utcnow(),
                    finished_at=None if before else utcnow(),
                )
            ).inserted_primary_key[0]  # type: ignore[index]  # fmt: skip
        job = self.get(job_id)
        assert job is not None
        return job

    def get(self, job_id: int) -> RegradeJob | None:
        with self.engine.connect() as conn:
            row = conn.execute(regrade_jobs.select().where(regrade_jobs.c.id == job_id)).first()
        return _job(row) if row else None

    def latest(self, exam: str, question_id: str) -> RegradeJob | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                regrade_jobs.select()
                .where(regrade_jobs.c.exam == exam, regrade_jobs.c.question_id == question_id)
                .order_by(regrade_jobs.c.id.desc())
                .limit(1)
            ).first()
        return _job(row) if row else None

    def claim(self, stale_after: timedelta, job_id: int | None = None) -> RegradeJob | None:
        """Take a job to work one batch of: ``job_id``, or the oldest waiting; one pending, or
        running with a claim older than ``stale_after``. None when there is none to take."""
        now = utcnow()
        free = (regrade_jobs.c.status == PENDING) | (
            (regrade_jobs.c.status == RUNNING)
            & (
                regrade_jobs.c.claimed_at.is_(None)
                | (regrade_jobs.c.claimed_at < now - stale_after)
            )
        )
        with self.engine.begin() as conn:
            wanted = sa.select(regrade_jobs.c.id).where(free).order_by(regrade_jobs.c.id)
            if job_id is not None:
                wanted = wanted.where(regrade_jobs.c.id == job_id)
            found = conn.execute(wanted.limit(1)).scalar()
            if found is None:
                return None
            taken = conn.execute(
                regrade_jobs.update()
                .where(regrade_jobs.c.id == found, free)
                .values(status=RUNNING, claimed_at=now)
            ).rowcount
        return self.get(found) if taken else None

    def batch(self, job: RegradeJob, size: int) -> list[StoredSubmission]:
        """The job's next ``size`` answers, in submission order."""
        ids = sorted(job.before)[job.done : job.done + size]
        with self.engine.connect() as conn:
            found = conn.execute(
                submissions.select().where(submissions.c.id.in_(ids)).order_by(submissions.c.id)
            ).all()
        return [rows.stored(row) for row in found]

    def record(
        self, job: RegradeJob, batch: Sequence[int], results: Sequence[tuple[StoredSubmission, Grade]],
        share: float,
    ) -> list[int]:  # fmt: skip
        """The batch's new grades in place of their rubric version's, ranked, versioned and
        counted done, in one transaction; the claim released. Returns the webhook deliveries."""
        now = utcnow()
        with self.engine.begin() as conn:
            moved = _moved(conn, job, results)  # before the rows of this version make way
            for stored, grade in results:
                _replace(conn, stored.id, grade, now)
            rerank_in(conn, job.exam, [job.question_id], share)
            deliveries = settle(conn, [s.id for s, _ in results], "rubric", job.created_by, now)
            done = job.done + len(batch)
            conn.execute(
                regrade_jobs.update()
                .where(regrade_jobs.c.id == job.id)
                .values(
                    done=done, changed=regrade_jobs.c.changed + moved, claimed_at=None,
                    status=DONE if done >= job.total else RUNNING,
                    finished_at=now if done >= job.total else None,
                )
            )  # fmt: skip
        return deliveries

    def release(self, job: RegradeJob) -> None:
        """Give a claimed batch back ungraded (the judge was unreachable): tried again later."""
        with self.engine.begin() as conn:
            conn.execute(
                regrade_jobs.update().where(regrade_jobs.c.id == job.id).values(claimed_at=None)
            )

    def fail(self, job: RegradeJob, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                regrade_jobs.update()
                .where(regrade_jobs.c.id == job.id)
                .values(status=FAILED, error=error[:2000], claimed_at=None, finished_at=utcnow())
            )

    def waiting(self, stale_after: timedelta) -> list[int]:
        """Jobs no process works on now (pending, or claimed past ``stale_after``)."""
        now = utcnow()
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    sa.select(regrade_jobs.c.id)
                    .where(
                        (regrade_jobs.c.status == PENDING)
                        | (
                            (regrade_jobs.c.status == RUNNING)
                            & (
                                regrade_jobs.c.claimed_at.is_(None)
                                | (regrade_jobs.c.claimed_at < now - stale_after)
                            )
                        )
                    )
                    .order_by(regrade_jobs.c.id)
                ).scalars()
            )

    def grades(self, ids: Sequence[int]) -> dict[int, Grade]:
        """Grade rows by id (the job's ``before`` grades)."""
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(grades.c.id, grades.c.record).where(grades.c.id.in_(list(ids)))
            ).all()
        return {row.id: Grade.model_validate(row.record) for row in found}


def _replace(conn: Connection, submission_id: int, grade: Grade, now: datetime) -> None:
    """The answer's grade of this rubric version is ``grade``, and its newest: a row graded
    against the same version before (a rubric edited back, a batch graded again) makes way."""
    version = grade.provenance.rubric_version or ""
    mine = (grades.c.submission_id == submission_id) & (grades.c.rubric_version == version)
    conn.execute(grades.delete().where(mine))
    conn.execute(
        grades.insert().values(
            submission_id=submission_id, rubric_version=version, status=grade.status.value,
            score=grade.score, needs_review=grade.needs_review,
            judge_latency_s=grade.provenance.latency_s, record=grade.model_dump(mode="json"),
            created_at=now,
        )
    )  # fmt: skip
    if grade.needs_review:
        reasons = [r.model_dump(mode="json") for r in grade.review_reasons]
        insert_ignore(
            conn,
            review_queue,
            [{"submission_id": submission_id, "rubric_version": version, "reasons": reasons,
              "created_at": now}],
        )  # fmt: skip


def _moved(conn: Connection, job: RegradeJob, results: Sequence[tuple[StoredSubmission, Grade]]) -> int:  # fmt: skip
    """How many of ``results`` moved from the grade they had when the job started: their
    score, or the points of a criterion."""
    old = {job.before[s.id] for s, _ in results if s.id in job.before}
    found = conn.execute(sa.select(grades.c.id, grades.c.record).where(grades.c.id.in_(old)))
    records = {row.id: row.record for row in found}
    return sum(
        _points(records.get(job.before.get(s.id, -1))) != _points(g.model_dump(mode="json"))
        for s, g in results
    )


def _points(record: dict | None) -> tuple | None:
    if record is None:
        return None
    return record.get("score"), tuple((c["id"], c["points"]) for c in record.get("criteria", []))


def _job(row) -> RegradeJob:
    return RegradeJob(
        id=row.id,
        exam=row.exam,
        question_id=row.question_id,
        rubric_version=row.rubric_version,
        status=row.status,
        total=row.total,
        done=row.done,
        changed=row.changed,
        before={int(k): v for k, v in row.before.items()},
        error=row.error,
        created_by=row.created_by,
        created_at=row.created_at,
        finished_at=row.finished_at,
    )
