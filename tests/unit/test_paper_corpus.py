"""The format corpus: every paper in tests/data/papers imports exactly as its expected bank.

Each ``NAME.txt`` was written in one common layout of Chinese exam papers and ``NAME.expected.yaml``
beside it was typed from the paper by hand: counts per type, every key, blank alternatives,
points, incomplete flags, and the exact set of import-report entries.
"""

from collections import Counter
from pathlib import Path

import pytest
import yaml

from grader.bank.files import import_papers
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "data" / "papers"
PAPERS = sorted(CORPUS.glob("*.txt"))


def expected_of(paper: Path) -> dict:
    return yaml.safe_load(paper.with_suffix(".expected.yaml").read_text(encoding="utf-8"))


def test_the_corpus_is_there():
    assert len(PAPERS) >= 15
    assert all(p.with_suffix(".expected.yaml").is_file() for p in PAPERS)


def check_question(q, want: dict, slug: str) -> None:
    """Compare one imported question with its expected entry; absent keys are not checked."""
    assert q.id == f"{slug}-{want['id']}"
    assert q.number == str(want.get("number", want["id"].rsplit("-q", 1)[1]))
    assert q.type == want["type"]
    assert q.points == want["points"]
    assert q.incomplete == want.get("incomplete", False)
    assert q.stem.startswith(want["stem_starts"]), q.stem
    for part in want.get("stem_has", []):
        assert part in q.stem
    if "options" in want:
        assert len(q.options) == want["options"], q.options
    if "answer" in want:
        assert q.answer == want["answer"]
    if "blanks" in want:
        assert q.blanks == want["blanks"]
    if "answer_starts" in want:
        assert q.answer.startswith(want["answer_starts"]), q.answer
    if "answer_ends" in want:
        assert q.answer.endswith(want["answer_ends"]), q.answer
    if "explanation_starts" in want:
        assert (q.explanation or "").startswith(want["explanation_starts"]), q.explanation
    if "line" in want:
        assert q.source.line == want["line"]


@pytest.mark.parametrize("paper", PAPERS, ids=lambda p: p.stem)
def test_paper_imports_as_its_expected_bank(paper):
    expected = expected_of(paper)
    bank, report = import_papers([paper], paper.stem)
    slug = paper.stem
    assert Counter(q.type.value for q in bank.questions) == expected["counts"]
    assert len(bank.questions) == len(expected["questions"])
    for q, want in zip(bank.questions, expected["questions"], strict=True):
        check_question(q, want, slug)
    if "total_points" in expected:
        assert sum(q.points for q in bank.questions) == expected["total_points"]
    got = {(e.problem.value, e.question or e.line) for e in report}
    want = {
        (w["problem"], f"{slug}-{w['question']}" if "question" in w else w["line"])
        for w in expected["report"]
    }
    assert got == want, [str(e) for e in report]
    for entry in report:  # every entry says where and shows the text there
        assert entry.file == paper.name and entry.line >= 1 and entry.context
