"""What platforms call: post answers, poll one submission, list their exams, export an exam.

A post is stored before it is acknowledged (202) and dispatched after it is stored, so an
accepted submission is never lost. Errors name the field: ``{"detail": [{"loc": ["body", 3,
"question_id"], "msg": ...}]}``; nothing of a rejected request is stored.
"""

import re
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import TypeAdapter, ValidationError

from grader.api.bodies import ObjectTooLarge, TooManyItems, parse_body, too_many_in_prefix
from grader.api.deps import Caller, Services, Svc
from grader.api.exports import change_out, csv_rows, jsonl, submission_out, wide_csv_rows
from grader.api.quotas import queue_full
from grader.api.schemas import (
    Accepted,
    ChangesOut,
    ExamOut,
    SubmissionIn,
    SubmissionOut,
    SubmitResponse,
    Text,
)
from grader.config import LimitSettings
from grader.files.jsonl import json_problem
from grader.service.exams import Exam
from grader.service.store import NewSubmission, Platform, QueueFull, StoredIdConflict
from grader.service.store.versions import MAX_PAGE

FIELDS = tuple(SubmissionIn.model_fields)
# An object with more keys than this is refused whole; fewer, each unknown key is named.
MAX_KEYS = 32
MAX_ERRORS = 100  # listed in a 422; the rest are counted
PREFIX_BYTES = 64 * 1024  # what is read of a body before its list is counted
_SPACE = re.compile(rb"[ \t\n\r]*")


def intake_router(bulk_limit: int) -> APIRouter:
    """The ``/v1`` routes; ``bulk_limit`` goes into the documented request body."""
    router = APIRouter(prefix="/v1")
    router.add_api_route(
        "/submissions",
        submit,
        methods=["POST"],
        status_code=202,
        response_model=SubmitResponse,
        openapi_extra={"requestBody": _request_body_doc(bulk_limit)},
        responses={
            401: {"description": "missing or invalid API key"},
            403: {"description": "an exam this platform may not post to"},
            409: {"description": "an id already posted with a different body"},
            413: {"description": "request body too large"},
            422: {"description": "invalid submission; `loc` names the field"},
            429: {
                "description": "rate limit, the platform's queue cap, requests in flight, or "
                "refused posts this minute; see Retry-After"
            },
        },
    )
    router.add_api_route(
        "/submissions/{submission_id:path}", get_submission, response_model=SubmissionOut
    )
    router.add_api_route("/exams", list_exams, response_model=list[ExamOut])
    router.add_api_route("/exams/{exam}/grades", export)
    router.add_api_route("/exams/{exam}/changes", changes, response_model=ChangesOut)
    return router


async def submit(request: Request, caller: Caller, svc: Svc) -> SubmitResponse:
    """Accept one submission (an object) or many (a list); grading happens later.

    Posting an id again with the same body returns the stored submission; with a
    different body it is a 409 and nothing of the request is stored. A post that would
    queue more than GRADER_MAX_QUEUED_PER_PLATFORM is a 429 and stores nothing.
    """
    body = await _read_body(request, svc.settings.limits)
    # Decoding and checking up to 8 MiB, then the database: in a worker thread, so one large
    # post never holds the event loop other platforms' requests are served on.
    return await run_in_threadpool(_accept, body, caller, svc)


async def _read_body(request: Request, limits: LimitSettings) -> bytes:
    """The body (bounded by BodyLimit, GRADER_MAX_BODY_BYTES), refused (413) as soon as what
    has arrived shows it too large: an object past any valid submission's size, or a list
    whose first ``PREFIX_BYTES`` hold more than GRADER_BULK_LIMIT elements. The rest of such a
    body is never read."""
    body, checked, most = bytearray(), False, _most_object_bytes(limits)
    blank = 0  # the leading whitespace scanned so far
    async for chunk in request.stream():
        body += chunk
        space = _SPACE.match(body, blank)
        assert space is not None  # ``_SPACE`` matches the empty string: it always matches
        blank = space.end()
        if len(body) > most and body[blank : blank + 1] == b"{":
            raise HTTPException(413, str(ObjectTooLarge(most)))
        if not checked and len(body) >= PREFIX_BYTES:
            checked = True
            prefix = bytes(body[:PREFIX_BYTES])
            if await run_in_threadpool(too_many_in_prefix, prefix, limits.bulk_limit):
                raise HTTPException(413, str(TooManyItems(limits.bulk_limit)))
    return bytes(body)


