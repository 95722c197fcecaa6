"""``grader calibrate fit`` and ``grader calibrate rescore``: the scorer refit on an
instructor's grades, and grades scored again by it — from what the grades recorded, without
calling the judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from grader.cli.app import console, err, fail
from grader.cli.calibrate import calibrate_app, calibration_inputs, pairing_of
from grader.errors import ConfigError, GraderError

_Human = Annotated[
    Path,
    typer.Option("--human", help="CSV: submission_id, question_id, score (as `grader calibrate`)."),
]
_Submissions = Annotated[
    Path | None,
    typer.Option(
        help="Submissions JSONL: the answers' texts, so your scored answers count as graded "
        "neighbours and copies (needs an embedding model for neighbours)."
    ),
]
_Bank = Annotated[
    Path | None,
    typer.Option(
        "--bank", help="Bank YAML: point scales from the bank and its rubrics; anchors left out."
    ),
]


@calibrate_app.command("fit")
def calibrate_fit(
    human: _Human,
    grades: Annotated[Path, typer.Option("--grades", help="Grades JSONL from `grader grade`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The scorer file to write.")],
    bank_path: _Bank = None,
    submissions: _Submissions = None,
    base: Annotated[
        str | None,
        typer.Option(
            help="The scorer to refit: 'default' or a scorer file (default: the exam's "
            "scorer.json with --bank, else the shipped one)."
        ),
    ] = None,
    folds: Annotated[int, typer.Option(min=2, help="Folds, whole questions held out.")] = 5,
    bootstrap: Annotated[int, typer.Option(min=0, help="Resamples for 95 % intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Refit the scorer on your grades: the weights of its signals (the judge's points, the
    answer's closeness to the reference and key points, …) learned from the answers you
    scored, from the features their grades recorded — no model, no judge call.

    Prints agreement with your scores BEFORE (the grades as they are) and AFTER (each answer
    graded by a refit that never saw its question), with 95 % intervals. Needs 30 answers
    you scored on 3 questions at least.
    """
    from grader.calibrate.refit import refit
    from grader.calibrate.refit_rows import refit_answers
    from grader.calibrate.tables import read_answers
    from grader.engine.scoring.scorer_choice import choose_scorer, scorer_setting
    from grader.engine.scoring.scorer_model import to_json
    from grader.files.grades import read_grades

    try:
        humans, scales, anchors = calibration_inputs(human, bank_path)
        answers = read_answers(submissions) if submissions else None
        pairing = pairing_of(humans, grades, human, scales, answers, anchors)
        chosen = choose_scorer(scorer_setting(base), bank_path)
        if chosen.scorer is None:
            raise ConfigError("--base none: there is no scorer to refit")
        newest = {g.submission_id: g for g in read_grades(grades)}
        rows, notes = refit_answers(pairing.pairs, newest, chosen.scorer)
        vectors = _vectors({r.id: r.answer for r in rows if r.answer is not None}, notes)
        result = refit(
            chosen.scorer, rows, vectors, folds=folds, bootstrap=bootstrap, seed=seed, notes=notes
        )
    except GraderError as exc:
        raise fail(exc) from exc
    _write_atomically(out, to_json(result.scorer))
    if as_json:
        report = result.model_dump(mode="json", exclude={"scorer"})
        print(json.dumps({"scorer_version": result.scorer.version, **report}, indent=1))
    else:
        from grader.cli.calibrate_tables import print_refit

        print_refit(result)
    err.print(
        escape(
            f"wrote {out} (version {result.scorer.version}). Grade with it: grader grade "
            f"--scorer {out}, or put it beside the exam's rubrics as scorer.json; re-score "
            f"these grades without the judge: grader calibrate rescore {grades} --scorer {out} "
            "--out NEW.jsonl"
        )
    )


