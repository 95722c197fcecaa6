"""Rubric files: load and validate them, and derive one where an instructor has not written it.

A bank ``rubrics/NAME.yaml`` keeps its rubrics in ``rubrics/NAME/<question_id>.yaml``. A
subjective question without a file is still graded, against a rubric derived from its
reference answer (``reviewed: false``), and such grades are marked for review.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from grader.engine.reading.claims.patterns import PatternError, parse_group
from grader.engine.reading.conclusion_derive import derive_conclusion
from grader.engine.reading.conclusion_read import read_conclusion
from grader.errors import RubricError
from grader.files.yaml_edit import update_yaml
from grader.files.yamlfile import read_yaml_mapping, write_yaml
from grader.models import Anchor, Bank, Conclusion, Criterion, Level, Question, Rubric, WrongClaim
from grader.text import match_key

DEFAULT_SUBJECTIVE_POINTS = 10.0


def rubric_dir(bank_path: Path) -> Path:
    return bank_path.with_suffix("")


def load_rubric(path: Path, bank: Bank) -> Rubric:
    data, _ = read_yaml_mapping(path, RubricError, "rubric")
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RubricError(f"{where}: {first['msg']}", file=path) from exc
    problems = rubric_problems(rubric, bank.get(rubric.question_id))
    if path.stem != rubric.question_id:
        problems.insert(0, f"question_id {rubric.question_id!r} does not match the file name")
    if problems:  # each once: a pattern can repeat one mistake in every group
        raise RubricError("; ".join(dict.fromkeys(problems)), file=path)
    return rubric


def rubric_problems(rubric: Rubric, question: Question | None) -> list[str]:
    """Everything that makes ``rubric`` unusable for ``question``, as readable sentences."""
    problems = []
    if question is None:
        return [f"question_id {rubric.question_id!r} is not in the bank"]
    if question.type.objective:
        problems.append(
            f"{question.id} is a {question.type} question, graded exactly, not by rubric"
        )
    total = sum(c.points for c in rubric.criteria)
    if abs(total - rubric.points) > 1e-9:
        problems.append(f"criteria points add up to {total:g}, not the rubric's {rubric.points:g}")
    if question.points is not None and abs(rubric.points - question.points) > 1e-9:
        problems.append(
            f"rubric is worth {rubric.points:g} points, the question {question.points:g}"
        )
    ids = [c.id for c in rubric.criteria]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        problems.append(f"duplicate criterion ids: {', '.join(duplicates)}")
    by_id = {c.id: c for c in rubric.criteria}
    for c in rubric.criteria:
        for level in c.levels:
            if level.points > c.points:
                problems.append(f"criteria.{c.id}: level of {level.points:g} exceeds {c.points:g}")
        if len({level.points for level in c.levels}) != len(c.levels):
            problems.append(f"criteria.{c.id}: two levels with the same points")
        if c.points * 2 != int(c.points * 2):
            problems.append(f"criteria.{c.id}: points must be whole or half points")
    problems += pattern_problems(rubric)
    for penalty in rubric.penalties:
        if penalty.criterion is not None and penalty.criterion not in by_id:
            problems.append(f"penalty names unknown criterion {penalty.criterion!r}")
    if rubric.conclusion is not None and _unreadable(rubric.conclusion):
        problems.append(
            f"conclusion: {rubric.conclusion.expected!r} is not a readable {rubric.conclusion.kind}"
        )
    for anchor in rubric.anchors:
        for cid, points in anchor.scores.items():
            if cid not in by_id:
                problems.append(f"anchors.{anchor.id}: unknown criterion {cid!r}")
            elif not 0 <= points <= by_id[cid].points:
                problems.append(f"anchors.{anchor.id}: {cid} score {points:g} out of range")
    return problems


def pattern_problems(rubric: Rubric) -> list[str]:
    """Claim patterns that cannot be read (an unknown ``@class``, a bad value range, an
    empty term), named by criterion and field, and parts that pay more than their criterion."""
    problems = []
    for c in rubric.criteria:
        written = [(f"criteria.{c.id}.parts[{k}]", p.when) for k, p in enumerate(c.parts)]
        written += [(f"criteria.{c.id}.wrong_claims[{k}]", w.when)
                    for k, w in enumerate(c.wrong_claims)]  # fmt: skip
        for where, patterns in written:
            for pattern in patterns:
                groups = pattern[1:] if pattern[:1] == ["*"] else pattern
                if not groups:
                    problems.append(f"{where}.when: an empty pattern")
                for group in groups:
                    try:
                        parse_group(group)
                    except PatternError as exc:
                        problems.append(f"{where}.when: {exc}")
        problems += [
            f"criteria.{c.id}.parts[{k}]: pays {p.pays:g}, more than the criterion's {c.points:g}"
            for k, p in enumerate(c.parts)
            if p.pays is not None and p.pays > c.points
        ]
    return problems


def _unreadable(conclusion: Conclusion) -> bool:
    """The expected conclusion does not read as its kind (a verdict that is no verdict, a
    formula that does not parse): it would never match, so every answer would be capped."""
    return read_conclusion(conclusion, conclusion.expected).decision != "match"


def load_rubrics(bank_path: Path, bank: Bank) -> dict[str, Rubric]:
    """All rubric files of a bank, by question id (none is fine: rubrics get derived)."""
    folder = rubric_dir(bank_path)
    if not folder.is_dir():
        return {}
    rubrics = {}
    for path in sorted(folder.glob("*.yaml")):
        rubric = load_rubric(path, bank)
        rubrics[rubric.question_id] = rubric
    return rubrics


def with_wrong_claim(rubric: Rubric, criterion: str, claim: WrongClaim) -> Rubric:
    """A new rubric whose ``criterion`` lists ``claim`` after its own wrong claims."""
    criteria = [
        c.model_copy(update={"wrong_claims": [*c.wrong_claims, claim]}) if c.id == criterion else c
        for c in rubric.criteria
    ]
    return rubric.model_copy(update={"criteria": criteria})


def save_rubric(rubric: Rubric, folder: Path) -> Path:
    """The rubric written whole to ``<folder>/<question_id>.yaml`` (a new draft)."""
    path = folder / f"{rubric.question_id}.yaml"
    write_yaml(rubric.model_dump(mode="json", exclude={"version"}), path)
    return path


def edit_rubric_file(rubric: Rubric, folder: Path) -> Path:
    """The rubric written to ``<folder>/<question_id>.yaml`` with only what changed rewritten:
    an instructor's file keeps its comments, order and pattern layout (``files.yaml_edit``)."""
    path = folder / f"{rubric.question_id}.yaml"
    full = rubric.model_dump(mode="json", exclude={"version"})
    minimal = rubric.model_dump(mode="json", exclude={"version"}, exclude_defaults=True)
    update_yaml(path, full, minimal)
    return path


