"""Rubric files written back as a small diff: what changed, in place, the rest of the file as
the instructor wrote it (comments, folded text, order, indentation)."""

import difflib
import shutil

from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubric
from grader.files.yaml_edit import update_yaml
from grader.models import Anchor, WrongClaim
from tests.conftest import RUBRICS

BANK = RUBRICS / "grad_accum_engineer.yaml"
ESSAY = "004-s6-q1"


def dumps(rubric):
    return (
        rubric.model_dump(mode="json", exclude={"version"}),
        rubric.model_dump(mode="json", exclude={"version"}, exclude_defaults=True),
    )


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_a_claim_and_an_anchor_change_a_few_lines_and_keep_the_rest(tmp_path):
    path = tmp_path / f"{ESSAY}.yaml"
    original = (RUBRICS / "grad_accum_engineer" / f"{ESSAY}.yaml").read_text(encoding="utf-8")
    path.write_text("# kept: an instructor's comment\n" + original, encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    bank = load_bank(BANK)
    rubric = load_rubric(path, bank)
    criteria = [
        c.model_copy(update={"wrong_claims": [*c.wrong_claims, WrongClaim(claim="loss不用缩放")]})
        if c.id == "C5" else c  # C5 lists no wrong claim yet: its key is added
        for c in rubric.criteria
    ]  # fmt: skip
    anchor = Anchor(id="answer-7", answer="梯度累加", scores={"C1": 1, "C2": 0}, answer_id=7)
    new = rubric.model_copy(update={"criteria": criteria, "anchors": [anchor]})
    assert update_yaml(path, *dumps(new))
    after = path.read_text(encoding="utf-8")
    diff = changed_lines(before, after)
    assert diff == [
        "+    wrong_claims:",
        "+      - claim: loss不用缩放",
        "-anchors: []",
        "+anchors:",
        "+  - id: answer-7",
        "+    answer: 梯度累加",
        "+    scores:",
        "+      C1: 1.0",
        "+      C2: 0.0",
        "+    answer_id: 7",
    ]
    assert after.startswith("# kept: an instructor's comment\n")
    assert "notes: >-\n" in after  # the folded text stays folded
    assert load_rubric(path, bank).version == new.version
    # points changed in place: one line each
    criteria = [c.model_copy(update={"points": 2.0 if c.id == "C1" else c.points})
                for c in new.criteria]  # fmt: skip
    again = new.model_copy(update={"criteria": criteria, "points": 6.0})
    update_yaml(path, *dumps(again))
    assert changed_lines(after, path.read_text(encoding="utf-8")) == [
        "-points: 5", "+points: 6", "-    points: 1", "+    points: 2",
    ]  # fmt: skip


def test_a_file_the_round_trip_cannot_keep_or_a_new_one_is_written_whole(tmp_path):
    bank = load_bank(BANK)
    source = RUBRICS / "grad_accum_engineer" / f"{ESSAY}.yaml"
    rubric = load_rubric(source, bank)
    fresh = tmp_path / "new" / f"{ESSAY}.yaml"
    assert not update_yaml(fresh, *dumps(rubric))  # no file yet: written whole
    assert load_rubric(fresh, bank).version == rubric.version
    odd = tmp_path / f"{ESSAY}.yaml"
    shutil.copy(source, odd)
    odd.write_text(odd.read_text().replace("criteria:\n  - id", "criteria:\n   - id", 1))
    assert not update_yaml(odd, *dumps(rubric))  # an indentation it cannot reproduce
    assert load_rubric(odd, bank).version == rubric.version
