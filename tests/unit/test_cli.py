"""The command line, end to end: import, show, grade, resume, and clear errors."""

import json

import pytest
from typer.testing import CliRunner

from grader.bank.files import load_bank
from grader.cli import app
from tests.conftest import ROOT, RUBRICS, objective_submissions

CORPUS = ROOT / "tests" / "data" / "papers"

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_help_explains_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("bank", "grade"):
        assert command in result.output


def test_bank_import_and_show(tmp_path, seeds_dir):
    out = tmp_path / "bank.yaml"
    result = invoke("bank", "import", seeds_dir / "004_06153bb6e740fef5.txt", "--out", out)
    assert result.exit_code == 0, result.output
    assert "46 questions" in result.output
    assert "cut off" in result.output  # warnings are listed
    shown = invoke("bank", "show", out, "--json")
    questions = json.loads(shown.output)
    assert len(questions) == 46
    first = questions[0]
    assert {
        "id",
        "number",
        "section",
        "type",
        "stem",
        "options",
        "answer",
        "points",
        "incomplete",
    } <= set(first)
    mc = next(q for q in questions if q["type"] == "multiple_choice")
    assert mc["answer"] == "AB" and mc["options"]["A"] == "減少內存消耗"
    table = invoke("bank", "show", out)
    assert table.exit_code == 0 and "004-s6-q2" in table.output


def test_bank_import_strict_fails_on_warnings_and_writes_nothing(tmp_path, seeds_dir):
    out = tmp_path / "bank.yaml"
    result = invoke(
        "bank", "import", seeds_dir / "004_06153bb6e740fef5.txt", "--out", out, "--strict"
    )
    assert result.exit_code == 1
    assert not out.exists()


def test_bank_import_check_prints_the_report_as_a_table_and_writes_nothing(tmp_path):
    paper = CORPUS / "cut-off.txt"
    result = invoke("bank", "import", paper, "--check")
    assert result.exit_code == 0, result.output
    assert "nothing written" in result.output and not list(tmp_path.iterdir())
    for text in ("where", "problem", "text around it", "cut-off.txt:8", "cut-off-s1-q2",
                 "no_key", "bad_key", "count_mismatch", "ignored_text", "cut_off"):  # fmt: skip
        assert text in result.output
    strict = invoke("bank", "import", paper, "--check", "--strict")
    assert strict.exit_code == 1 and "5 report entries and --strict" in strict.output


def test_bank_import_needs_out_or_check(tmp_path):
    result = invoke("bank", "import", CORPUS / "fill-alternatives.txt")
    assert result.exit_code == 2 and "--check" in result.output


def test_bank_import_of_a_clean_paper_passes_strict(tmp_path):
    out = tmp_path / "fill.yaml"
    result = invoke("bank", "import", CORPUS / "fill-alternatives.txt", "--out", out, "--strict")
    assert result.exit_code == 0, result.output
    assert "6 questions (6 fill_blank), 0 report entries" in result.output
    shown = invoke("bank", "show", out)
    assert shown.exit_code == 0
    # the accepted alternatives of each blank are listed
    assert "位置 | positional" in shown.output and "BN | 批归一化" in shown.output


def test_bank_import_unparseable_paper_names_the_file(tmp_path):
    paper = tmp_path / "notes.txt"
    paper.write_text("no questions here", encoding="utf-8")
    result = invoke("bank", "import", paper, "--out", tmp_path / "b.yaml")
    assert result.exit_code == 2
    assert "notes.txt:1" in result.output and "no section header" in result.output


def test_bank_import_several_papers_into_one_bank(tmp_path, seeds_dir):
    out = tmp_path / "all.yaml"
    papers = sorted(seeds_dir.glob("*.txt"))
    assert invoke("bank", "import", *papers, "--out", out).exit_code == 0
    bank = load_bank(out)
    assert len(bank.questions) == 51 + 51 + 46
    assert {q.id.split("-")[0] for q in bank.questions} == {"000", "001", "004"}


