"""Human scores (CSV) joined with the judge's grades: the table every calibration step reads.

The instructor's CSV has ``submission_id``, ``question_id`` and ``score``; ``answer``, ``note``
and ``student`` are optional, and every other column is a criterion id (``C1``, ``C2``, ...)
holding the points given on that criterion. An empty criterion cell means "not graded per
criterion". Every problem names the file, the line and the column, and the whole file is
checked before anything is computed.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.engine.reading.rubrics import rubric_for
from grader.errors import CalibrationError
from grader.files.jsonl import json_lines
from grader.files.submissions import SubmissionLine
from grader.models import Bank, Grade, Rubric

REQUIRED_COLUMNS = ("submission_id", "question_id", "score")
TEXT_COLUMNS = ("answer", "note", "student")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HumanScore(_Model):
    """One answer as the instructor graded it."""

    submission_id: str
    question_id: str
    score: float = Field(ge=0)
    criteria: dict[str, float] = Field(default_factory=dict)
    answer: str | None = None
    note: str | None = None
    line: int = Field(description="Line of the CSV, so later checks can point at it.")
    answer_id: int | None = Field(
        default=None, description="The service's id of the answer, when scored on its pages."
    )


class Scale(_Model):
    """The points a question is worth, in total and per criterion."""

    max_score: float = Field(gt=0)
    criteria: dict[str, float] = Field(default_factory=dict)


class CriterionPair(_Model):
    id: str
    max_points: float
    human: float | None = Field(
        description="None when the instructor gave no points per criterion."
    )
    judge: float
    evidence: str = ""
    rationale: str = ""


class ScorePair(_Model):
    """One answer scored by both the instructor and the judge."""

    submission_id: str
    question_id: str
    max_score: float
    human: float
    judge: float
    criteria: list[CriterionPair] = Field(default_factory=list)
    answer: str | None = None
    feedback: str | None = None


class Pairing(_Model):
    """The human scores matched with the grades, and what could not be matched."""

    pairs: list[ScorePair]
    human_only: list[str] = Field(
        default_factory=list, description="Graded by the instructor; no grade in the grades file."
    )
    judge_unscored: list[str] = Field(
        default_factory=list, description="Graded by the instructor; the judge gave no score."
    )
    judge_only: int = Field(default=0, description="Judge grades the instructor did not grade.")
    excluded_anchors: list[str] = Field(
        default_factory=list,
        description="Answers that are anchors of their rubric: the judge has seen their scores.",
    )

    def restricted_to(self, submission_ids: set[str]) -> Pairing:
        return self.model_copy(
            update={"pairs": [p for p in self.pairs if p.submission_id in submission_ids]}
        )


def question_order(question_id: str) -> list[str | int]:
    """Sort key that puts '2.10' after '2.9' and 'q10' after 'q9'."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", question_id)]


def read_human_scores(path: Path) -> list[HumanScore]:
    """Every row of the instructor's CSV, validated, or a CalibrationError naming the cell."""
    reader = csv.reader(io.StringIO(_csv_text(path), newline=""))
    header = _next_row(reader, path, 1)
    if header is None:
        raise CalibrationError("empty file: expected a header row", file=path, line=1)
    header = [h.strip() for h in header]
    _check_header(header, path)
    criteria = [h for h in header if h not in REQUIRED_COLUMNS + TEXT_COLUMNS]
    scores: list[HumanScore] = []
    seen: dict[str, int] = {}
    start = reader.line_num + 1
    while (cells := _next_row(reader, path, start)) is not None:
        line, start = start, reader.line_num + 1  # a quoted cell may span lines
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise CalibrationError(
                f"{len(cells)} cells, the header has {len(header)} columns",
                file=path,
                line=line,
            )
        row = dict(zip(header, cells, strict=True))
        score = _row_score(row, criteria, path, line)
        if score.submission_id in seen:
            raise CalibrationError(
                f"column submission_id: {score.submission_id!r} already on line "
                f"{seen[score.submission_id]}",
                file=path,
                line=line,
            )
        seen[score.submission_id] = line
        scores.append(score)
    return scores


