"""The fault soak (``benchmarks/fault_soak.py``) at a small size: a real deployment — two APIs,
two grading workers, a webhook worker, PostgreSQL and Redis — with every fault once (an API,
Redis, PostgreSQL, a whole grading worker, a pool process and the webhook worker killed; a
receiver failing and hanging on some posts), and before each fault an instructor's override of
a few graded answers. Every answer must be graded exactly once and each of its grade versions
delivered once, signed and in order, with no dead letter, no process stopping by itself and no
post failing outside a fault; timing is the benchmark's business, not this test's."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.fault_soak import FAULTS, run
from benchmarks.lib.deployment import logs
from tests.integration.service import NEEDS_REDIS
from tests.postgres_cluster import server_binaries

pytestmark = [
    *NEEDS_REDIS,
    pytest.mark.skipif(
        server_binaries() is None and os.environ.get("GRADER_REQUIRE_POSTGRES") != "1",
        reason="needs the PostgreSQL server binaries (Debian package postgresql); CI has them",
    ),
]


def test_every_answer_is_graded_once_and_its_webhook_delivered_under_every_fault(tmp_path):
    # One bulk of 25 in flight at a time (1 s of judge per batch with essays in it): grading
    # lasts long enough (about 25 s) for every fault to land while answers are being graded.
    report = run(600, tmp_path, fail=0.05, hang=0.02, seed=1, latency_s=1.0, window=25,
                 drain_timeout_s=240)  # fmt: skip
    try:
        assert [f["fault"] for f in report["faults"]] == list(FAULTS)
        assert report["lost"] == 0 and report["duplicate_grades"] == 0
        assert report["submission_statuses"] == {"graded": 600}
        changed = report["changed"]  # answers an instructor overrode: a version 2 each
        assert changed == 5 * len(FAULTS)
        assert report["delivery_statuses"] == {"delivered": 600 + changed}
        assert report["answers_with_webhook"] == 600
        assert report["webhook_versions"] == {
            "grade.completed v1": 600, "grade.updated v2": changed,
        }  # fmt: skip
        assert report["versions_delivered_twice"] == report["versions_out_of_order"] == 0
        assert report["unsigned_webhooks"] == 0
        assert report["exited_0"] == {}, "a supervisor restarting on failure would leave it"
        assert report["dead_letters"] == 0, report["dead_letter_errors"]  # outages are retried
        assert not any(report["exits_on_their_own"].values())  # Redis, PostgreSQL ridden out
        assert report["restarts"]["api0"] >= 1 and report["restarts"]["io"] >= 1
        assert report["receiver_faults"]["fail"] and report["receiver_faults"]["hang"]
        assert report["ok"]
    except AssertionError:
        print(json.dumps(report, indent=1), logs(tmp_path))
        raise