def test_load_bank_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nquestions:\n- id: q1\n  number: '1'\n  section: s\n  type: essay\n  stem: s\n"
    )
    result = invoke("bank", "show", bad)
    assert result.exit_code == 2
    assert "bad.yaml:3" in result.output and "questions.0.type" in result.output
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    assert "broken.yaml" in invoke("bank", "show", broken).output


# --- grading ---------------------------------------------------------------------------------

CORRECT_STYLES = {
    "single_choice": [lambda a: a.lower(), lambda a: f"（{a}）", lambda a: f"选{a}", lambda a: a],
    "multiple_choice": [lambda a: ", ".join(a.lower()), lambda a: "、".join(a), lambda a: a[::-1]],
    "true_false": [lambda a: "√" if a else "×", lambda a: "对" if a else "错", lambda a: "T" if a else "F",
                   lambda a: "正确" if a else "不正确"],
    "fill_blank": [lambda a: a, lambda a: f" {a.lower()} "],
}  # fmt: skip


def _wrong(q):
    if q.type == "true_false":
        return "×" if q.answer else "√"
    if q.type.endswith("choice"):
        others = [letter for letter in q.options if letter not in q.answer]
        return others[0] if others else q.answer[:-1]  # a subset scores 0 under 少选不得分
    return "完全不对的答案"


@pytest.mark.parametrize(
    "bank_name", ["ai_trainer_l2", "llm_trainer_solutions", "grad_accum_engineer"]
)
def test_grade_seed_bank_objective_answers_and_rerun(tmp_path, bank_name):
    bank_path = RUBRICS / f"{bank_name}.yaml"
    bank = load_bank(bank_path)
    lines, expected = [], {}
    for i, q in enumerate(bank.questions):
        points = q.points or 1.0
        if not q.type.objective:
            lines.append(
                {"id": f"e{i}", "question_id": q.id, "answer": "我的回答", "student": "s1"}
            )
            expected[f"e{i}"] = ("needs_judge", None)
            continue
        styles = CORRECT_STYLES[q.type.value]
        right = styles[i % len(styles)](q.answer)
        lines.append({"id": f"r{i}", "question_id": q.id, "answer": right, "student": "s1"})
        lines.append({"id": f"w{i}", "question_id": q.id, "answer": _wrong(q), "student": "s2"})
        expected[f"r{i}"] = ("graded", points)
        expected[f"w{i}"] = ("graded", 0.0)
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        "\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8"
    )
    out = tmp_path / "grades.jsonl"

    result = invoke("grade", subs, "--bank", bank_path, "--out", out, "--judge", "none")
    assert result.exit_code == 0, result.output
    grades = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert {g["submission_id"]: (g["status"], g["score"]) for g in grades} == expected
    assert "per question" in result.output and "per student" in result.output

    rerun = invoke("grade", subs, "--bank", bank_path, "--out", out, "--judge", "none")
    assert rerun.exit_code == 0
    assert f"{len(lines)} of {len(lines)} already graded" in rerun.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(lines)


def test_grade_resumes_after_a_torn_write(tmp_path):
    bank_path = RUBRICS / "grad_accum_engineer.yaml"
    subs = objective_submissions(tmp_path / "subs.jsonl")
    out = tmp_path / "grades.jsonl"
    assert invoke("grade", subs, "--bank", bank_path, "--out", out).exit_code == 0
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # killed while writing line 4
    assert invoke("grade", subs, "--bank", bank_path, "--out", out).exit_code == 0
    ids = [json.loads(x)["submission_id"] for x in out.read_text().splitlines()]
    assert sorted(ids) == ["s1", "s2", "s3", "s4", "s5"]


