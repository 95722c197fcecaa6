"""The rubric editor: a question's criteria, points, key points, levels, wrong claims, the
conclusion it must reach and its anchors, edited in one form (``rubric_form``), checked
(every problem named by its field), previewed — the rubric as it would be and the lines of
its file that change — and saved as a new rubric version (``service.rubric_versions``): the
next answers of every grading process are graded with it; stored ones when the question is
regraded against it."""

from __future__ import annotations

import difflib

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from grader.api.instructor.context import (
    Ctx,
    Pages,
    SignedIn,
    Who,
    checked_form,
    question_url,
    rubric_question,
)
from grader.api.instructor.forms import FormError
from grader.api.instructor.rubric_form import (
    KINDS,
    MAX_CRITERIA,
    criterion_rows,
    parse_rubric_form,
)
from grader.api.instructor.views import DONE
from grader.engine.finish.conclusion import cap_share
from grader.engine.reading.claims.exam import propose
from grader.engine.reading.rubrics import rubric_dir, rubric_for, rubric_problems
from grader.errors import RubricError
from grader.files.yaml_edit import edited_text
from grader.files.yamlfile import yaml_text
from grader.models import Question, Rubric
from grader.service import rubric_versions
from grader.service.exams import Exam

router = APIRouter(
    prefix="/instructor/exams/{exam}/questions/{question_id}/rubric", include_in_schema=False
)


@router.get("", response_class=HTMLResponse)
def editor(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    question = rubric_question(found, question_id)
    rubric = rubric_for(question, found.rubrics)
    return _page(request, ctx, who, found, question, rubric, fields=form_fields(rubric))


@router.post("", response_class=HTMLResponse)
async def edit(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    """``action=preview`` shows the result and the file's diff; ``action=save`` keeps it."""
    form = await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    question = rubric_question(found, question_id)
    current = rubric_for(question, found.rubrics)
    try:
        new = parse_rubric_form(form, current)
        problems = rubric_problems(new, question)
        if problems:
            raise FormError("rubric", "; ".join(problems))
        if form.get("action") == "save":
            if new.version == current.version:
                raise FormError("rubric", "nothing changed")
            note = (form.get("note") or "").strip()[:500] or "edited on the rubric page"
            rubric_versions.save(found, ctx.store, question, new, who.instructor.name, note)
            url = f"{question_url(found.name, question.id)}?done=rubric#rubric"
            return RedirectResponse(url, status_code=303)
    except FormError as exc:
        return _page(request, ctx, who, found, question, current, fields=form, error=str(exc))
    except RubricError as exc:
        return _page(request, ctx, who, found, question, current, fields=form, error=exc.message)
    return _page(request, ctx, who, found, question, current, fields=form, preview=new)


def form_fields(rubric: Rubric) -> dict[str, str]:
    """The form filled in with ``rubric``: what the editor shows first."""
    fields = {"points": f"{rubric.points:g}", "notes": rubric.notes or ""}
    for i, c in enumerate(rubric.criteria):
        fields |= {
            f"c{i}_id": c.id,
            f"c{i}_description": c.description,
            f"c{i}_points": f"{c.points:g}",
            f"c{i}_key_points": "\n".join(c.key_points),
            f"c{i}_levels": "\n".join(f"{lv.points:g}: {lv.descriptor}" for lv in c.levels),
            f"c{i}_wrong_claims": "\n".join(
                w.claim + (f" | {w.points:g}" if w.points is not None else "")
                for w in c.wrong_claims
            ),
        }
    if rubric.conclusion is not None:
        k = rubric.conclusion
        fields |= {
            "conclusion_kind": k.kind,
            "conclusion_expected": k.expected,
            "conclusion_accepted": "\n".join(k.accepted),
            "conclusion_wrong": "\n".join(k.wrong),
            "conclusion_cap": "" if k.cap is None else f"{k.cap:g}",
            "conclusion_gate": "on" if k.gate else "",
        }
    fields["anchors"] = "\n".join(
        f"{a.id}: " + " ".join(f"{cid}={p:g}" for cid, p in a.scores.items())
        for a in rubric.anchors
    )
    return fields


def file_diff(exam: Exam, before: Rubric, after: Rubric) -> list[str]:
    """The lines of the question's rubric file that saving ``after`` removes (-) and adds (+):
    the file as it is on this host, edited as a save edits it."""
    full, minimal = (after.model_dump(mode="json", exclude={"version"}, exclude_defaults=d)
                     for d in (False, True))  # fmt: skip
    path = rubric_dir(exam.path) / f"{after.question_id}.yaml"
    try:
        old = path.read_text(encoding="utf-8")
        new = edited_text(old, full, minimal) or yaml_text(full)
    except OSError:  # no file yet (a derived rubric): the whole of it is new
        old = yaml_text(before.model_dump(mode="json", exclude={"version"}, exclude_defaults=True))
        new = yaml_text(minimal)
    return [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    question: Question,
    current: Rubric,
    *,
    fields: dict[str, str],
    preview: Rubric | None = None,
    error: str | None = None,
) -> HTMLResponse:
    return ctx.render(
        request,
        "rubric_edit.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        question=question,
        rubric=current,
        fields=fields,
        rows=max(criterion_rows(current), _rows_given(fields)),
        kinds=KINDS,
        preview=preview,
        diff=file_diff(exam, current, preview) if preview is not None else [],
        cap=cap_share(preview.conclusion) if preview and preview.conclusion else None,
        history=ctx.store.rubrics.history(exam.name, question.id, limit=10),
        exam_claims=propose(exam.bank, question, current),
        done=DONE.get(request.query_params.get("done") or ""),
        here=question_url(exam.name, question.id),
        error=error,
    )


def _rows_given(fields: dict[str, str]) -> int:
    """Rows a re-shown form had (one more than its last criterion), up to the limit."""
    given = [i for i in range(MAX_CRITERIA) if fields.get(f"c{i}_id")]
    return min(max(given, default=-1) + 2, MAX_CRITERIA)