@calibrate_app.command("rescore")
def calibrate_rescore(
    grades: Annotated[Path, typer.Argument(help="Grades JSONL to score again.")],
    scorer_choice: Annotated[
        str, typer.Option("--scorer", help="A scorer file (`grader calibrate fit`) or 'default'.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Grades JSONL to write.")],
    human: Annotated[
        Path | None,
        typer.Option(
            help="Your scored answers (CSV): graded neighbours and copies, as in grading."
        ),
    ] = None,
    submissions: _Submissions = None,
    bank_path: _Bank = None,
) -> None:
    """Score grades again with another scorer from the features they recorded: no judge call.

    The previous score stays in details.rescored_from; compare the two files with
    `grader calibrate --human H.csv --grades NEW.jsonl --compare GRADES.jsonl`.
    """
    from grader.config import Settings
    from grader.engine.finish.rescored import rescore_grades
    from grader.engine.review.queue import rank_grades, unranked
    from grader.engine.scoring.scorer_choice import choose_scorer, scorer_setting
    from grader.errors import CalibrationError
    from grader.files.grades import GradeWriter, read_grades

    try:
        if out.resolve() == grades.resolve():
            raise CalibrationError(
                "--out must be a new file, not the grades it re-scores", file=out
            )
        if not grades.is_file():
            raise CalibrationError("no such grades file", file=grades)
        scorer = choose_scorer(scorer_setting(scorer_choice)).scorer
        if scorer is None:
            raise CalibrationError("--scorer none: nothing to re-score with", file=out)
        # the scorer re-decides its own review reasons, then the queue is ranked again
        found = [unranked(g) for g in read_grades(grades)]
        graded, answers, vectors, rubrics = _neighbours(human, submissions, bank_path, found)
        settings = Settings()
        result = rescore_grades(
            found, scorer, settings.review.below_confidence,
            graded=graded, answers=answers, vectors=vectors, rubrics=rubrics,
        )  # fmt: skip
        result.grades = rank_grades(result.grades, settings.review.share)
    except GraderError as exc:
        raise fail(exc) from exc
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.unlink(missing_ok=True)
    with GradeWriter(tmp) as writer:
        writer.write(result.grades)
    tmp.replace(out)
    console.print(
        f"wrote {escape(str(out))}: {result.rescored} grade(s) re-scored with scorer "
        f"{escape(str(scorer.version))} "
        f"({result.changed} changed), {result.kept} kept as they were (not decided by a "
        "scorer, or lacking its features); the previous scores are in details.rescored_from"
    )
    if graded is not None:
        console.print(
            f"{result.neighbours} answer(s) you scored served as graded neighbours"
            + (
                f"; {len(result.unused)} could not (no grade the scorer decided)"
                if result.unused
                else ""
            )
            + ("" if vectors else " (as copies only: no embedding model)")
        )


def _neighbours(human: Path | None, submissions: Path | None, bank_path: Path | None, found):
    """The instructor's answers as graded neighbours: (graded, texts, vectors, rubrics)."""
    from grader.calibrate.tables import pair_scores, read_answers
    from grader.errors import CalibrationError

    rubrics = _rubrics(bank_path)
    if human is None:
        if submissions is not None:
            raise CalibrationError("--submissions serves --human: pass both", file=submissions)
        return None, {}, None, rubrics
    if submissions is None:
        raise CalibrationError(
            "--human needs --submissions: the answers' texts find the neighbours", file=human
        )
    humans, scales, _ = calibration_inputs(human, bank_path)
    answers = read_answers(submissions)
    pairing = pair_scores(humans, found, human_file=human, scales=scales, answers=answers)
    from grader.models import GradedAnswer

    graded = [
        GradedAnswer(
            id=p.submission_id,
            question_id=p.question_id,
            answer=answers[p.submission_id],
            score=p.human,
        )
        for p in pairing.pairs
    ]
    notes: list[str] = []
    vectors = _vectors(answers, notes)
    for note in notes:
        err.print(f"[yellow]note:[/] {escape(note)}")
    return graded, answers, vectors, rubrics


def _rubrics(bank_path: Path | None) -> dict:
    if bank_path is None:
        return {}
    from grader.bank.files import load_bank
    from grader.engine.reading.rubrics import load_rubrics, rubric_for

    bank = load_bank(bank_path)
    rubrics = load_rubrics(bank_path, bank)
    return {q.id: rubric_for(q, rubrics) for q in bank.questions if not q.type.objective}


def _vectors(texts: dict[str, str], notes: list[str]):
    """Unit vectors of the answers (grader.embed's cached encoder), or None — with a note —
    when GRADER_EMBED_MODEL is 'none' or there are no texts."""
    from grader.config import Settings
    from grader.embed import make_embedder

    if not texts:
        notes.append("no answer texts (--submissions): graded answers are not neighbours")
        return None
    embedder = make_embedder(Settings(), progress=lambda m: err.print(escape(m)))
    if embedder is None:
        notes.append(
            "GRADER_EMBED_MODEL=none: graded answers count as copies of an answer's text only, "
            "not as neighbours"
        )
        return None
    ids = list(texts)
    return dict(zip(ids, embedder.encode([texts[i] for i in ids]), strict=True))


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
