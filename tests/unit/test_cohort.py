"""Groups, near-duplicates, anchors and blank rules on hand-made vectors: no model needed."""

import numpy as np
import pytest

from grader.engine.reading.blanks import blank_reason
from grader.engine.signals.anchors import choose_anchors
from grader.engine.signals.cohort import centroid, group_answers, near_duplicates
from grader.models import Anchor
from grader.text import content_chars, sentences_of


def unit(*rows):
    v = np.asarray(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# Two tight bundles around the x and y axes, and a loner on z.
VECTORS = unit([1, 0.05, 0], [0, 1, 0.02], [1, 0, 0.04], [0.03, 1, 0], [1, 0.02, 0.01], [0, 0, 1])


def test_groups_follow_similarity_and_are_numbered_by_size():
    groups = group_answers(VECTORS, min_cosine=0.9)
    assert [(g.id, g.members) for g in groups] == [("g1", [0, 2, 4]), ("g2", [1, 3]), ("g3", [5])]
    assert groups[0].representative in (0, 2, 4) and groups[0].size == 3
    assert groups[2].cohesion == pytest.approx(1.0)
    # the same answers in another order get the same partition (ids follow sizes, then order)
    shuffled = group_answers(VECTORS[[5, 3, 1, 4, 2, 0]], min_cosine=0.9)
    assert sorted(len(g.members) for g in shuffled) == [1, 2, 3]


def test_a_loose_threshold_merges_and_a_strict_one_splits():
    assert len(group_answers(VECTORS, min_cosine=0.0)) == 1
    assert len(group_answers(VECTORS, min_cosine=0.99999)) == 6


def test_groups_of_none_and_one():
    assert group_answers(np.zeros((0, 3), dtype=np.float32), 0.9) == []
    (only,) = group_answers(VECTORS[:1], 0.9)
    assert only.members == [0] and only.representative == 0


def test_near_duplicates_need_different_owners_and_eligible_answers():
    vectors = unit([1, 0, 0], [1, 0.01, 0], [1, 0.02, 0], [0, 1, 0])
    pairs = near_duplicates(vectors, ["a", "b", "a", "c"], min_cosine=0.99)
    assert {(p.first, p.second) for p in pairs} == {(0, 1), (1, 2)}  # (0, 2): same student
    assert all(p.similarity >= 0.99 for p in pairs)
    assert pairs == sorted(pairs, key=lambda p: -p.similarity)

    anonymous = near_duplicates(vectors, [None, None, None, None], min_cosine=0.99)
    assert len(anonymous) == 3  # nobody is known to be the same person
    short = near_duplicates(vectors, ["a", "b", "c", "d"], 0.99, eligible=[True, False, True, True])
    assert [(p.first, p.second) for p in short] == [(0, 2)]
    assert near_duplicates(vectors[:1], ["a"], 0.5) == []


def test_centroid_is_a_unit_vector_between_members():
    centre = centroid(unit([1, 0, 0], [0, 1, 0]))
    np.testing.assert_allclose(centre, [2**-0.5, 2**-0.5, 0], atol=1e-6)


ANCHORS = [Anchor(id=f"a{i}", answer=f"答案{i}", scores={"C1": i}) for i in range(4)]
ANCHOR_VECTORS = unit([1, 0, 0], [0, 1, 0], [0.9, 0.1, 0], [0, 0, 1])


def test_anchors_closest_to_the_group_in_rubric_order():
    chosen = choose_anchors(ANCHORS, 2, ANCHOR_VECTORS, unit([1, 0.05, 0])[0])
    assert [a.id for a in chosen] == ["a0", "a2"]
    chosen = choose_anchors(ANCHORS, 2, ANCHOR_VECTORS, unit([0.1, 0, 1])[0])
    assert [a.id for a in chosen] == ["a0", "a3"]  # a3 closest, then a0; rubric order kept


def test_anchors_all_when_they_fit_first_k_without_vectors_none_for_k0():
    assert choose_anchors(ANCHORS, 4, ANCHOR_VECTORS, unit([1, 0, 0])[0]) == ANCHORS
    assert choose_anchors(ANCHORS, 2) == ANCHORS[:2]
    assert choose_anchors(ANCHORS, 0, ANCHOR_VECTORS, unit([1, 0, 0])[0]) == []


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("", "blank"),
        ("  \n ", "blank"),
        ("。。？", "blank"),
        ("a", "blank"),
        ("不知道。", "non_answer"),
        ("不會", "non_answer"),  # Traditional, matched after conversion
        ("I don't know", "non_answer"),
        ("IDK!", "non_answer"),
        ("N/A", "non_answer"),
        ("不知道为什么要清零梯度", None),
        ("梯度累积", None),
    ],
)
def test_blank_and_non_answers(answer, why):
    assert blank_reason(answer, min_chars=2) == why


def test_sentences_and_content():
    text = "先累加梯度，再更新参数。Then step. 最后清零\n- 注意缩放loss"
    assert sentences_of(text) == [
        "先累加梯度",
        "再更新参数",
        "Then step",
        "最后清零",
        "- 注意缩放loss",
    ]
    assert content_chars("a，b。 梯度") == 4
