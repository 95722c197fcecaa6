"""The HTTP intake: platforms post answers, poll grades, export an exam; OpenAPI at /docs.

A post is stored before it is acknowledged (202) and dispatched after it is stored, so an
accepted submission is never lost. Errors name the field: ``{"detail": [{"loc": ["body", 3,
"question_id"], "msg": ...}]}``; nothing of a rejected request is stored.
"""

import csv
import io
import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import TypeAdapter, ValidationError

from grader import __version__
from grader.api import keys
from grader.api.dispatch import Dispatcher
from grader.api.instructor import install as install_instructor_pages
from grader.api.metrics import metrics_response
from grader.api.schemas import (
    Accepted,
    ExamOut,
    Health,
    SubmissionIn,
    SubmissionOut,
    SubmitResponse,
)
from grader.config import Settings
from grader.exams import Exam
from grader.reports.exports import csv_lines, spreadsheet_text, wide_table
from grader.reports.scores import AnswerRecord, collect
from grader.store import IdConflict, NewSubmission, Platform, Store, StoredSubmission

_bearer = HTTPBearer(auto_error=False, description="the platform's API key")


def create_app(
    settings: Settings, store: Store, exams: dict[str, Exam], dispatcher: Dispatcher
) -> FastAPI:
    app = FastAPI(
        title="grader",
        version=__version__,
        description="Grade exam answers: post submissions, get grades back by poll or webhook.",
    )

    def platform(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Platform:
        unauthorized = HTTPException(
            401, "missing or invalid API key", headers={"WWW-Authenticate": "Bearer"}
        )
        if credentials is None:
            raise unauthorized
        key_id = keys.key_id_of(credentials.credentials)
        found = store.platform_by_key_id(key_id) if key_id else None
        if found is None or not keys.matches(credentials.credentials, found.key_hash):
            raise unauthorized
        return found

    Caller = Annotated[Platform, Depends(platform)]

    @app.post(
        "/v1/submissions",
        status_code=202,
        response_model=SubmitResponse,
        openapi_extra={"requestBody": _request_body_doc(settings.bulk_limit)},
        responses={
            401: {"description": "missing or invalid API key"},
            403: {"description": "an exam this platform may not post to"},
            409: {"description": "an id already posted with a different body"},
            413: {"description": "request body too large"},
            422: {"description": "invalid submission; `loc` names the field"},
        },
    )
    async def submit(request: Request, caller: Caller) -> SubmitResponse:
        """Accept one submission (an object) or many (a list); grading happens later.

        Posting an id again with the same body returns the stored submission; with a
        different body it is a 409 and nothing of the request is stored.
        """
        items = _validate(
            await _read_json(request, settings.max_body_bytes), settings, exams, caller
        )
        try:
            stored = store.submit(caller.id, items)
        except IdConflict as exc:
            raise HTTPException(409, {"msg": str(exc), "ids": exc.external_ids}) from exc
        created = [s for s, new in stored if new]
        if created:
            dispatcher.enqueue(created)
        return SubmitResponse(
            submissions=[
                Accepted(id=s.external_id, status=s.status, duplicate=not new) for s, new in stored
            ]
        )

    @app.get("/v1/submissions/{submission_id:path}", response_model=SubmissionOut)
    def get_submission(submission_id: str, caller: Caller) -> SubmissionOut:
        """Status of one submission, and its grade once graded."""
        found = store.submission(caller.id, submission_id)
        if found is None:
            raise HTTPException(404, f"no submission {submission_id!r}")
        return _out(found)

    @app.get("/v1/exams", response_model=list[ExamOut])
    def list_exams(caller: Caller) -> list[ExamOut]:
        """The exams this platform may post to."""
        return [
            ExamOut(
                name=name,
                questions=len(exams[name].bank.questions),
                subjective=sum(not q.type.objective for q in exams[name].bank.questions),
            )
            for name in sorted(caller.exams)
            if name in exams
        ]

    @app.get("/v1/exams/{exam}/grades")
    def export(exam: str, caller: Caller, format: str = "jsonl") -> StreamingResponse:
        """Every submission of this platform to the exam with its grade: JSONL, CSV (one row
        per submission) or wide CSV (one row per student, a column per question, section
        subtotals and the total; empty where not answered or not graded yet)."""
        if exam not in caller.exams:
            raise HTTPException(404, f"no exam {exam!r} for this platform")
        return _export(store.export(caller.id, exam), exam, format, exams)

    @app.get("/healthz", response_model=Health, responses={503: {"model": Health}})
    def health() -> Any:
        """200 when the database and the broker answer, 503 otherwise."""
        try:
            store.ping()
            database = "ok"
        except Exception as exc:
            database = f"error: {type(exc).__name__}"
        broker = "ok" if dispatcher.broker_ok() else "unreachable"
        body = Health(database=database, broker=broker)
        status = 200 if database == broker == "ok" else 503
        return JSONResponse(body.model_dump(), status_code=status)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return metrics_response(store, dispatcher)

    install_instructor_pages(app, settings, store, exams)
    return app


async def _read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body over {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"request body over {limit} bytes")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HTTPException(
            422, [{"loc": ["body"], "msg": f"malformed JSON: {exc}", "type": "json_invalid"}]
        ) from exc


def _validate(
    data: Any, settings: Settings, exams: dict[str, Exam], caller: Platform
) -> list[NewSubmission]:
    """Every item checked before anything is stored; all problems reported at once."""
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
    if len(raw) > settings.bulk_limit:
        raise HTTPException(
            413, f"{len(raw)} submissions in one request; the limit is {settings.bulk_limit}"
        )
    errors: list[dict] = []
    forbidden: set[str] = set()
    items = []
    for i, entry in enumerate(raw):
        loc = prefix or ["body", i]
        try:
            item = SubmissionIn.model_validate(entry)
        except ValidationError as exc:
            errors += [
                {"loc": [*loc, *e["loc"]], "msg": e["msg"], "type": e["type"]}
                for e in exc.errors(include_url=False, include_input=False)
            ]
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
        elif len(item.answer) > settings.max_answer_chars:
            errors.append(
                {
                    "loc": [*loc, "answer"],
                    "msg": f"answer is {len(item.answer)} characters; the limit is {settings.max_answer_chars}",
                    "type": "string_too_long",
                }
            )
        items.append(NewSubmission(item.id, item.exam, item.question_id, item.answer, item.student))
    if forbidden:
        raise HTTPException(
            403, f"this platform may not post to exam(s): {', '.join(sorted(forbidden))}"
        )
    if errors:
        raise HTTPException(422, errors)
    return items


def _out(s: StoredSubmission) -> SubmissionOut:
    return SubmissionOut(
        id=s.external_id,
        exam=s.exam,
        question_id=s.question_id,
        student=s.student,
        status=s.status,
        submitted_at=s.created_at,
        graded_at=s.graded_at,
        error=s.error,
        grade=s.grade,
    )


def _jsonl(rows: Iterator[StoredSubmission]) -> Iterator[str]:
    for s in rows:
        yield _out(s).model_dump_json(exclude={"answer"}) + "\n"


CSV_COLUMNS = [
    "submission_id", "exam", "question_id", "student", "status", "score", "max_score",
    "method", "confidence", "needs_review", "review_codes", "graded_at",
]  # fmt: skip


def _csv(rows: Iterator[StoredSubmission]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for s in rows:
        g = s.grade
        writer.writerow(
            [
                spreadsheet_text(s.external_id), s.exam, s.question_id, spreadsheet_text(s.student), s.status,
                "" if g is None or g.score is None else g.score,
                "" if g is None or g.max_score is None else g.max_score,
                g.method.value if g else "", "" if g is None or g.confidence is None else g.confidence,
                g.needs_review if g else "", " ".join(r.code for r in g.review_reasons) if g else "",
                s.graded_at.isoformat() if s.graded_at else "",
            ]
        )  # fmt: skip
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def _export(
    rows: Iterator[StoredSubmission], exam: str, format: str, exams: dict[str, Exam]
) -> StreamingResponse:
    if format == "jsonl":
        return StreamingResponse(_jsonl(rows), media_type="application/x-ndjson")
    if format == "csv":
        lines, name = _csv(rows), f"{exam}.csv"
    elif format == "wide-csv":
        if exam not in exams:
            raise HTTPException(404, f"exam {exam!r} is not served here: no bank for its columns")
        # A student's row needs all their answers: gathered first, then streamed.
        lines, name = _wide_csv(rows, exams[exam]), f"{exam}-wide.csv"
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


def _wide_csv(rows: Iterator[StoredSubmission], exam: Exam) -> Iterator[str]:
    records = [AnswerRecord(s.external_id, s.question_id, s.student, s.grade) for s in rows]
    return csv_lines(*wide_table(collect(records, exam.bank)))


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
