"""What the claims step says (``finish.verified``): each criterion's line of why, with the
clause that verified it, and the review reasons a bounded grade gets. A part only the judge's
claim check stated is named as such: it has no quote, and it may be wrong."""

from __future__ import annotations

from grader.models import ClaimsCheck, CriterionScore, PartReading, ReviewCode, ReviewReason, Rubric


def criterion_line(
    c: CriterionScore, points: float, asserted: list[PartReading], check: ClaimsCheck
) -> CriterionScore:
    """The criterion's points, its evidence (the clause that verified it, or the scorer's
    span when it keeps unverified points) and one line of why."""
    zh = check.language == "zh"
    if asserted:
        asserted = sorted(asserted, key=lambda p: p.by == "judge")  # the rules' evidence first
        said = "；".join(p.claim for p in asserted)
        if c.id in check.set_aside:  # its listed wrong claim is asserted too
            why = (f"不计验证：同时断言了本项的错误说法（{said}）" if zh
                   else f"not verified: its listed wrong claim is asserted too ({said})")  # fmt: skip
        elif asserted[0].by == "judge":  # no quote: the judge's claim check stated it
            why = (f"评判模型读出：{said}" if zh
                   else f"stated, as the judge's claim check reads it: {said}")  # fmt: skip
        else:
            why = f"已验证：{said}" if zh else f"verified: {said}"
        return c.model_copy(update={"points": points, "evidence": asserted[0].evidence,
                                    "rationale": why})  # fmt: skip
    if points <= 0:
        why = "未找到其要点的表述" if zh else "no statement of its content found"
        return c.model_copy(update={"points": 0.0, "evidence": "", "rationale": why})
    share = f"{check.unverified_share:.0%}"
    why = (f"未验证：按相似度给分，至多{share}" if zh
           else f"not verified: scored by similarity, at most {share}")  # fmt: skip
    # no sentence of the answer was read to carry this criterion's content: no evidence
    return c.model_copy(update={"points": points, "evidence": "", "rationale": why})


def contradicted_line(
    c: CriterionScore, points: float, part: PartReading, language: str
) -> CriterionScore:
    """A criterion the answer contradicts: the sentence that does, and the part it denies."""
    why = f"与要点相反：{part.claim}" if language == "zh" else f"contradicts: {part.claim}"
    return c.model_copy(update={"points": points, "evidence": part.evidence, "rationale": why})


def contradicted_reason(parts: list[PartReading], score: float, rubric: Rubric) -> ReviewReason:
    named = "; ".join(f"{p.criterion} «{p.claim}» denied by «{p.evidence[:60]}»" for p in parts)
    return ReviewReason(
        code=ReviewCode.CONTRADICTED,
        message=f"the answer contradicts a decisive part ({named}) yet keeps {score:g} of "
        f"{rubric.points:g} points: a person decides which reading stands",
    )


def unverified_reason(check: ClaimsCheck) -> ReviewReason:
    judged = _judged_note(check)
    if judged:
        message = (f"no decisive part of any criterion was found asserted by the rules; only "
                   f"{judged}, with no quote")  # fmt: skip
    else:
        message = (f"no decisive part of any criterion was found asserted: the grade rests on "
                   f"similarity alone, each criterion capped at {check.unverified_share:.0%} "
                   f"of its points")  # fmt: skip
    return ReviewReason(code=ReviewCode.UNVERIFIED, message=message)


def thin_reason(check: ClaimsCheck, ruled: float, score: float, rubric: Rubric) -> ReviewReason:
    judged = _judged_note(check)
    besides = f" (besides, {judged}, with no quote)" if judged else ""
    return ReviewReason(
        code=ReviewCode.THINLY_VERIFIED,
        message=f"{score:g} of {rubric.points:g} points, of which only {ruled:g} were verified "
        f"by what the answer asserts{besides}: the rest rests on similarity, which a fluent "
        f"wrong answer has too; a person decides",
    )


def _judged_note(check: ClaimsCheck) -> str:
    """What the judge's claim check stated, which the rules did not: it may be wrong."""
    stated = sorted({p.criterion for p in check.parts if p.by == "judge"})
    return f"the judge's claim check stated parts of {', '.join(stated)}" if stated else ""
