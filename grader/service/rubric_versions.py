"""The rubrics a service grades with: versions kept in the store, read by every process before
it grades or shows a question, so an edit on the instructor pages reaches the next batch a
worker or the inline grader takes, without a restart.

- ``save``: a checked rubric becomes the question's newest version (in the store), is written
  back to the bank's rubric file as a small diff (``files.yaml_edit``), and is used by this
  process at once;
- ``refresh``: an exam's rubrics brought to the store's newest versions (one indexed query
  when nothing moved);
- ``import_files``: at the API's start, a rubric file whose version the store has never seen
  (an instructor edited the YAML) becomes the newest version; a file of a version the store
  knows (an older copy on another host) changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from grader.engine.reading.rubrics import edit_rubric_file, rubric_dir, rubric_problems
from grader.errors import RubricError
from grader.models import Question, Rubric
from grader.service.exams import Exam
from grader.service.store import Store

log = logging.getLogger(__name__)

FROM_FILE = "file"  # created_by of a version imported from the bank's rubric file


def refresh(exam: Exam, store: Store) -> bool:
    """Put the store's newest rubric of each question in ``exam.rubrics`` (in place: the
    exam's pipeline reads that dict on every call); True when any changed."""
    newest = store.rubrics.newest_id(exam.name)
    if newest <= exam.rubrics_seen:
        return False
    changed = False
    for question_id, saved in store.rubrics.current(exam.name).items():
        if exam.bank.get(question_id) is None:
            continue  # a question the bank no longer has
        known = exam.rubrics.get(question_id)
        if known is None or known.version != saved.rubric.version:
            exam.rubrics[question_id] = saved.rubric
            changed = True
    exam.rubrics_seen = newest
    return changed


def save(
    exam: Exam, store: Store, question: Question, rubric: Rubric, by: str, note: str
) -> Rubric:
    """``rubric`` as the question's newest version: checked (RubricError naming each problem),
    stored, written to the bank's rubric file, and graded with by this process from now."""
    problems = rubric_problems(rubric, question)
    if problems:
        raise RubricError("; ".join(problems))
    saved = store.rubrics.save(exam.name, rubric, by, note)
    write_file(exam, rubric)
    exam.rubrics[question.id] = rubric
    exam.rubrics_seen = max(exam.rubrics_seen, saved)
    return rubric


def write_file(exam: Exam, rubric: Rubric) -> None:
    """The rubric in ``<bank>/<question_id>.yaml``, only what changed rewritten; a host whose
    bank folder cannot be written keeps the version in the store alone (logged)."""
    try:
        edit_rubric_file(rubric, rubric_dir(exam.path))
    except OSError as exc:
        log.warning(
            "rubric %s of %s kept in the store only: %s", rubric.question_id, exam.name, exc
        )


def import_files(exams: Mapping[str, Exam], store: Store) -> int:
    """Store each rubric file of a version the store has never seen; then bring every exam to
    the store's newest. Returns how many files were imported."""
    imported = 0
    for exam in exams.values():
        for question_id, rubric in sorted(exam.rubrics.items()):
            if rubric.version not in store.rubrics.known(exam.name, question_id):
                store.rubrics.save(exam.name, rubric, FROM_FILE, "read from the rubric file")
                imported += 1
        exam.rubrics_seen = 0  # read everything back: the store's newest wins
        refresh(exam, store)
    return imported
