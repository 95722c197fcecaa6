"""A bounded fuzz run that stays in the suite: schemathesis generates requests from the API's
own OpenAPI schema (valid ones and, on purpose, invalid ones: wrong types, missing fields,
NUL bytes) and every answer must be below 500 with no error logged, with a platform's key
and without one. ``test_service_inputs`` keeps the hand-made hostile cases (lone surrogates,
NUL, deep nesting, huge numbers); ``test_request_limits`` the oversize bodies.

Hypothesis drives each operation's strategy directly: schemathesis's pytest plugin
(``from_fixture``) does not run under pytest 9."""

from __future__ import annotations

import logging

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.unit.test_service_api import service  # noqa: F401

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
