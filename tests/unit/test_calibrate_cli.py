"""`grader calibrate` end to end: JSON figures, the HTML report, anchors, before/after, mapping,
and the human–human agreement of the Mohler data set (one grader as the instructor, the other
as the "judge": the command must give the published figures)."""

import csv
import json
import os
import statistics
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader.bank.files import save_bank
from grader.calibrate import agreement
from grader.cli import app
from grader.engine.reading.rubrics import load_rubrics, save_rubric
from grader.files.grades import GradeWriter, read_grades
from grader.models import (
    Bank,
    Criterion,
    CriterionScore,
    Grade,
    GradeStatus,
    Method,
    Question,
    Rubric,
)
from tests.conftest import ROOT

# the public data sets' folder, as the benchmarks read it (benchmarks/README.md, "Data")
DATA = Path(os.environ.get("GRADER_DATA_DIR") or ROOT.parent / "shared" / "data")
MOHLER = DATA / "mohler" / "mohler_2011.csv"
MOHLER_EXCERPT = ROOT / "tests" / "data" / "mohler_excerpt.csv"  # 24 rows, in the repository
runner = CliRunner()

# (submission, human C1, human C2, judge C1, judge C2, answer)
ANSWERS = [
    ("s1", 3, 2, 3, 2, "Accumulate gradients over 4 micro-batches, then step."),
    ("s2", 2, 1, 3, 2, "Sum the gradients and update later."),
    ("s3", 1, 0, 3, 1, "<script>alert('x')</script> bigger batches"),
    ("s4", 0, 0, 0, 0, "I don't know."),
    ("s5", 3, 1, 2, 1, "Several forward/backward passes, one optimizer step."),
    ("s6", 2, 2, 1, 1, "It saves memory: batch 8 x 4 steps behaves like batch 32."),
]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def exam(tmp_path):
    """A one-question bank with a two-criterion rubric, human scores, grades and answers."""
    bank_path = tmp_path / "exam.yaml"
    save_bank(
        Bank(
            name="exam",
            questions=[
                Question(
                    id="q1",
                    number="1",
                    section="简答题",
                    type="short_answer",
                    stem="What is gradient accumulation?",
                    answer="Sum gradients, then step.",
                    points=5,
                    language="en",
                )
            ],
        ),
        bank_path,
    )
    rubric = Rubric(
        question_id="q1",
        points=5,
        criteria=[
            Criterion(id="C1", description="explains accumulation", points=3),
            Criterion(id="C2", description="gives the effective batch", points=2),
        ],
    )
    save_rubric(rubric, tmp_path / "exam")
    human = tmp_path / "human.csv"
    with human.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission_id", "question_id", "score", "C1", "C2"])
        for sid, h1, h2, *_ in ANSWERS:
            writer.writerow([sid, "q1", h1 + h2, h1, h2])
    grades = tmp_path / "grades.jsonl"
    with GradeWriter(grades) as writer:
        writer.write(judge_grades(rubric, shift=0))
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        "".join(
            json.dumps({"id": a[0], "question_id": "q1", "answer": a[5]}) + "\n" for a in ANSWERS
        ),
        encoding="utf-8",
    )
    return {"bank": bank_path, "human": human, "grades": grades, "subs": subs, "dir": tmp_path}


def judge_grades(rubric, shift):
    grades = []
    for sid, _, _, j1, j2, _ in ANSWERS:
        c1, c2 = max(0, j1 - shift), j2
        grades.append(
            Grade(
                submission_id=sid,
                question_id="q1",
                status=GradeStatus.GRADED,
                score=c1 + c2,
                max_score=5,
                method=Method.JUDGE,
                criteria=[
                    CriterionScore(id="C1", points=c1, max_points=3, evidence=f"{sid} quote"),
                    CriterionScore(id="C2", points=c2, max_points=2),
                ],
                provenance={"rubric_version": rubric.version},
            )
        )
    return grades


