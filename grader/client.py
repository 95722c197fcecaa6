"""A Python client for exam platforms: post answers, get grades, export an exam, check webhooks.

Needs only httpx and pydantic (``pip install "grader[client]"``); it imports nothing of the
service. Grades come back as ``grader.models.Grade``, the record of the README's contract.

Retries: a request is tried again after a connection error, a timeout, a 5xx or a 429 (after
``Retry-After`` when the server sends one), with exponential backoff and jitter. That is safe
for posts too: the platform's id makes a repeated post return the stored submission. Other
4xx are the caller's to fix and raise at once.

    GraderError (grader.errors)
     └── ClientError
          ├── GraderUnavailable   still unreachable / 5xx / 429 after the retries
          ├── APIError            a 4xx: ``status_code`` and the server's ``detail``
          │    └── IdConflict     409: ids already posted with a different body (``ids``)
          └── GradesTimeout       ``wait_for_grades`` ran out of time (``pending``)
"""

from __future__ import annotations

import hashlib
import hmac
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from grader.errors import GraderError
from grader.models import Grade

__all__ = [
    "APIError", "Accepted", "Answer", "ClientError", "ExamInfo", "GradeChange", "GraderClient",
    "GraderUnavailable", "GradesTimeout", "IdConflict", "SubmissionStatus", "WebhookEvent",
    "parse_webhook", "verify_webhook",
]  # fmt: skip

Status = Literal["queued", "graded", "failed"]
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
SIGNATURE_HEADER = "X-Grader-Signature"
TIMESTAMP_HEADER = "X-Grader-Timestamp"


class Answer(BaseModel):
    """One answer to post. ``id`` is the platform's own: posting it again is safe."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    exam: str
    question_id: str
    answer: str
    student: str | None = None


class _Reply(BaseModel):
    # A newer server may add fields; an older client must still read its replies.
    model_config = ConfigDict(extra="ignore")


class Accepted(_Reply):
    id: str
    status: Status
    duplicate: bool


class SubmissionStatus(_Reply):
    id: str
    exam: str
    question_id: str
    student: str | None = None
    status: Status
    submitted_at: datetime
    graded_at: datetime | None = None
    error: str | None = None
    grade: Grade | None = None
    version: int | None = None  # the grade's version: one more with each change


class GradeChange(_Reply):
    """One version of a grade (``changes``): what changed it, and the grade it became."""

    cursor: int
    submission_id: str
    version: int
    change: dict[str, Any]  # cause, by, at, rubric_version, from, to
    grade: Grade


class ExamInfo(_Reply):
    name: str
    questions: int
    subjective: int


class WebhookEvent(_Reply):
    event: str  # grade.completed (version 1), grade.updated (each later version)
    delivery_id: int
    exam: str
    submission_id: str
    grade: Grade
    version: int | None = None  # keep the highest: the grade as it stands
    change: dict[str, Any] | None = None  # cause, by, at, rubric_version, from, to


class ClientError(GraderError):
    """Something the client could not do; see the subclasses."""


class GraderUnavailable(ClientError):
    """No usable reply after every retry (connection errors, 5xx, 429)."""


class APIError(ClientError):
    def __init__(self, status_code: int, detail: Any):
        self.status_code, self.detail = status_code, detail
        super().__init__(f"HTTP {status_code}: {detail}")


class IdConflict(APIError):
    """The ids were posted before with a different body; nothing of the request was stored."""

    @property
    def ids(self) -> list[str]:
        return self.detail.get("ids", []) if isinstance(self.detail, dict) else []


class GradesTimeout(ClientError):
    def __init__(self, pending: list[str], done: dict[str, SubmissionStatus]):
        self.pending, self.done = pending, done
        super().__init__(f"{len(pending)} submission(s) still queued: {', '.join(pending[:5])}")


_accepted = TypeAdapter(list[Accepted])
_exams = TypeAdapter(list[ExamInfo])


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry 429s, 5xx and connection errors; ``seed`` makes
    the jitter repeatable (tests)."""

    retries: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    seed: int | None = None