def _most_object_bytes(limits: LimitSettings) -> int:
    """The largest valid submission: its answer at 12 bytes a character (an escaped surrogate
    pair), plus room for the other fields and whitespace."""
    return 12 * limits.max_answer_chars + 64 * 1024


def _accept(body: bytes, caller: Platform, svc: Services) -> SubmitResponse:
    limits = svc.settings.limits
    items = _validate(_parse(body, limits), limits, svc.exams, caller)
    try:
        stored = svc.store.intake.submit(caller.id, items, limits.max_queued_per_platform)
    except StoredIdConflict as exc:
        raise HTTPException(409, {"msg": str(exc), "ids": exc.external_ids}) from exc
    except QueueFull as exc:
        raise queue_full(exc) from exc
    created = [s for s, new in stored if new]
    if created:
        svc.dispatcher.enqueue(created)
    return SubmitResponse(
        submissions=[
            Accepted(id=s.external_id, status=s.status, duplicate=not new) for s, new in stored
        ]
    )


def get_submission(
    submission_id: Annotated[Text, Path(max_length=200)], caller: Caller, svc: Svc
) -> SubmissionOut:
    """Status of one submission, and its grade once graded."""
    found = svc.store.intake.submission(caller.id, submission_id)
    if found is None:
        raise HTTPException(404, f"no submission {submission_id!r}")
    return submission_out(found)


def list_exams(caller: Caller, svc: Svc) -> list[ExamOut]:
    """The exams this platform may post to."""
    return [
        ExamOut(
            name=name,
            questions=len(svc.exams[name].bank.questions),
            subjective=sum(not q.type.objective for q in svc.exams[name].bank.questions),
        )
        for name in sorted(caller.exams)
        if name in svc.exams
    ]