def _csv_text(path: Path) -> str:
    """The file as text; bytes that are not UTF-8 are named by line and column."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"cannot read human scores: {exc.strerror}", file=path) from exc
    try:
        return data.decode("utf-8-sig")  # -sig: Excel writes a BOM
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        raise CalibrationError(
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at column {exc.start - line_start + 1}):"
            " save the file as UTF-8 CSV",
            file=path,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from exc


def _next_row(reader: Iterator[list[str]], path: Path, line: int) -> list[str] | None:
    """The next row (it starts on ``line``), or None at the end; what the csv module refuses
    (a cell over its size limit) is named with the row's line."""
    try:
        return next(reader, None)
    except csv.Error as exc:
        problem = str(exc)
        if "field limit" in problem:
            problem = f"a cell longer than {csv.field_size_limit():,} characters"
        raise CalibrationError(f"not a readable CSV row: {problem}", file=path, line=line) from exc


def _check_header(header: list[str], path: Path) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise CalibrationError(
            f"missing column(s) {', '.join(missing)}: the header needs "
            f"{', '.join(REQUIRED_COLUMNS)}",
            file=path,
            line=1,
        )
    duplicates = sorted({h for h in header if header.count(h) > 1})
    if duplicates:
        raise CalibrationError(f"duplicate column(s) {', '.join(duplicates)}", file=path, line=1)
    if "" in header:
        raise CalibrationError("a column has no name", file=path, line=1)


def _row_score(row: dict[str, str], criteria: list[str], path: Path, line: int) -> HumanScore:
    for column in ("submission_id", "question_id", "score"):
        if not row[column].strip():
            raise CalibrationError(f"column {column}: empty", file=path, line=line)
    points = {
        c: _number(row[c], c, path, line) for c in criteria if row[c].strip()
    }  # empty: no points per criterion
    return HumanScore(
        submission_id=row["submission_id"].strip(),
        question_id=row["question_id"].strip(),
        score=_number(row["score"], "score", path, line),
        criteria=points,
        answer=row.get("answer") or None,
        note=row.get("note") or None,
        line=line,
    )