def is_anchor(anchor: Anchor, answer_id: int, external_id: str, answer: str) -> bool:
    """Whether ``anchor`` is this stored answer (``answer_id``: the store's id, ``external_id``:
    its platform's). By the store's id when the anchor carries one; an anchor without it (from
    ``grader calibrate promote``, or promoted on the pages before they recorded it) by the
    submission id. Either way its text must be the answer's too: another platform's answer can
    have the same submission id, and a rubric copied to another database the same store id."""
    if anchor.answer_id is not None:
        same = anchor.answer_id == answer_id
    else:
        same = anchor.id == external_id
    return same and match_key(anchor.answer) == match_key(answer)


def rubric_for(question: Question, rubrics: dict[str, Rubric]) -> Rubric:
    """The instructor's rubric for ``question``, else the one derived from its reference.

    A derived rubric is made once per question content and shared: do not change it in place
    (``model_copy(update=...)`` makes a new one, as promoting anchors does).
    """
    found = rubrics.get(question.id)
    if found is not None:
        return found
    reference = question.answer if isinstance(question.answer, str) else None
    return _derived(question.id, question.points, reference, question.language, question.stem)


# --- derived rubrics -------------------------------------------------------------------------

_SPLIT = re.compile(
    r"(?:[。；;！!？?\n]|[.．](?=\s|$))+|(?:^|\s)(?:\d+[.．、)）]|[（(]\d+[)）]|[-•·])\s*"
)
_LIST_MARK = re.compile(r"^\s*(?:\d+[.．、)）]|[（(]\d+[)）])\s*")
MAX_DERIVED_CRITERIA = 10  # each key point is its own check anyway; this caps the table
_PRINTED_POINTS = re.compile(r"[（(]\s*(\d+(?:\.5)?)\s*分\s*[)）]")


