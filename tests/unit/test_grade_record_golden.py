"""Grades files written by the last release still load, and write back the same records.

``tests/golden/grades_f7d6462.jsonl`` was written by the code at f7d6462, when ``details``
and ``provenance`` were free dicts: ``Pipeline.grade_many`` on the grad_accum_engineer
exam (``rubrics/``) with the scripted judge in both modes and ``tests.embedders``, the
default scorer with graded answers (neighbours, a copy), suspected injections, a restated
answer and a wrong claim, a conclusion (gated and not), the review ranking, then
``calibrate.mapping.apply_mapping``, the re-score (``rescore_grades``) and the service's
override (``store.records.overridden``), through ``files.grades.GradeWriter``. It is never
regenerated: it stands for the files platforms already hold.
"""

import json
from pathlib import Path

from grader.files.grades import read_grades
from grader.models import Grade, GradeDetails, GradeProvenance

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "grades_f7d6462.jsonl"
LINES = [line for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line]


def canonical(value: object) -> str:
    """The JSON with keys sorted: the record's content, where ``1`` and ``1.0`` differ."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# parts a later release added (the judge's budget: ``engine.judging.budget``; plan ``anchored``:
# ``engine.scoring.anchored``; the score's trail: ``engine.finish.final``; the decisive parts
# read: ``engine.finish.verified``); new records carry them, tested where they are written
# (tests/unit/test_judge_plan.py, test_anchored_plan.py, test_trail.py, test_claims_verified.py)
ADDED_DETAILS = {"judge_plan", "split", "coverage", "anchored", "trail", "claims"}
ADDED_PROVENANCE = {"judge_plan", "judge_checks"}


def test_the_golden_file_holds_every_part_of_the_record():
    parts = {k for line in LINES for k in json.loads(line)["details"]}
    keys = {k for line in LINES for k in json.loads(line)["provenance"]}
    assert parts | ADDED_DETAILS == set(GradeDetails.model_fields)  # no part left untested
    assert keys | ADDED_PROVENANCE == set(GradeProvenance.model_fields)
    assert not parts & ADDED_DETAILS and not keys & ADDED_PROVENANCE


def test_every_record_of_the_last_release_loads_and_writes_back_the_same_json():
    for line in LINES:
        grade = Grade.model_validate_json(line)
        assert canonical(grade.model_dump(mode="json")) == canonical(json.loads(line))
        assert not grade.details.model_extra and not grade.provenance.model_extra  # all typed


def test_the_grades_file_reader_loads_it():
    grades = read_grades(GOLDEN)  # the newest grade per submission
    assert {g.submission_id for g in grades} == {json.loads(x)["submission_id"] for x in LINES}
    assert any(g.details.scorer and g.details.scorer.decided_by == "copy" for g in grades)
    assert any(g.details.injection and g.details.injection.kept == "cleaned" for g in grades)
    assert any(g.details.conclusion and not g.details.conclusion.gate for g in grades)


def test_a_part_this_release_does_not_know_is_kept():
    record = json.loads(LINES[-1])
    record["details"]["from_a_later_release"] = {"x": 1}
    record["provenance"]["worker"] = "w-1"
    again = Grade.model_validate(record).model_dump(mode="json")
    assert canonical(again) == canonical(record)