def export(exam: str, caller: Caller, svc: Svc, format: str = "jsonl") -> StreamingResponse:
    """Every submission of this platform to the exam with its grade: JSONL, CSV (one row
    per submission) or wide CSV (one row per student, a column per question, section
    subtotals and the total; empty where not answered or not graded yet)."""
    if exam not in caller.exams:
        raise HTTPException(404, f"no exam {exam!r} for this platform")
    rows = svc.store.intake.export(caller.id, exam)
    if format == "jsonl":
        return StreamingResponse(jsonl(rows), media_type="application/x-ndjson")
    if format == "csv":
        lines, name = csv_rows(rows), f"{exam}.csv"
    elif format == "wide-csv":
        if exam not in svc.exams:
            raise HTTPException(404, f"exam {exam!r} is not served here: no bank for its columns")
        # A student's row needs all their answers: gathered first, then streamed.
        lines, name = wide_csv_rows(rows, svc.exams[exam].bank), f"{exam}-wide.csv"
    else:
        raise HTTPException(
            422,
            [
                {
                    "loc": ["query", "format"],
                    "msg": "use jsonl, csv or wide-csv",
                    "type": "value_error",
                }
            ],
        )
    return StreamingResponse(
        lines,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def changes(
    exam: str,
    caller: Caller,
    svc: Svc,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> ChangesOut:
    """The exam's grade changes since the cursor ``after`` (0: from the first grade), oldest
    first: each version of each of this platform's grades, with what changed it. Read on
    from ``next`` while ``more``; a version appears once, in the order webhooks announce it."""
    if exam not in caller.exams:
        raise HTTPException(404, f"no exam {exam!r} for this platform")
    found = svc.store.versions.changes(caller.id, exam, after, limit + 1)
    page = found[:limit]
    return ChangesOut(
        changes=[change_out(c) for c in page],
        next=page[-1].cursor if page else after,
        more=len(found) > limit,
    )


def _parse(body: bytes, limits: LimitSettings) -> Any:
    try:
        return parse_body(body, limits.bulk_limit, _most_object_bytes(limits))
    except (TooManyItems, ObjectTooLarge) as exc:
        raise HTTPException(413, str(exc)) from exc
    except (ValueError, RecursionError) as exc:
        raise HTTPException(
            422, [{"loc": ["body"], "msg": json_problem(exc), "type": "json_invalid"}]
        ) from exc


def _validate(
    data: Any, limits: LimitSettings, exams: dict[str, Exam], caller: Platform
) -> list[NewSubmission]:
    """Every item checked before anything is stored; all problems reported at once."""
    prefix: list[str | int] | None  # an error's location: a lone object's, or None (its index)
    if isinstance(data, dict):
        raw, prefix = [data], ["body"]
    elif isinstance(data, list):
        raw, prefix = data, None
    else:
        raise HTTPException(
            422,
            [
                {
                    "loc": ["body"],
                    "msg": "expected a submission object or a list of them",
                    "type": "type_error",
                }
            ],
        )
    if not raw:
        raise HTTPException(422, [{"loc": ["body"], "msg": "empty list", "type": "too_short"}])
    if len(raw) > limits.bulk_limit:
        raise HTTPException(
            413, f"{len(raw)} submissions in one request; the limit is {limits.bulk_limit}"
        )
    errors: list[dict] = []
    forbidden: set[str] = set()
    items = []
    for i, entry in enumerate(raw):
        loc = prefix or ["body", i]
        item = _submission_in(entry, loc, errors)
        if item is None:
            continue
        if item.exam not in caller.exams:
            forbidden.add(item.exam)
            continue
        exam = exams.get(item.exam)
        if exam is None:
            errors.append(
                {
                    "loc": [*loc, "exam"],
                    "msg": f"exam {item.exam!r} is not served here",
                    "type": "value_error",
                }
            )
        elif exam.bank.get(item.question_id) is None:
            errors.append(
                {
                    "loc": [*loc, "question_id"],
                    "msg": f"no question {item.question_id!r} in exam {item.exam!r}",
                    "type": "value_error",
                }
            )
        elif len(item.answer) > (most := limits.max_answer_chars):
            errors.append(
                {
                    "loc": [*loc, "answer"],
                    "msg": f"answer is {len(item.answer)} characters; the limit is {most}",
                    "type": "string_too_long",
                }
            )
        items.append(NewSubmission(item.id, item.exam, item.question_id, item.answer, item.student))
    if forbidden:
        raise HTTPException(
            403, f"this platform may not post to exam(s): {', '.join(sorted(forbidden))}"
        )
    if len(errors) > MAX_ERRORS:
        more = {"loc": ["body"], "msg": f"and {len(errors) - MAX_ERRORS} more errors",
                "type": "too_many_errors"}  # fmt: skip
        errors = [*errors[:MAX_ERRORS], more]
    if errors:
        raise HTTPException(422, errors)
    return items


def _submission_in(
    entry: Any, loc: list[str | int], errors: list[dict[str, Any]]
) -> SubmissionIn | None:
    """``entry`` as a submission, or None with its problems added to ``errors``."""
    if isinstance(entry, dict) and len(entry) > MAX_KEYS:
        # one error, not one per unknown key (an object of a million keys: seconds)
        errors.append(
            {
                "loc": loc,
                "msg": f"{len(entry)} fields; a submission has at most: {', '.join(FIELDS)}",
                "type": "too_many_fields",
            }
        )
        return None
    try:
        return SubmissionIn.model_validate(entry)
    except ValidationError as exc:
        errors += [
            {"loc": [*loc, *e["loc"]], "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        return None


def _request_body_doc(bulk_limit: int) -> dict:
    one = TypeAdapter(SubmissionIn).json_schema()
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"oneOf": [one, {"type": "array", "items": one, "maxItems": bulk_limit}]}
            }
        },
    }