def test_help_explains_the_run_and_the_subcommands():
    result = invoke("calibrate", "--help")
    assert result.exit_code == 0
    for word in ("--human", "--grades", "--report", "--json", "promote", "apply"):
        assert word in result.output
    assert invoke("calibrate").exit_code == 0  # no arguments: the help


def test_json_figures_per_question_and_criterion(exam):
    result = invoke(
        "calibrate", "--human", exam["human"], "--grades", exam["grades"],
        "--submissions", exam["subs"], "--json", "--bootstrap", "200", "--top", "3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    human = [a[1] + a[2] for a in ANSWERS]
    judge = [a[3] + a[4] for a in ANSWERS]
    expected = agreement(human, judge, 5, bootstrap=200, seed=0)
    assert data["overall"] == expected.model_dump(mode="json")
    assert data["overall"]["exact"]["value"] == pytest.approx(2 / 6)
    assert [q["question_id"] for q in data["questions"]] == ["q1"]
    assert [(c["criterion_id"], c["n"]) for c in data["criteria"]] == [("C1", 6), ("C2", 6)]
    top = data["disagreements"][0]
    assert (top["submission_id"], top["human"], top["judge"]) == ("s3", 1, 4)
    assert top["answer"].startswith("<script>")
    assert top["criteria"][0]["evidence"] == "s3 quote"
    assert len(data["disagreements"]) == 3


def test_report_writes_html_and_plots(exam):
    out = exam["dir"] / "report"
    result = invoke(
        "calibrate", "--human", exam["human"], "--grades", exam["grades"],
        "--submissions", exam["subs"], "--report", out, "--mapping", "--bootstrap", "100",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    html = (out / "index.html").read_text(encoding="utf-8")
    for png in ("heatmap_overall.png", "distributions.png", "heatmaps_questions_1.png",
                "agreement_questions.png", "agreement_criteria.png"):  # fmt: skip
        assert (out / png).stat().st_size > 1000
        assert f'src="{png}"' in html
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html  # answers are escaped
    assert "http" not in html  # self-contained
    assert "Score mapping" in html and "Largest disagreements" in html
    assert "overall" in result.output  # the tables still print


def test_errors_are_clear(exam):
    bad = exam["dir"] / "bad.csv"
    bad.write_text("submission_id,question_id,score\ns1,q1,9\n", encoding="utf-8")
    result = invoke("calibrate", "--human", bad, "--grades", exam["grades"])
    assert result.exit_code == 2
    assert "bad.csv:2: column score: 9 exceeds the 5 points" in result.output
    other = exam["dir"] / "other.csv"
    other.write_text("submission_id,question_id,score\nzz,q1,3\n", encoding="utf-8")
    result = invoke("calibrate", "--human", other, "--grades", exam["grades"])
    assert result.exit_code == 2 and "no answer is scored in both" in result.output
    result = invoke("calibrate", "--human", exam["human"], "--grades", exam["dir"] / "none.jsonl")
    assert result.exit_code == 2 and "none.jsonl: no such grades file" in result.output
    assert invoke("calibrate", "--human", exam["human"]).exit_code == 2


def test_promote_then_compare_before_and_after(exam):
    old_version = load_rubrics(exam["bank"], _bank(exam))["q1"].version
    result = invoke(
        "calibrate", "promote", "s1", "s4", "--bank", exam["bank"], "--human", exam["human"],
        "--submissions", exam["subs"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rubric = load_rubrics(exam["bank"], _bank(exam))["q1"]
    assert rubric.version != old_version and old_version in result.output
    assert [(a.id, a.scores) for a in rubric.anchors] == [
        ("s1", {"C1": 3, "C2": 2}),
        ("s4", {"C1": 0, "C2": 0}),
    ]
    again = invoke("calibrate", "promote", "s1", "--bank", exam["bank"], "--human", exam["human"],
                   "--submissions", exam["subs"])  # fmt: skip
    assert again.exit_code == 2 and "already an anchor" in again.output

    new = exam["dir"] / "new.jsonl"  # re-graded after the promotion: C1 one point harsher
    with GradeWriter(new) as writer:
        writer.write(judge_grades(rubric, shift=1))
    result = invoke(
        "calibrate", "--human", exam["human"], "--grades", new, "--compare", exam["grades"],
        "--bank", exam["bank"], "--json", "--bootstrap", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["excluded_anchors"] == ["s1", "s4"]  # the judge has seen these scores
    comparison = data["comparison"]
    assert comparison["common"] == 4
    before, after = comparison["before"]["overall"], comparison["after"]["overall"]
    assert before["mean_difference"]["value"] == pytest.approx((2 + 3 - 1 - 2) / 4)
    assert after["mean_difference"]["value"] == pytest.approx((1 + 2 - 2 - 3) / 4)
    table = invoke("calibrate", "--human", exam["human"], "--grades", new, "--compare",
                   exam["grades"], "--bank", exam["bank"], "--bootstrap", "0")  # fmt: skip
    assert "before and after" in table.output and "change" in table.output


def test_promote_refuses_totals_without_criteria(exam):
    totals = exam["dir"] / "totals.csv"
    totals.write_text("submission_id,question_id,score,answer\ns9,q1,4,some answer\n")
    result = invoke("calibrate", "promote", "s9", "--bank", exam["bank"], "--human", totals)
    assert result.exit_code == 2
    assert "totals.csv:2" in result.output and "add columns C1, C2" in result.output
    assert load_rubrics(exam["bank"], _bank(exam))["q1"].anchors == []  # nothing written


def test_save_mapping_and_apply(exam):
    # A judge one point too lenient (capped at 5): a mapping can learn that.
    lenient = exam["dir"] / "lenient.jsonl"
    with GradeWriter(lenient) as writer:
        writer.write(
            Grade(
                submission_id=sid,
                question_id="q1",
                status=GradeStatus.GRADED,
                score=min(5, h1 + h2 + 1),
                max_score=5,
                method=Method.JUDGE,
            )
            for sid, h1, h2, *_ in ANSWERS
        )
    mapping = exam["dir"] / "mapping.json"
    result = invoke("calibrate", "--human", exam["human"], "--grades", lenient,
                    "--save-mapping", mapping, "--bootstrap", "0", "--folds", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "3-fold" in result.output and "mappings for 1 question(s)" in result.output
    out = exam["dir"] / "mapped.jsonl"
    result = invoke("calibrate", "apply", lenient, "--mapping", mapping, "--out", out)
    assert result.exit_code == 0, result.output
    mapped = read_grades(out)
    assert [g.details.raw_score for g in mapped] == [g.score for g in read_grades(lenient)]
    assert [g.score for g in mapped] == [4, 3, 1, 0, 4, 4]  # 5 <- {5, 4, 4}: 4.33, whole points
    assert all(g.provenance.score_mapping.method == "isotonic" for g in mapped)
    result = invoke(
        "calibrate", "apply", out, "--mapping", mapping, "--out", exam["dir"] / "x.jsonl"
    )
    assert result.exit_code == 2 and "already mapped" in result.output


def test_a_mapping_that_does_not_help_is_not_saved(exam):
    mapping = exam["dir"] / "mapping.json"
    result = invoke("calibrate", "--human", exam["human"], "--grades", exam["grades"],
                    "--save-mapping", mapping, "--bootstrap", "0", "--folds", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "mappings for 0 question(s)" in result.output
    out = exam["dir"] / "same.jsonl"
    assert (
        invoke("calibrate", "apply", exam["grades"], "--mapping", mapping, "--out", out).exit_code
        == 0
    )
    assert read_grades(out) == read_grades(exam["grades"])


def _bank(exam):
    from grader.bank.files import load_bank

    return load_bank(exam["bank"])


def write_exam(source: Path, folder: Path) -> int:
    """Mohler as a calibration exam in ``folder``: ``human.csv`` (``score_me``),
    ``grades.jsonl`` (``score_other`` as grades out of 5) and ``submissions.jsonl`` (the 9
    answers a spreadsheet corrupted to ``#NAME?`` kept), ids ``<question>-<row in it>``;
    returns the number of answers."""
    folder.mkdir(parents=True, exist_ok=True)
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    seen: Counter[str] = Counter()
    with (
        (folder / "human.csv").open("w", encoding="utf-8", newline="") as human_file,
        (folder / "grades.jsonl").open("w", encoding="utf-8") as grades_file,
        (folder / "submissions.jsonl").open("w", encoding="utf-8") as submissions_file,
    ):
        human = csv.writer(human_file)
        human.writerow(["submission_id", "question_id", "score"])
        for row in rows:
            question = row["id"]
            seen[question] += 1
            submission = f"{question}-{seen[question]}"
            human.writerow([submission, question, row["score_me"]])
            grade = Grade(
                submission_id=submission,
                question_id=question,
                status=GradeStatus.GRADED,
                score=float(row["score_other"]),
                max_score=5.0,
                method=Method.NONE,
                provenance={"source": "mohler_2011 score_other (the second human grader)"},
            )
            grades_file.write(json.dumps(grade.model_dump(mode="json")) + "\n")
            submissions_file.write(
                json.dumps(
                    {"id": submission, "question_id": question, "answer": row["student_answer"]},
                    ensure_ascii=False,
                )
                + "\n"
            )
    return len(rows)


def test_mohler_human_human_agreement(tmp_path):
    """One Mohler grader as the instructor, the other as the judge: the published figures."""
    if not MOHLER.is_file():
        pytest.skip(f"Mohler data not found at {MOHLER}")
    assert write_exam(MOHLER, tmp_path) == 2273
    report = tmp_path / "report"
    result = invoke(
        "calibrate", "--human", tmp_path / "human.csv", "--grades", tmp_path / "grades.jsonl",
        "--submissions", tmp_path / "submissions.jsonl", "--json", "--report", report,
        "--bootstrap", "200",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    overall = data["overall"]
    assert overall["n"] == 2273
    assert round(overall["pearson"]["value"], 3) == 0.597
    assert round(overall["exact"]["value"], 3) == 0.556
    assert round(overall["mae"]["value"], 2) == 0.75
    assert round(overall["qwk"]["value"], 2) == 0.49
    assert len(data["questions"]) == 81
    assert (report / "index.html").is_file() and (report / "heatmaps_questions_5.png").is_file()


def test_mohler_excerpt_agreement_matches_a_direct_computation(tmp_path):
    """The excerpt shipped with the tests: the command's figures equal ones computed here."""
    with MOHLER_EXCERPT.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    me = [float(r["score_me"]) for r in rows]
    other = [float(r["score_other"]) for r in rows]
    assert write_exam(MOHLER_EXCERPT, tmp_path) == len(rows) == 24
    result = invoke(
        "calibrate", "--human", tmp_path / "human.csv", "--grades", tmp_path / "grades.jsonl",
        "--submissions", tmp_path / "submissions.jsonl", "--json", "--bootstrap", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    overall = data["overall"]
    assert overall["n"] == 24
    assert overall["pearson"]["value"] == pytest.approx(statistics.correlation(me, other))
    assert overall["exact"]["value"] == pytest.approx(
        sum(a == b for a, b in zip(me, other, strict=True)) / 24
    )
    assert overall["mae"]["value"] == pytest.approx(
        statistics.fmean(abs(a - b) for a, b in zip(me, other, strict=True))
    )
    assert sorted(q["question_id"] for q in data["questions"]) == ["1.1", "12.1", "4.3"]
