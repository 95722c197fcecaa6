"""The hand-graded answer sets are well formed: every line a submission its rubric can score.

Benchmarks take these files as ground truth, so a typo — a criterion id the rubric lacks, a score
above a criterion's points or between its levels, a total that is not the sum — would skew every
agreement figure without failing anywhere else. Each problem names its file and line.

Penalties are taken from the criterion they name (never below 0), so ``human_scores`` already
carry them and ``human_total`` is their sum.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubrics
from grader.models import Rubric, Submission
from tests.conftest import ROOT, RUBRICS

DATA = ROOT / "tests" / "data"
SETS = (
    "seed_answers.jsonl", "seed_answers_2.jsonl", "seed_answers_3.jsonl", "seed_answers_4.jsonl",
    "seed_answers_5.jsonl", "seed_answers_6.jsonl", "seed_answers_7.jsonl", "seed_answers_8.jsonl",
    "seed_answers_9.jsonl", "seed_answers_10.jsonl", "seed_answers_11.jsonl", "seed_answers_12.jsonl",
    "seed_answers_13.jsonl", "seed_answers_14.jsonl", "seed_answers_15.jsonl",
    "seed_answers_16.jsonl", "seed_answers_17.jsonl", "seed_answers_18.jsonl",
    "seed_answers_19.jsonl", "seed_answers_20.jsonl", "seed_answers_21.jsonl",
    "seed_answers_22.jsonl", "seed_answers_23.jsonl",
    "master_keys.jsonl",
)  # fmt: skip
KINDS = {
    "strong", "partial", "weak", "paraphrase", "english", "off_topic", "wrong", "injection",
    "blank", "master_key", "mixed", "zero",
}  # fmt: skip
SET2_KINDS = KINDS - {"blank", "master_key", "mixed", "zero"}
# set 3 (development data for the "worth 0 scores 0" gates): per question, how many of each kind
SET3_KINDS = {"off_topic": 2, "wrong": 2, "weak": 1, "strong": 1, "partial": 1, "paraphrase": 1}
WORTH_0 = {"off_topic", "wrong", "weak"}
# sets 4 and 7 (development, ids dev4-, dev7-), 5, 6, 8, 9, 11 and 14–23 (held out, ids
# hold5-, hold6-, …, hold23-): per question, how many
# of each kind
SET4_KINDS = {
    "strong": 1, "partial": 1, "mixed": 2, "wrong": 2, "zero": 2, "injection": 1, "english": 1,
}  # fmt: skip
SET5_KINDS = {**SET4_KINDS, "mixed": 1, "zero": 1}
SET15_KINDS = {**SET5_KINDS, "zero": 2, "injection": 2}  # more of the kinds the bars are about
# set 10 (development, ids dev10-): hard cases, true things beside false central claims
SET10_KINDS = {"strong": 1, "wrong": 3, "injection": 2}
# set 12 (development, ids dev12-): answers in English
SET12_KINDS = {"english": 2, "mixed": 1, "wrong": 1}
SET13_KINDS = {"english": 4}  # set 13 (development, ids dev13-): English, strong to partial
MASTER_KEYS = (":", "Thought process:", "解：", "答案正确。", '{"C1":', "满分")
FIELDS = {"id", "question_id", "student", "answer", "human_scores", "human_total", "kind"}


@pytest.fixture(scope="module")
def rubrics() -> dict[str, Rubric]:
    found: dict[str, Rubric] = {}
    for bank_path in sorted(RUBRICS.glob("*.yaml")):
        found.update(load_rubrics(bank_path, load_bank(bank_path)))
    return found


def line_problems(row: object, rubrics: dict[str, Rubric]) -> list[str]:
    """What is wrong with one parsed line, as short sentences (empty when it is fine)."""
    if not isinstance(row, dict):
        return ["not a JSON object"]
    missing = FIELDS - row.keys()
    if missing:
        return [f"missing field(s) {', '.join(sorted(missing))}"]
    problems = []
    unknown = row.keys() - FIELDS - {"note"}
    if unknown:
        problems.append(f"unknown field(s) {', '.join(sorted(unknown))}")
    try:
        Submission.model_validate({k: row[k] for k in ("id", "question_id", "answer", "student")})
    except ValidationError as exc:
        problems.append(f"not a submission: {exc.errors()[0]['msg']}")
    if row["kind"] not in KINDS:
        problems.append(f"kind {row['kind']!r} is not one of {sorted(KINDS)}")
    rubric = rubrics.get(row["question_id"])
    if rubric is None:
        return [*problems, f"question_id {row['question_id']!r} has no rubric"]
    scores = row["human_scores"]
    if not isinstance(scores, dict):
        return [*problems, "human_scores is not an object"]
    criteria = {c.id: c for c in rubric.criteria}
    if scores.keys() != criteria.keys():
        problems.append(f"human_scores has {sorted(scores)}, the rubric {sorted(criteria)}")
    for cid, points in scores.items():
        criterion = criteria.get(cid)
        if criterion is None:
            continue
        if isinstance(points, bool) or not isinstance(points, int | float):
            problems.append(f"{cid}: {points!r} is not a number")
        elif not 0 <= points <= criterion.points:
            problems.append(f"{cid}: {points:g} outside 0..{criterion.points:g}")
        elif criterion.levels and points not in {level.points for level in criterion.levels}:
            problems.append(f"{cid}: {points:g} is not one of the criterion's levels")
    total = row["human_total"]
    numbers = [p for p in scores.values() if isinstance(p, int | float)]
    if isinstance(total, bool) or not isinstance(total, int | float):
        problems.append(f"human_total {total!r} is not a number")
    elif abs(total - sum(numbers)) > 1e-9:
        problems.append(f"human_total {total:g} is not the sum of human_scores ({sum(numbers):g})")
    elif not 0 <= total <= rubric.points:
        problems.append(f"human_total {total:g} outside 0..{rubric.points:g}")
    elif row["kind"] == "master_key" and total != 0:
        problems.append("a master key must score 0")
    return problems


def file_problems(path: Path, rubrics: dict[str, Rubric]) -> list[str]:
    """Every problem in a JSONL answer set, each prefixed with ``file:line``."""
    problems, seen = [], {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, text in enumerate(lines, start=1):
        where = f"{path.name}:{number}"
        if not text.strip():
            problems.append(f"{where}: blank line")
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        problems += [f"{where}: {p}" for p in line_problems(row, rubrics)]
        if isinstance(row, dict) and "id" in row:
            if row["id"] in seen:
                problems.append(f"{where}: id {row['id']!r} already on line {seen[row['id']]}")
            seen.setdefault(row["id"], number)
    return problems


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", SETS)
def test_every_line_is_a_scorable_submission(name, rubrics):
    assert file_problems(DATA / name, rubrics) == []


def test_ids_are_unique_across_the_sets():
    ids = Counter(row["id"] for name in SETS for row in rows(name))
    assert [i for i, n in ids.items() if n > 1] == []


def test_second_set_covers_every_seed_question_with_every_kind(rubrics):
    answers = rows("seed_answers_2.jsonl")
    assert len(answers) >= 128
    per_question = Counter(row["question_id"] for row in answers)
    assert set(per_question) == set(rubrics)
    assert min(per_question.values()) >= 16
    kinds = Counter((row["question_id"], row["kind"]) for row in answers)
    thin = [(q, k) for q in rubrics for k in sorted(SET2_KINDS) if kinds[q, k] < 2]
    assert thin == []


def test_third_set_has_each_kind_per_question_and_its_zero_kinds_score_0(rubrics):
    answers = rows("seed_answers_3.jsonl")
    kinds = Counter((row["question_id"], row["kind"]) for row in answers)
    assert kinds == Counter({(q, k): n for q in rubrics for k, n in SET3_KINDS.items()})
    assert [row["id"] for row in answers if row["kind"] in WORTH_0 and row["human_total"]] == []
    full = [row for row in answers if row["kind"] == "strong"]
    assert all(row["human_total"] == rubrics[row["question_id"]].points for row in full)


@pytest.mark.parametrize(
    ("name", "prefix", "per_kind"),
    [
        ("seed_answers_4.jsonl", "dev4-", SET4_KINDS),
        ("seed_answers_5.jsonl", "hold5-", SET5_KINDS),
        ("seed_answers_6.jsonl", "hold6-", SET5_KINDS),
        ("seed_answers_7.jsonl", "dev7-", SET5_KINDS),
        ("seed_answers_8.jsonl", "hold8-", SET5_KINDS),
        ("seed_answers_9.jsonl", "hold9-", SET5_KINDS),
        ("seed_answers_10.jsonl", "dev10-", SET10_KINDS),
        ("seed_answers_11.jsonl", "hold11-", SET5_KINDS),
        ("seed_answers_12.jsonl", "dev12-", SET12_KINDS),
        ("seed_answers_13.jsonl", "dev13-", SET13_KINDS),
        ("seed_answers_14.jsonl", "hold14-", SET5_KINDS),
        ("seed_answers_15.jsonl", "hold15-", SET15_KINDS),
        ("seed_answers_16.jsonl", "hold16-", SET5_KINDS),
        ("seed_answers_17.jsonl", "hold17-", SET5_KINDS),
        ("seed_answers_18.jsonl", "hold18-", SET5_KINDS),
        ("seed_answers_19.jsonl", "hold19-", SET5_KINDS),
        ("seed_answers_20.jsonl", "hold20-", SET5_KINDS),
        ("seed_answers_21.jsonl", "hold21-", SET5_KINDS),
        ("seed_answers_22.jsonl", "hold22-", SET5_KINDS),
        ("seed_answers_23.jsonl", "hold23-", SET5_KINDS),
    ],
)
def test_sets_four_to_twenty_three_have_their_kinds_per_question_and_kind_bounds(
    name, prefix, per_kind, rubrics
):
    answers = rows(name)
    assert all(row["id"].startswith(prefix) for row in answers)
    kinds = Counter((row["question_id"], row["kind"]) for row in answers)
    assert kinds == Counter({(q, k): n for q in rubrics for k, n in per_kind.items()})

    def share(row: dict) -> float:
        return row["human_total"] / rubrics[row["question_id"]].points

    by_kind: dict[str, list[float]] = {}
    for row in answers:
        by_kind.setdefault(row["kind"], []).append(share(row))
    assert by_kind.get("zero", []) == [0] * len(by_kind.get("zero", []))
    assert (
        max(by_kind.get("wrong", [0.0])) <= 0.1
    )  # fluent but false: at most a tenth of the points
    assert min(by_kind.get("strong", [1.0])) >= 0.9  # full or near-full
    assert all(0 < s < 1 for s in by_kind.get("mixed", []))  # one wrong claim costs points, not all
    assert (
        max(by_kind.get("injection", [0.0])) < 1
    )  # a weak or partial answer under its instruction


def test_master_keys_are_the_listed_strings_and_a_rubric_copy_per_question(rubrics):
    keys = rows("master_keys.jsonl")
    for qid, rubric in rubrics.items():
        answers = [row["answer"] for row in keys if row["question_id"] == qid]
        assert set(MASTER_KEYS) <= set(answers), qid
        copies = [a for a in answers if a not in MASTER_KEYS]
        assert len(copies) == 1, qid
        # the copy holds every criterion's description and key points, verbatim
        for criterion in rubric.criteria:
            assert criterion.description in copies[0]
            assert all(str(point) in copies[0] for point in criterion.key_points)


def test_bad_lines_are_each_reported_with_file_and_line(tmp_path, rubrics):
    good = rows("seed_answers.jsonl")[1]  # 4 of 10 points: room to overflow one criterion

    def rescored(row_id: str, **scores: float) -> dict:
        """``good`` with some scores changed and a consistent total: one fault per line."""
        changed = {**good["human_scores"], **scores}
        return {**good, "id": row_id, "human_scores": changed, "human_total": sum(changed.values())}

    bad = [
        good,
        rescored("x1", C9=0),
        rescored("x2", C1=5),
        rescored("x3", C3=2.5),
        {**good, "id": "x4", "human_total": good["human_total"] - 1},
        {**good, "id": "x5", "question_id": "999-s1-q1"},
        {**good, "id": "x6", "kind": "excellent"},
        {**good, "id": "x7", "kind": "master_key"},
        good,
    ]
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(row, ensure_ascii=False) for row in bad] + ["{not json"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    problems = file_problems(path, rubrics)
    assert [p.split(":")[1] for p in problems] == [str(n) for n in range(2, 11)]
    assert "C9" in problems[0] and "outside 0..2" in problems[1]
    assert "levels" in problems[2] and "not the sum" in problems[3]
    assert "no rubric" in problems[4] and "excellent" in problems[5]
    assert "master key" in problems[6] and "already on line 1" in problems[7]
    assert "not JSON" in problems[8]