def test_grade_by_printed_number_when_unique(tmp_path):
    subs = tmp_path / "subs.jsonl"
    subs.write_text(json.dumps({"id": "x", "question": 31, "answer": "BCD"}) + "\n")
    out = tmp_path / "g.jsonl"
    assert (
        invoke("grade", subs, "--bank", RUBRICS / "ai_trainer_l2.yaml", "--out", out).exit_code == 0
    )
    grade = json.loads(out.read_text())
    assert grade["question_id"] == "000-s2-q31" and grade["score"] == 2.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "subs.jsonl:2: invalid JSON"),
        (
            '{"id": "b", "question_id": "nope", "answer": "A"}',
            "subs.jsonl:2: unknown question_id 'nope'",
        ),
        (
            '{"id": "b", "question": "1", "answer": "A"}',
            "subs.jsonl:2: question number '1' is ambiguous",
        ),
        ('{"id": "b", "question_id": "004-s2-q1"}', "subs.jsonl:2: answer: Field required"),
        (
            '{"id": "a", "question_id": "004-s2-q2", "answer": "B"}',
            "subs.jsonl:2: submission id 'a' already used on line 1",
        ),
    ],
)
def test_bad_submission_lines_are_reported_and_nothing_is_graded(tmp_path, line, message):
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        json.dumps({"id": "a", "question_id": "004-s2-q1", "answer": "C"}) + "\n" + line + "\n"
    )
    out = tmp_path / "g.jsonl"
    result = invoke("grade", subs, "--bank", RUBRICS / "grad_accum_engineer.yaml", "--out", out)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not out.exists() or not out.read_text()


def test_blank_answer_scores_zero_with_reason(tmp_path):
    subs = tmp_path / "subs.jsonl"
    subs.write_text(json.dumps({"id": "a", "question_id": "004-s2-q1", "answer": "  "}) + "\n")
    out = tmp_path / "g.jsonl"
    invoke("grade", subs, "--bank", RUBRICS / "grad_accum_engineer.yaml", "--out", out)
    grade = json.loads(out.read_text())
    assert grade["score"] == 0 and grade["review_reasons"][0]["code"] == "blank"


def test_grade_the_example_exam_with_the_scripted_judge(tmp_path):
    out = tmp_path / "g.jsonl"
    examples = RUBRICS.parent / "examples" / "grad_accum_engineer.submissions.jsonl"
    result = invoke(
        "grade",
        examples,
        "--bank",
        RUBRICS / "grad_accum_engineer.yaml",
        "--out",
        out,
        "--judge",
        "scripted",
    )
    assert result.exit_code == 0, result.output
    grades = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    essays = [g for g in grades if g["question_id"].startswith(("004-s5", "004-s6"))]
    assert len(essays) == 24
    for g in essays:
        assert g["status"] == "graded" and g["criteria"] and g["provenance"]["rubric_version"]
        assert g["provenance"].get("backend") in ("scripted", None)  # None: blank, scored by rule


def test_unreachable_judge_is_unscored_and_retried_on_rerun(tmp_path, monkeypatch):
    pytest.importorskip("openai")
    monkeypatch.setenv("GRADER_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GRADER_OPENAI_MODEL", "m")
    monkeypatch.setenv("GRADER_OPENAI_RETRIES", "0")
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        json.dumps({"id": "e", "question_id": "004-s5-q1", "answer": "梯度累加后再更新。"}) + "\n"
    )
    out = tmp_path / "g.jsonl"
    for _ in range(2):
        result = invoke(
            "grade",
            subs,
            "--bank",
            RUBRICS / "grad_accum_engineer.yaml",
            "--out",
            out,
            "--judge",
            "openai",
        )
        # Not a success: exit 3, and the cause on screen.
        assert result.exit_code == 3, result.output
        assert "1 of 1 answers left unscored" in result.output
        assert "Connection error" in result.output
        assert "already graded" not in result.output  # tried again
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["status"] for r in records] == ["unscored"]  # one record per answer
    assert records[0]["review_reasons"][0]["code"] == "judge_unavailable"
