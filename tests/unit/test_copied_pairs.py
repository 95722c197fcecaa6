"""Near-duplicates need shared wording as well as a high cosine (benchmarks-log, "Review flags").

On 60 real ADS answers the cosine-only rule flagged 18 answers `near_duplicate`, among them
two answers in their own words at cosine 0.973. The issue quotes only their openings
("不正确，当栈里只有一个元素时…", "错误 栈底元素可删除…"); the pair below completes them in the
same vein. The light-edit copy is a real pair of ADS development answers (ads-0635 and
ads-0938, question 005), labelled a copy in benchmarks/labels/ads_dev_near_duplicates.jsonl.
Vectors are given, so the cosines are the measured ones and no model is needed.
"""

import math

import numpy as np

from grader.config import Settings, SignalSettings
from grader.engine.reading.rubrics import rubric_for
from grader.engine.signals.analysis import analyze_question, copied_pairs
from grader.models import Question, QuestionType, Submission
from tests.embedders import CountingEmbedder

STACK = "请判断以下叙述是否正确，并做出解释：栈底元素是不能删除的元素"
OWN_A = "不正确，当栈里只有一个元素时，这个元素既是栈顶也是栈底，可以出栈删除。"
OWN_B = "错误 栈底元素可删除，先把上面的元素依次出栈，最后就能删除栈底元素。"
LINKED = (
    "在单链表、双链表和循环单链表中，若仅知道指针p指向某节点，不知道头指针，能否将节点*p从相应的"
    "链表中删去？若可以，其时间复杂度各为多少？"
)
COPY_A = (
    "单链表无法操作。\n双链表可以，因为其可以通过p指向的结点找到该结点的前驱结点和后继结点，"
    "时间复杂度O（1）.\n循环单链表也可以，链表的循环可以得到P指向的结点的前驱结点，时间复杂度O（n）。"
)
COPY_B = (
    "单链表的不行，如果要删去P指向的结点，就需要知道该结点的前后结点。没有头结点，无法从头遍历。\n"
    "双链表可以，因为双链表可以通过p指向的结点找到该结点的前驱结点和后继结点，时间复杂度O(1).\n"
    "单循环链表也可以，链表的循环可以得到P指向的结点的前驱结点，时间复杂度O(n)"
)


def _pair(cosine: float, first: int, second: int, width: int = 64) -> np.ndarray:
    """Two unit vectors at ``cosine``, on their own two axes."""
    v = np.zeros((2, width), dtype=np.float32)
    v[0, first] = 1.0
    v[1, first], v[1, second] = cosine, math.sqrt(1 - cosine**2)
    return v


class PreparedEmbedder(CountingEmbedder):
    """The answers above get the prepared vectors; any other text the double's own."""

    def __init__(self, prepared: dict[str, np.ndarray]):
        super().__init__()
        self.prepared = prepared

    def encode(self, texts):
        vectors = super().encode(texts)
        for row, text in enumerate(texts):
            if text in self.prepared:
                vectors[row] = self.prepared[text]
        return vectors


def _subs(*answers: str) -> list[Submission]:
    return [
        Submission(id=f"s{i}", question_id="q", answer=a, student=f"stu{i}")
        for i, a in enumerate(answers)
    ]


def test_own_words_at_a_high_cosine_are_not_a_copy_and_a_light_edit_is():
    settings = Settings()
    own = _pair(0.973, 0, 1)
    assert copied_pairs(_subs(OWN_A, OWN_B), own, settings.signals, STACK) == []
    copy = _pair(0.99, 2, 3)
    (pair,) = copied_pairs(_subs(COPY_A, COPY_B), copy, settings.signals, LINKED)
    assert (pair.first, pair.second) == (0, 1) and pair.similarity == 0.99


def test_analysis_flags_the_copy_and_not_an_answer_in_its_own_words():
    # ads-0041 and ads-0635 were at cosine >= 0.97 too, labelled "not a copy" (own words)
    own = (
        "单链表不可以，因为找不到p节点的前驱节点。无法删除p节点。\n循环单链表可以找到p节点的前驱节点，"
        "所以可以删除p节点。时间复杂度为O（n）。\n双链表也可以找到p节点的前驱和后继结点。时间复杂度为O(1)。"
    )
    vectors = {COPY_A: np.eye(64, dtype=np.float32)[0]}
    vectors[COPY_B] = _pair(0.99, 0, 1)[1]
    vectors[own] = _pair(0.975, 0, 2)[1]  # 0.975 · 0.99 ≈ 0.965 from COPY_B: no candidate
    question = Question(id="q", number="5", section="简答题", type=QuestionType.SHORT_ANSWER,
                        stem=LINKED, answer="单链表不可以。双链表可以，时间复杂度为O(1)。循环链表可以，"
                        "时间复杂度为O(n)。", points=10)  # fmt: skip
    analysis = analyze_question(
        question, rubric_for(question, {}), _subs(own, COPY_A, COPY_B), PreparedEmbedder(vectors),
        SignalSettings(offtopic_margin=-1.0),
    )  # fmt: skip
    flagged = {
        sid: [d.submission_id for d in s.near_duplicates] for sid, s in analysis.signals.items()
    }
    assert flagged == {"s0": [], "s1": ["s2"], "s2": ["s1"]}