class GraderClient:
    """One platform's connection to the grading service; use as a context manager."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.retries, self.backoff_s = retry.retries, retry.backoff_s
        self.max_backoff_s = retry.max_backoff_s
        self._sleep, self._random = sleep, random.Random(retry.seed)
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout_s,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GraderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- submissions ---------------------------------------------------------------------

    def submit(self, answer: Answer | Mapping[str, Any]) -> Accepted:
        """Post one answer; a repeat of an earlier post returns it with ``duplicate``."""
        return self.submit_many([answer])[0]

    def submit_many(
        self, answers: Iterable[Answer | Mapping[str, Any]], *, batch_size: int = 500
    ) -> list[Accepted]:
        """Post answers in batches (each all or nothing on the server), in order. After an
        error the earlier batches are stored; posting everything again is safe."""
        items = [a if isinstance(a, Answer) else Answer.model_validate(a) for a in answers]
        accepted: list[Accepted] = []
        for start in range(0, len(items), batch_size):
            body = [a.model_dump(exclude_none=True) for a in items[start : start + batch_size]]
            reply = self._request("POST", "/v1/submissions", json=body)
            accepted += _accepted.validate_python(reply.json()["submissions"])
        return accepted

    def submission(self, submission_id: str) -> SubmissionStatus:
        """Status of one submission, with its grade once graded."""
        reply = self._request("GET", f"/v1/submissions/{quote(submission_id, safe='')}")
        return SubmissionStatus.model_validate_json(reply.content)

    def grade(self, submission_id: str) -> Grade | None:
        return self.submission(submission_id).grade

    def exams(self) -> list[ExamInfo]:
        return _exams.validate_json(self._request("GET", "/v1/exams").content)

    def wait_for_grades(
        self,
        submission_ids: Iterable[str],
        *,
        timeout_s: float = 300.0,
        poll_s: float = 1.0,
        exam: str | None = None,
    ) -> dict[str, SubmissionStatus]:
        """Poll until every submission is graded or failed; raises GradesTimeout (with what
        is done so far) at the deadline. With ``exam``, one export per poll instead of one
        request per submission: better for many."""
        wanted = list(dict.fromkeys(submission_ids))
        deadline = time.monotonic() + timeout_s
        done: dict[str, SubmissionStatus] = {}
        while True:
            pending = [i for i in wanted if i not in done]
            if exam is not None:
                looking = set(pending)
                found = (s for s in self.export(exam) if s.id in looking)
            else:
                found = (self.submission(i) for i in pending)
            done.update({s.id: s for s in found if s.status != "queued"})
            pending = [i for i in wanted if i not in done]
            if not pending:
                return {i: done[i] for i in wanted}
            if time.monotonic() + poll_s > deadline:
                raise GradesTimeout(pending, done)
            self._sleep(poll_s)

    # --- exports -------------------------------------------------------------------------

    def export(self, exam: str) -> Iterator[SubmissionStatus]:
        """Every submission of this platform to ``exam`` with its grade, streamed."""
        reply = self._stream(f"/v1/exams/{quote(exam, safe='')}/grades", "jsonl")
        try:
            for line in reply.iter_lines():
                if line.strip():
                    yield SubmissionStatus.model_validate_json(line)
        finally:
            reply.close()

    def export_csv(self, exam: str, *, wide: bool = False) -> Iterator[bytes]:
        """The exam as CSV bytes, streamed: one row per submission, or (``wide``) one row
        per student with a column per question, section subtotals and the total."""
        reply = self._stream(
            f"/v1/exams/{quote(exam, safe='')}/grades", "wide-csv" if wide else "csv"
        )
        try:
            yield from reply.iter_bytes()
        finally:
            reply.close()

    def changes(self, exam: str, after: int = 0) -> Iterator[GradeChange]:
        """Every grade change of ``exam`` past the cursor ``after``, oldest first, page by
        page; keep the last one's ``cursor`` to read on from later."""
        while True:
            reply = self._request(
                "GET", f"/v1/exams/{quote(exam, safe='')}/changes", params={"after": after}
            ).json()
            for item in reply["changes"]:
                yield GradeChange.model_validate(item)
            after = reply["next"]
            if not reply["more"]:
                return

    # --- transport -----------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._send(self._http.build_request(method, path, **kwargs), stream=False)

    def _stream(self, path: str, format: str) -> httpx.Response:
        request = self._http.build_request("GET", path, params={"format": format})
        return self._send(request, stream=True)

    def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        """Send with retries. A stream is retried only until its status arrives: once lines
        have been handed out, a broken stream raises rather than repeat them."""
        for attempt in range(1, self.retries + 2):
            try:
                reply = self._http.send(request, stream=stream)
            except httpx.TransportError as exc:
                if attempt > self.retries:
                    raise GraderUnavailable(f"{request.url}: {type(exc).__name__}: {exc}") from exc
                self._sleep(self._backoff(attempt))
                continue
            if reply.status_code < 400:
                return reply
            reply.read()
            reply.close()
            if reply.status_code not in RETRY_STATUSES:
                raise _api_error(reply)
            wait = self._wait(attempt, reply)
            if attempt > self.retries or wait is None:
                raise GraderUnavailable(
                    f"{request.url}: HTTP {reply.status_code} after {attempt} attempt(s)"
                )
            self._sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _backoff(self, attempt: int) -> float:
        """Exponential, with "equal jitter": half the step fixed, half random, so clients
        that failed together do not come back together."""
        step = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return step / 2 + self._random.uniform(0, step / 2)

    def _wait(self, attempt: int, reply: httpx.Response) -> float | None:
        """The backoff, or at least what Retry-After asks; None when it asks for more than
        ``max_backoff_s`` (the caller had better come back later than block)."""
        asked = _retry_after(reply.headers.get("Retry-After"))
        if asked is None:
            return self._backoff(attempt)
        if asked > self.max_backoff_s:
            return None
        return asked + self._random.uniform(0, self.backoff_s)


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _api_error(reply: httpx.Response) -> APIError:
    try:
        body = reply.json()
    except ValueError:
        body = reply.text
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return (IdConflict if reply.status_code == 409 else APIError)(reply.status_code, detail)


# --- webhooks ------------------------------------------------------------------------------


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    raw_body: bytes,
    tolerance_s: float = 300,
    *,
    now: float | None = None,
) -> bool:
    """True when the body is signed with ``secret`` and the signed timestamp is within
    ``tolerance_s`` of now. Pass the body exactly as received (bytes), before parsing it."""
    lower = {k.lower(): v for k, v in headers.items()}
    timestamp = lower.get(TIMESTAMP_HEADER.lower(), "")
    signature = lower.get(SIGNATURE_HEADER.lower(), "")
    if not (timestamp.isascii() and timestamp.isdigit()) or not signature:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance_s:
        return False  # a replay of an old delivery, or a clock far off
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + raw_body, hashlib.sha256)
    return hmac.compare_digest(("sha256=" + mac.hexdigest()).encode(), signature.encode())


def parse_webhook(
    secret: str, headers: Mapping[str, str], raw_body: bytes, tolerance_s: float = 300
) -> WebhookEvent:
    """The verified event, or ClientError: check first, parse after."""
    if not verify_webhook(secret, headers, raw_body, tolerance_s):
        raise ClientError("webhook signature or timestamp is not valid")
    return WebhookEvent.model_validate_json(raw_body)