def _number(cell: str, column: str, path: Path, line: int) -> float:
    try:
        value = float(cell.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise CalibrationError(f"column {column}: {cell!r} is not a number", file=path, line=line)
    if value < 0:
        raise CalibrationError(f"column {column}: {value:g} is negative", file=path, line=line)
    return value


def read_answers(path: Path) -> dict[str, str]:
    """Answer text by submission id, from a submissions JSONL (the bank is not needed here)."""
    answers: dict[str, str] = {}
    for number, value in json_lines(path, CalibrationError, "submissions"):
        try:
            line = SubmissionLine.model_validate(value)
        except ValidationError as exc:
            raise CalibrationError(f"not a submission: {exc}", file=path, line=number) from exc
        answers[line.id] = line.answer
    return answers


def question_scales(bank: Bank, rubrics: dict[str, Rubric]) -> dict[str, Scale]:
    """Each question's points from the bank and its rubric (derived where there is none)."""
    scales = {}
    for question in bank.questions:
        if question.type.objective:
            if question.points is not None and question.points > 0:
                scales[question.id] = Scale(max_score=question.points)
            continue
        rubric = rubric_for(question, rubrics)
        scales[question.id] = Scale(
            max_score=rubric.points, criteria={c.id: c.points for c in rubric.criteria}
        )
    return scales


def pair_scores(
    humans: Iterable[HumanScore],
    grades: Iterable[Grade],
    *,
    human_file: Path | str | None = None,
    scales: dict[str, Scale] | None = None,
    answers: dict[str, str] | None = None,
    anchors: dict[str, set[str]] | None = None,
) -> Pairing:
    """Match the instructor's scores with the judge's grades by submission id.

    ``scales`` (from a bank) fixes each question's points; without it they come from the
    grades' ``max_score``. ``answers`` (a submissions file) both supplies answer text and
    catches mistyped ids. Answers that are anchors (``anchors``: question id -> anchor ids)
    are left out: the judge saw their scores in its prompt, so they would flatter it.
    """
    latest = {g.submission_id: g for g in grades}  # a retried submission: the last record counts
    humans = list(humans)
    pairs: list[ScorePair] = []
    human_only: list[str] = []
    judge_unscored: list[str] = []
    excluded_anchors: list[str] = []
    for human in humans:

        def fail(message: str, human: HumanScore = human) -> CalibrationError:
            return CalibrationError(message, file=human_file, line=human.line)

        if answers is not None and human.submission_id not in answers:
            raise fail(f"column submission_id: {human.submission_id!r} is not in the submissions")
        if scales is not None and human.question_id not in scales:
            raise fail(f"column question_id: {human.question_id!r} is not in the bank")
        grade = latest.get(human.submission_id)
        if grade is not None and grade.question_id != human.question_id:
            raise fail(
                f"column question_id: {human.question_id!r}, but the grades file has "
                f"{grade.question_id!r} for submission {human.submission_id!r}"
            )
        scale = _scale(human, grade, scales)
        if scale is not None:
            _check_range(human, scale, fail)
        if grade is None:
            human_only.append(human.submission_id)
            continue
        if scale is None:
            raise fail(
                f"no point scale for question {human.question_id!r}: its grade has no "
                "max_score; pass the bank"
            )
        if grade.score is None:
            judge_unscored.append(human.submission_id)
            continue
        if human.submission_id in (anchors or {}).get(human.question_id, set()):
            excluded_anchors.append(human.submission_id)
            continue
        pairs.append(
            _pair(human, grade, scale, human.answer or (answers or {}).get(human.submission_id))
        )
    graded_by_human = {h.submission_id for h in humans}
    return Pairing(
        pairs=pairs,
        human_only=human_only,
        judge_unscored=judge_unscored,
        judge_only=sum(1 for sid in latest if sid not in graded_by_human),
        excluded_anchors=excluded_anchors,
    )


def _pair(human: HumanScore, grade: Grade, scale: Scale, answer: str | None) -> ScorePair:
    assert grade.score is not None
    return ScorePair(
        submission_id=human.submission_id,
        question_id=human.question_id,
        max_score=scale.max_score,
        human=human.score,
        judge=grade.score,
        criteria=[
            CriterionPair(
                id=c.id,
                max_points=scale.criteria.get(c.id, c.max_points),
                human=human.criteria.get(c.id),
                judge=c.points,
                evidence=c.evidence,
                rationale=c.rationale,
            )
            for c in grade.criteria
        ],
        answer=answer,
        feedback=grade.feedback,
    )


def _scale(human: HumanScore, grade: Grade | None, scales: dict[str, Scale] | None) -> Scale | None:
    if scales is not None:
        return scales[human.question_id]
    if grade is None or not grade.max_score:
        return None
    return Scale(max_score=grade.max_score, criteria={c.id: c.max_points for c in grade.criteria})


def _check_range(human: HumanScore, scale: Scale, fail) -> None:
    if human.score > scale.max_score + 1e-9:
        raise fail(
            f"column score: {human.score:g} exceeds the {scale.max_score:g} points of "
            f"question {human.question_id!r}"
        )
    for cid, points in human.criteria.items():
        if not scale.criteria:
            continue  # no criteria known (an unscored or objective grade): nothing to check
        if cid not in scale.criteria:
            known = ", ".join(scale.criteria) or "none known"
            raise fail(
                f"column {cid}: question {human.question_id!r} has no criterion {cid!r} "
                f"(criteria: {known})"
            )
        if points > scale.criteria[cid] + 1e-9:
            raise fail(
                f"column {cid}: {points:g} exceeds the criterion's {scale.criteria[cid]:g} points"
            )
