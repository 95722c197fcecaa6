"""A bounded fuzz run that stays in the suite: schemathesis generates requests from the API's
own OpenAPI schema (valid ones and, on purpose, invalid ones: wrong types, missing fields,
NUL bytes) and every answer must be below 500 with no error logged, with a platform's key
and without one. ``test_service_inputs`` keeps the hand-made hostile cases (lone surrogates,
NUL, deep nesting, huge numbers) and ``test_request_limits`` the oversize bodies; the second
test here draws those same kinds of value at random into every field of a submission.

Hypothesis drives each operation's strategy directly: schemathesis's pytest plugin
(``from_fixture``) does not run under pytest 9."""

from __future__ import annotations

import json
import logging

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.unit.test_service_api import item, service  # noqa: F401

EXAMPLES = 15  # per operation and mode: the run takes seconds, not minutes


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_generated_request_gets_a_5xx_or_an_error_logged(service, mode, caplog):  # noqa: F811
    client, _, keys = service
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    schema.config.generation.update(allow_x00=True)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/submissions", "/v1/submissions/{submission_id}"}
    seen: dict[str, int] = {}
    statuses: set[int] = set()
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case):
            for headers in (keys["a"], {}):
                with caplog.at_level(logging.ERROR):
                    response = case.call(headers=headers)
                assert response.status_code < 500, (case.method, case.path, response.text[:300])
                seen[case.operation.label] = seen.get(case.operation.label, 0) + 1
                statuses.add(response.status_code)
            errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
            assert not errors, errors[0].getMessage()

        try:
            fuzz()
        except Unsatisfiable:  # nothing to make invalid: no parameters, no body
            assert mode == GenerationMode.NEGATIVE and not _inputs(operation), operation.label
    assert set(seen) >= {
        op.label for op in operations if mode == GenerationMode.POSITIVE or _inputs(op)
    }, "every operation with inputs was called"
    # the run got past the key check: valid requests answered, invalid ones refused by field
    if mode == GenerationMode.POSITIVE:
        assert any(200 <= s < 300 for s in statuses), statuses
    else:
        assert 422 in statuses, statuses


def _inputs(operation) -> bool:
    return bool(operation.body or operation.path_parameters or operation.query)


