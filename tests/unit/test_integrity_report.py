"""The integrity report is written from the package's own template, answers escaped."""

from grader.bank.files import load_bank
from grader.config import SignalSettings
from grader.engine.signals.integrity import SuspectPair, write_report
from grader.models import Submission
from tests.conftest import RUBRICS


def test_the_report_renders_from_the_packaged_template_with_answers_escaped(tmp_path):
    bank = load_bank(RUBRICS / "grad_accum_engineer.yaml")
    answer = "梯度累积 <script>alert(1)</script>"
    pair = SuspectPair(
        "004-s5-q1",
        0.99,
        Submission(id="a", question_id="004-s5-q1", answer=answer, student="s1"),
        Submission(id="b", question_id="004-s5-q1", answer=answer, student="s2"),
    )
    out = tmp_path / "integrity.html"
    write_report([pair], out, bank=bank, source=tmp_path / "x.jsonl", signals=SignalSettings(),
                 answers=2)  # fmt: skip
    html = out.read_text(encoding="utf-8")
    assert "&lt;script&gt;" in html and "<script>alert" not in html
