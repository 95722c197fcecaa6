"""Rubric versions kept in the service: each save on the instructor pages is a row, and the
newest row of a question is the rubric every process grades it with. The bank's YAML files
stay the import and export format (``service.rubric_versions``): a file whose version the
store has never seen is imported at the API's start; every save writes the file back.

Every grading process reads ``newest_id`` before a batch (one indexed query) and the rubrics
only when it moved, so an edit reaches the next batch graded anywhere, without a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader.models import Rubric
from grader.service.store.records import utcnow
from grader.service.store.schema import rubric_versions


@dataclass(frozen=True)
class RubricVersion:
    id: int
    exam: str
    question_id: str
    rubric: Rubric
    note: str | None
    created_by: str
    created_at: datetime


class Rubrics:
    def __init__(self, engine: Engine):
        self.engine = engine

    def save(self, exam: str, rubric: Rubric, by: str, note: str | None = None) -> int:
        """A new version of the question's rubric, current from now on; its row id."""
        with self.engine.begin() as conn:
            return conn.execute(
                rubric_versions.insert().values(
                    exam=exam,
                    question_id=rubric.question_id,
                    version=rubric.version,
                    rubric=rubric.model_dump(mode="json", exclude={"version"}),
                    note=note,
                    created_by=by[:100],
                    created_at=utcnow(),
                )
            ).inserted_primary_key[0]  # type: ignore[index]  # one row inserted: never None

    def newest_id(self, exam: str) -> int:
        """The id of the exam's newest rubric version (0: none): what moves on each save."""
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(sa.func.max(rubric_versions.c.id)).where(rubric_versions.c.exam == exam)
            ).scalar()
        return int(found or 0)

    def current(self, exam: str) -> dict[str, RubricVersion]:
        """Each question's newest version, by question id (questions never saved: absent)."""
        newest = (
            sa.select(sa.func.max(rubric_versions.c.id))
            .where(rubric_versions.c.exam == exam)
            .group_by(rubric_versions.c.question_id)
        )
        with self.engine.connect() as conn:
            found = conn.execute(rubric_versions.select().where(rubric_versions.c.id.in_(newest)))
            return {row.question_id: _version(row) for row in found}

    def known(self, exam: str, question_id: str) -> set[str]:
        """The versions of the question's rubric ever saved (a file of one of them is not new)."""
        with self.engine.connect() as conn:
            return set(
                conn.execute(
                    sa.select(rubric_versions.c.version).where(
                        rubric_versions.c.exam == exam,
                        rubric_versions.c.question_id == question_id,
                    )
                ).scalars()
            )

    def history(self, exam: str, question_id: str, limit: int = 20) -> list[RubricVersion]:
        """The question's versions, newest first."""
        with self.engine.connect() as conn:
            found = conn.execute(
                rubric_versions.select()
                .where(rubric_versions.c.exam == exam, rubric_versions.c.question_id == question_id)
                .order_by(rubric_versions.c.id.desc())
                .limit(limit)
            ).all()
        return [_version(row) for row in found]


def _version(row) -> RubricVersion:
    return RubricVersion(
        id=row.id,
        exam=row.exam,
        question_id=row.question_id,
        rubric=Rubric.model_validate(row.rubric),
        note=row.note,
        created_by=row.created_by,
        created_at=row.created_at,
    )