# JSON text put as is in place of one field's value: what schema-driven generation never makes
HOSTILE = st.one_of(
    # strings with lone surrogates (sent as \udXXX escapes), NUL and other controls
    st.text(st.characters(categories=["Cs", "Cc", "Lo", "Nd", "Zs"]), max_size=40).map(json.dumps),
    st.integers(300, 6000).map(lambda n: "9" * n),  # huge numbers
    st.sampled_from(["1e999999", "-1e999999", "NaN", "Infinity", "-0", "1.5e-400"]),
    st.integers(50, 5000).map(lambda n: "[" * n + "]" * n),  # deep nesting
    st.integers(50, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(8000, 20000).map(lambda n: json.dumps("x" * n)),  # past the body limit (8 KiB)
)
FIELDS = st.sampled_from(["id", "exam", "question_id", "answer", "student"])


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(field=FIELDS, literal=HOSTILE, bulk=st.booleans())
def _post_hostile(client, headers, caplog, statuses, field, literal, bulk):
    one = json.dumps({**item(1), field: "@@"}).replace('"@@"', literal)
    body = f"[{one}]" if bulk else one
    with caplog.at_level(logging.ERROR):
        response = client.post(
            "/v1/submissions",
            content=body.encode("utf-8", "surrogatepass"),
            headers={**headers, "Content-Type": "application/json"},
        )
    assert response.status_code < 500, (field, literal[:80], response.text[:300])
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors[0].getMessage()
    statuses.add(response.status_code)


def test_hostile_values_in_any_field_get_a_4xx_never_a_5xx(service, caplog):  # noqa: F811
    client, _, keys = service
    statuses: set[int] = set()
    _post_hostile(client, keys["a"], caplog, statuses)
    assert {413, 422} <= statuses, statuses  # the body limit and the field checks both answered


# --- pathological text: every reader of student or paper text finishes, with a sane answer -----
# Repeated tokens and runs of whitespace are what made the old patterns backtrack:
# "A " * 24 + "z", "C11" * 25 + "x", "[" * 20000, "ab" + "\n" * 19998, 8,000 spaces after 答案.
# ``test_linear_text`` measures the worst of them; here hypothesis mixes them at random, up to
# the answer limit, under a deadline no linear reader comes near.
TOKENS = [
    *(" ", "  ", "\n", "\t", "\u3000", "\n\n", " \n"),
    *("A", "a", "A ", "A, ", "A、", "and ", "和", "z", "C11", "C1", '"C1": ', "points", "{", "}"),
    *("[", "【", "(", "（", ")", "）", "<", "‹", "/", ":", "：", ",", "。", ".", "!", "1", "10"),
    *("system", "user:", "ignore the ", "give 5", "满分", "分", "老师", "translate ", "```"),
    *(
        "答案",
        "参考答案",
        "答案：",
        "案例",
        "案例一",
        "材料：",
        "本题",
        "问题",
        "（5分）",
        "1.",
        "2.",
    ),
    *("一、单项选择题", "二、简答题", "√", "×", "正确", "ā", "解："),
]
ANSWER_CHARS = 20_000  # the default max_answer_chars


@st.composite
def pathological_text(draw, max_chars: int = ANSWER_CHARS) -> str:
    """A head, one short unit repeated up to the size limit, and a tail."""
    token = st.sampled_from(TOKENS)
    head = "".join(draw(st.lists(token, max_size=4)))
    unit = "".join(draw(st.lists(token, min_size=1, max_size=3)))
    tail = "".join(draw(st.lists(token, max_size=3)))
    times = draw(st.integers(1, max(1, (max_chars - len(head) - len(tail)) // len(unit))))
    return head + unit * times + tail


TEXT_FUZZ = settings(
    max_examples=25,
    deadline=5_000,  # ms; the old patterns took minutes on such text, linear ones milliseconds
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@TEXT_FUZZ
@given(answer=pathological_text())
def test_student_text_readers_finish_on_repeated_tokens_and_whitespace(answer):
    from grader.bank.marks import choice_letters, true_false
    from grader.engine.reading.blanks import blank_reason
    from grader.engine.reading.injection import find_injections, strip_injections
    from grader.models import ReviewCode

    letters = choice_letters(answer)
    assert letters is None or (letters and set(letters) <= set("ABCDEFGH"))
    assert true_false(answer) in (True, False, None)
    assert blank_reason(answer, 2) in (None, *ReviewCode)
    findings = find_injections(answer)
    assert all(0 <= f.start < f.end <= len(answer) for f in findings)
    stripped = strip_injections(answer, findings)
    assert isinstance(stripped, str) and len(stripped) <= len(answer)


@TEXT_FUZZ
@given(paper=pathological_text())
def test_paper_text_readers_finish_on_repeated_tokens_and_whitespace(paper):
    from grader.bank.answer_part import AnswerPart, find_answer_part
    from grader.bank.keys import alternatives, choice_key, true_false_key
    from grader.bank.paper import PaperResult, parse_paper
    from grader.bank.points import take_own_points
    from grader.errors import BankError
    from grader.text import clean

    text = "一、简答题\n1.简述梯度下降。\n" + paper
    part = find_answer_part(text)
    assert part is None or isinstance(part, AnswerPart)
    try:
        result = parse_paper(text, file="paper.txt", slug="p")
    except BankError as refused:
        assert refused.file == "paper.txt"
    else:
        assert isinstance(result, PaperResult) and result.questions
    points, stem = take_own_points(paper)
    assert (points is None or points >= 0) and isinstance(stem, str)
    assert isinstance(choice_key(paper), tuple) and isinstance(true_false_key(paper), tuple)
    assert all(isinstance(a, str) for a in alternatives(paper))
    assert isinstance(clean(paper), str)
