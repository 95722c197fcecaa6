import pytest
import yaml

from grader.engine.reading.rubrics import (
    derive_rubric,
    key_points_of,
    load_rubric,
    load_rubrics,
    save_rubric,
)
from grader.errors import RubricError
from grader.models import Bank, Question, QuestionType

Q = Question(id="q1", number="1", section="s", type=QuestionType.SHORT_ANSWER, stem="简述。",
             answer="1.梯度清零。2.多次反向传播累加梯度；3.到步数后更新参数。", points=5)  # fmt: skip
BANK = Bank(
    name="b",
    questions=[
        Q,
        Question(
            id="c1", number="2", section="s", type=QuestionType.TRUE_FALSE, stem="x", answer=True
        ),
    ],
)

GOOD = {
    "question_id": "q1",
    "points": 5,
    "criteria": [
        {"id": "C1", "description": "清零", "points": 2, "levels": [{"points": 2, "descriptor": "a"}, {"points": 0, "descriptor": "b"}]},
        {"id": "C2", "description": "更新", "points": 3},
    ],
    "anchors": [{"id": "a1", "answer": "…", "scores": {"C1": 2}}],
}  # fmt: skip


def write(tmp_path, data, name="q1"):
    path = tmp_path / "b" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def test_valid_rubric_loads_and_version_tracks_content(tmp_path):
    rubric = load_rubric(write(tmp_path, GOOD), BANK)
    changed = dict(
        GOOD, criteria=[dict(GOOD["criteria"][0], description="梯度清零"), GOOD["criteria"][1]]
    )
    assert load_rubric(write(tmp_path, changed), BANK).version != rubric.version
    assert load_rubric(write(tmp_path, GOOD), BANK).version == rubric.version


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"points": 6}, "add up to 5, not the rubric's 6"),
        (
            {
                "criteria": [
                    dict(GOOD["criteria"][0], points=1),
                    dict(GOOD["criteria"][1], points=4),
                ]
            },
            "level of 2 exceeds 1",
        ),
        (
            {"criteria": [GOOD["criteria"][0], dict(GOOD["criteria"][1], id="C1")]},
            "duplicate criterion ids: C1",
        ),
        ({"question_id": "nope"}, "not in the bank"),
        ({"anchors": [{"id": "a1", "answer": "x", "scores": {"C9": 1}}]}, "unknown criterion 'C9'"),
        ({"anchors": [{"id": "a1", "answer": "x", "scores": {"C1": 5}}]}, "out of range"),
        ({"criteria": [dict(GOOD["criteria"][0], id="criterion one")]}, "criteria.0.id"),
        ({"extra_field": 1}, "extra_field"),
        (
            {"penalties": [{"description": "x", "points": 1, "criterion": "C7"}]},
            "unknown criterion 'C7'",
        ),
    ],
)
def test_invalid_rubrics_are_reported_with_file_and_field(tmp_path, change, message):
    path = write(tmp_path, {**GOOD, **change})
    with pytest.raises(RubricError, match=r"q1\.yaml") as info:
        load_rubric(path, BANK)
    assert message in str(info.value)


def test_rubric_points_must_match_the_question(tmp_path):
    data = {
        **GOOD,
        "points": 4,
        "criteria": [GOOD["criteria"][0], dict(GOOD["criteria"][1], points=2)],
    }
    with pytest.raises(RubricError, match="rubric is worth 4 points, the question 5"):
        load_rubric(write(tmp_path, data), BANK)


def test_file_name_must_match_question_id(tmp_path):
    with pytest.raises(RubricError, match="does not match the file name"):
        load_rubric(write(tmp_path, GOOD, name="other"), BANK)


def test_objective_question_cannot_have_a_rubric(tmp_path):
    data = {**GOOD, "question_id": "c1"}
    with pytest.raises(RubricError, match="graded exactly"):
        load_rubric(write(tmp_path, data, name="c1"), BANK)


def test_save_and_load_round_trip(tmp_path):
    rubric = derive_rubric(Q)
    path = save_rubric(rubric, tmp_path / "b")
    assert load_rubrics(tmp_path / "b.yaml", BANK)["q1"] == rubric
    assert path.name == "q1.yaml"


def test_derived_rubric_splits_the_reference_into_key_points():
    assert key_points_of(Q.answer) == ["梯度清零", "多次反向传播累加梯度", "到步数后更新参数"]
    rubric = derive_rubric(Q)
    assert not rubric.reviewed and rubric.points == 5
    assert sum(c.points for c in rubric.criteria) == 5
    assert [c.key_points for c in rubric.criteria] == [
        ["梯度清零"],
        ["多次反向传播累加梯度"],
        ["到步数后更新参数"],
    ]


def test_derived_rubric_without_reference_is_holistic():
    q = Q.model_copy(update={"answer": None, "points": None})
    rubric = derive_rubric(q)
    assert rubric.points == 10 and len(rubric.criteria) == 1 and rubric.criteria[0].levels
