"""Question ids from a hand-edited bank name rubric files: one that is a path is refused when
the bank is loaded, with the file, the line and the field."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from grader.bank.files import load_bank
from grader.cli import app
from grader.errors import BankError
from tests.conftest import RUBRICS

BANK = RUBRICS / "grad_accum_engineer.yaml"


def _bank_with_id(tmp_path, qid: str, index: int = 2):
    data = yaml.safe_load(BANK.read_text(encoding="utf-8"))
    data["questions"][index]["id"] = qid
    path = tmp_path / "bank.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("qid", ["../../x", "a/b", "..", ".hidden", "a\\b", "-x", "q" * 81, ""])
def test_an_id_that_could_be_a_path_is_refused_with_file_line_and_field(tmp_path, qid):
    path = _bank_with_id(tmp_path, qid)
    with pytest.raises(BankError) as caught:
        load_bank(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:"), message
    assert "questions.2.id" in message
    assert caught.value.line is not None


@pytest.mark.parametrize("qid", ["004-s1-q3", "q1.2", "梯度_1", "A"])
def test_ordinary_ids_load(tmp_path, qid):
    assert load_bank(_bank_with_id(tmp_path, qid)).questions[2].id == qid


def test_grader_grade_refuses_the_bank_before_anything_is_written(tmp_path):
    bank = _bank_with_id(tmp_path, "../../escaped", index=0)
    subs = tmp_path / "subs.jsonl"
    subs.write_text('{"id": "s1", "question_id": "004-s2-q1", "answer": "C"}\n')
    out = tmp_path / "grades.jsonl"
    args = ["grade", str(subs), "--bank", str(bank), "--out", str(out), "--judge", "none"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "questions.0.id: '../../escaped' cannot be a question id" in result.output.replace(
        "\n", ""
    )
    assert not out.exists()


def test_question_is_the_bank_question_with_that_id_and_refuses_an_unknown_one():
    bank = load_bank(BANK)
    second = bank.questions[1]
    assert bank.question(second.id) is second
    assert bank.get("no-such-question") is None
    with pytest.raises(KeyError):
        bank.question("no-such-question")