def key_points_of(reference: str) -> list[str]:
    """The reference answer cut into its statements: sentences, clauses and list items."""
    parts = [_LIST_MARK.sub("", p).strip(" ，,：:、") for p in _SPLIT.split(reference)]
    return [p for p in parts if len(p) >= 4]


def derive_rubric(question: Question) -> Rubric:
    """Key-point criteria from the reference answer, levels full/part/none.

    The reference is cut by its own structure (numbered items, sentences, clauses) into key
    points a small judge can check one at a time; each becomes a criterion while the points
    allow, with the points the reference prints for it (``（2分）``) when every item has them
    and they add up, spread evenly otherwise. It is only a stand-in until an instructor
    writes one, so ``reviewed`` is False and the question is flagged once ("review this
    rubric") rather than every grade. Where the stem asks for a verdict, one quantity or a
    choice, the rubric also names the conclusion the reference draws (``conclusion_derive``).
    """
    reference = question.answer if isinstance(question.answer, str) else None
    return _derive(question.id, question.points, reference, question.language, question.stem)


def _derive(
    question_id: str, points: float | None, reference: str | None, language: str, stem: str = ""
) -> Rubric:
    """``derive_rubric`` on exactly what it reads of the question, so it can be cached."""
    points = points if points is not None else DEFAULT_SUBJECTIVE_POINTS
    conclusion = derive_conclusion(stem, reference, language)
    key_points = key_points_of(reference or "")
    groups = min(len(key_points), MAX_DERIVED_CRITERIA, max(1, int(points)))
    if groups == 0:
        return _rubric(question_id, points, [_whole_answer(points, language)], conclusion)
    if printed := _printed_points(key_points, points):
        shares, chunks = printed, [[_PRINTED_POINTS.sub("", k).strip()] for k in key_points]
    else:
        shares = split_points(points, groups)
        bounds = [round(i * len(key_points) / groups) for i in range(groups + 1)]
        chunks = [key_points[bounds[i] : bounds[i + 1]] for i in range(groups)]
    lead = (
        "答案覆盖参考答案的要点："
        if language == "zh"
        else "The answer covers the reference's point: "
    )
    criteria = [
        Criterion(
            id=f"C{i + 1}",
            description=lead + "；".join(chunk),
            points=share,
            key_points=chunk,
            levels=levels_for(share, language),
        )
        for i, (share, chunk) in enumerate(zip(shares, chunks, strict=True))
    ]
    return _rubric(question_id, points, criteria, conclusion)


def _whole_answer(points: float, language: str) -> Criterion:
    """The one criterion of a question with no reference to cut: is the answer right?"""
    return Criterion(
        id="C1",
        description="答案是否正确、完整地回答了题目"
        if language == "zh"
        else "Whether the answer answers the question correctly and completely",
        points=points,
        levels=levels_for(points, language),
    )


def _rubric(
    question_id: str, points: float, criteria: list[Criterion], conclusion: Conclusion | None
) -> Rubric:
    return Rubric(
        question_id=question_id,
        points=points,
        criteria=criteria,
        conclusion=conclusion,
        reviewed=False,
        notes="derived automatically from the reference answer; not reviewed by an instructor",
    )


_derived = lru_cache(maxsize=4096)(_derive)


def _printed_points(key_points: list[str], points: float) -> list[float] | None:
    """Each key point's own printed points, when every one has them and they add up."""
    found = [_PRINTED_POINTS.search(k) for k in key_points]
    if len(key_points) > MAX_DERIVED_CRITERIA or not all(found):
        return None
    shares = [float(m.group(1)) for m in found if m]
    return shares if abs(sum(shares) - points) < 1e-9 and all(shares) else None


def split_points(points: float, groups: int) -> list[float]:
    """Whole points spread as evenly as possible; a fractional remainder goes to the first."""
    whole = int(points)
    base, extra = divmod(whole, groups)
    shares = [float(base + (1 if i < extra else 0)) for i in range(groups)]
    shares[0] += points - whole
    return shares


def levels_for(points: float, language: str) -> list[Level]:
    zh = language == "zh"
    levels = [
        Level(
            points=points,
            descriptor="完整、准确地写出该要点" if zh else "states the point fully and correctly",
        )
    ]
    if points >= 2:
        levels.append(
            Level(
                points=float(int(points) // 2),
                descriptor="只写出部分，或有不准确之处" if zh else "partly stated or partly wrong",
            )
        )
    levels.append(Level(points=0, descriptor="没有写出，或写错" if zh else "missing or wrong"))
    return levels
