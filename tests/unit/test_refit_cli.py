"""The instructor's refit from the command line: `grader grade --graded/--scorer`, the exam's
own scorer.json, `grader calibrate fit` and `grader calibrate rescore`, on the 126 hand-graded
seed answers to the six essay questions of grad_accum_engineer (the scripted judge, the
deterministic CountingEmbedder standing in for e5)."""

import csv
import json
import shutil

import pytest
from typer.testing import CliRunner

import grader.embed
from grader.cli import app
from grader.engine.scoring.scorer_model import load_scorer, to_json
from grader.files.grades import read_grades
from tests.conftest import ROOT, RUBRICS
from tests.embedders import CountingEmbedder

EXAM = "grad_accum_engineer"
runner = CliRunner()


def invoke(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def seed_answers():
    rows = []
    for name in ("seed_answers.jsonl", "seed_answers_2.jsonl"):
        for line in (ROOT / "tests" / "data" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["question_id"].startswith("004-"):
                rows.append(row)
    return rows


@pytest.fixture(scope="module")
def exam(tmp_path_factory):
    """The exam, its answers, the instructor's CSV and grades from `grader grade`."""
    folder = tmp_path_factory.mktemp("exam")
    shutil.copy(RUBRICS / f"{EXAM}.yaml", folder / f"{EXAM}.yaml")
    shutil.copytree(RUBRICS / EXAM, folder / EXAM)
    answers = seed_answers()
    subs = folder / "answers.jsonl"
    subs.write_text(
        "".join(
            json.dumps({k: a[k] for k in ("id", "question_id", "student", "answer")}) + "\n"
            for a in answers
        ),
        encoding="utf-8",
    )
    human = folder / "human.csv"
    with human.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission_id", "question_id", "score"])
        writer.writerows([a["id"], a["question_id"], a["human_total"]] for a in answers)
    with pytest.MonkeyPatch.context() as mp:
        counting(mp)
        out = folder / "grades.jsonl"
        result = invoke(
            "grade", subs, "--bank", folder / f"{EXAM}.yaml", "--out", out, "--judge", "scripted"
        )
        assert result.exit_code == 0, result.output
    return {"dir": folder, "bank": folder / f"{EXAM}.yaml", "subs": subs, "human": human,
            "grades": out, "answers": answers}  # fmt: skip


def counting(mp):
    """Embeddings from the deterministic double wherever grader asks for the model."""
    mp.setenv("GRADER_EMBED_MODEL", "multilingual-e5-small")
    mp.setattr(grader.embed, "make_embedder", lambda settings, progress=None: CountingEmbedder())


def grade_args(exam, out, *more):
    return ("grade", exam["subs"], "--bank", exam["bank"], "--out", out, "--judge", "scripted",
            *more)  # fmt: skip


@pytest.fixture
def fitted(exam, tmp_path, monkeypatch):
    counting(monkeypatch)
    out = tmp_path / "scorer.json"
    result = invoke(
        "calibrate", "fit", "--human", exam["human"], "--grades", exam["grades"],
        "--bank", exam["bank"], "--submissions", exam["subs"], "--out", out,
        "--bootstrap", 50, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout[result.stdout.index("{") :])


def test_fit_reports_before_and_after_and_writes_a_versioned_scorer(exam, fitted):
    path, report = fitted
    scorer, default = load_scorer(str(path)), load_scorer("default")
    assert report["scorer_version"] == scorer.version != default.version
    # the answers the scorer graded (the others score 0 by rule: off topic, blank)
    scored = {
        g.submission_id: g.score for g in read_grades(exam["grades"]) if g.details.has("scorer")
    }
    assert report["answers"] == len(scored) > 60
    assert report["questions"] == 6 and report["folds"] == 5
    assert any("were not graded by the scorer" in note for note in report["notes"])
    before, after = report["comparison"]["before"], report["comparison"]["after"]
    assert before["overall"]["n"] == after["overall"]["n"] == len(scored)
    for side in (before, after):
        figure = side["overall"]["mae"]
        assert figure["low"] <= figure["value"] <= figure["high"]  # with its 95 % interval
        assert len(side["questions"]) == 6
    human = {a["id"]: a["human_total"] for a in exam["answers"]}
    assert before["overall"]["mae"]["value"] == pytest.approx(
        sum(abs(score - human[sid]) for sid, score in scored.items()) / len(scored)
    )  # before is the grades as they are
    assert after["overall"]["mae"]["value"] != before["overall"]["mae"]["value"]
    assert report["neighbours"] is True and [b["min_graded"] for b in report["bands"]] == [
        b.min_graded for b in default.bands
    ]
    # the same signals, new weights, learned from the instructor's grades; the scorer for
    # English answers the judge read stays as it was (this exam is in Chinese)
    for new, old in zip(scorer.first_stage, default.first_stage, strict=True):
        if old.languages == ["en"]:
            assert new == old
            continue
        assert new.features == old.features and new.coef != old.coef
        assert new.trained_on["answers"] == len(scored)
    assert scorer.bands  # the second stage stays (refit or the base's)


def test_fit_prints_tables_without_json(exam, tmp_path, monkeypatch):
    counting(monkeypatch)
    result = invoke(
        "calibrate", "fit", "--human", exam["human"], "--grades", exam["grades"],
        "--out", tmp_path / "s.json", "--bootstrap", 20,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "BEFORE" in result.output and "AFTER" in result.output and "004-s6-q2" in result.output
    assert "no answer texts" in result.output  # without --submissions: no neighbours


def test_too_few_answers_are_refused_saying_the_minimum(exam, tmp_path):
    few = tmp_path / "few.csv"
    lines = exam["human"].read_text(encoding="utf-8").splitlines()
    few.write_text("\n".join(lines[:26]) + "\n", encoding="utf-8")
    result = invoke("calibrate", "fit", "--human", few, "--grades", exam["grades"],
                    "--out", tmp_path / "s.json")  # fmt: skip
    assert result.exit_code == 2
    assert "at least 30 answers on at least 3 questions" in " ".join(result.output.split())
    assert not (tmp_path / "s.json").exists()


def test_rescore_changes_the_grades_without_calling_the_judge(exam, fitted, tmp_path, monkeypatch):
    path, _ = fitted
    counting(monkeypatch)

    def no_judge(*args, **kwargs):
        raise AssertionError("the judge was called")

    monkeypatch.setattr("grader.judge.make_judge", no_judge)
    monkeypatch.setattr("grader.judge.scripted.ScriptedJudge.score_labels", no_judge)
    out = tmp_path / "new.jsonl"
    result = invoke(
        "calibrate", "rescore", exam["grades"], "--scorer", path, "--out", out,
        "--human", exam["human"], "--submissions", exam["subs"], "--bank", exam["bank"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    old = {g.submission_id: g for g in read_grades(exam["grades"])}
    new = {g.submission_id: g for g in read_grades(out)}
    assert new.keys() == old.keys()
    version = load_scorer(str(path)).version
    rescored = [g for g in new.values() if g.details.has("rescored_from")]
    assert len(rescored) == sum(g.details.has("scorer") for g in old.values()) > 60
    # the refit moves grades; where the rubric names decisive parts, what the answer was read
    # to assert still bounds them (engine.claims.verified), so fewer move than the scorer would
    assert sum(g.score != old[g.submission_id].score for g in rescored) > 5
    for g in rescored:
        before = old[g.submission_id]
        assert g.details.rescored_from.score == before.score
        assert g.provenance.scorer_version == g.details.scorer.version == version
        # the judge's own points, where a judge read the answer (``judging.budget``), and the split
        assert g.details.judge_points == before.details.judge_points
        assert g.details.split == before.details.split
        assert g.submission_id not in {n.id for n in g.details.scorer.neighbours}
    compared = invoke("calibrate", "--human", exam["human"], "--grades", out,
                      "--compare", exam["grades"], "--bootstrap", 0, "--json")  # fmt: skip
    assert compared.exit_code == 0, compared.output
    comparison = json.loads(compared.stdout)["comparison"]
    assert comparison["common"] == 126  # every answer, the rule-graded ones unchanged


def test_rescoring_with_the_scorer_that_graded_keeps_the_scores(exam, tmp_path):
    out = tmp_path / "same.jsonl"
    result = invoke("calibrate", "rescore", exam["grades"], "--scorer", "default", "--out", out)
    assert result.exit_code == 0, result.output
    old = {g.submission_id: g.score for g in read_grades(exam["grades"])}
    new = read_grades(out)
    same = sum(g.score == old[g.submission_id] for g in new)
    assert same >= len(new) - 2  # features are kept to 4 decimals: a rare half-point flip


def test_the_exams_own_scorer_is_used_unless_another_is_chosen(exam, fitted, tmp_path, monkeypatch):
    path, _ = fitted
    counting(monkeypatch)
    own = exam["dir"] / EXAM / "scorer.json"
    shutil.copy(path, own)
    try:
        versions = {}
        for label, more, env in (("exam", (), None), ("explicit", ("--scorer", "default"), None),
                                 ("none", (), {"GRADER_SCORER": "none"})):  # fmt: skip
            out = tmp_path / f"{label}.jsonl"
            result = invoke(*grade_args(exam, out, *more), env=env)
            assert result.exit_code == 0, result.output
            essays = [g for g in read_grades(out) if g.status == "graded" and g.method == "judge"]
            versions[label] = {g.provenance.scorer_version for g in essays}
        assert versions["exam"] == {load_scorer(str(path)).version}
        assert versions["explicit"] == {load_scorer("default").version}
        assert versions["none"] == {None}
        edited = json.loads(own.read_text(encoding="utf-8"))
        edited["signals"][0]["intercept"] += 0.1
        own.write_text(json.dumps(edited), encoding="utf-8")
        broken = invoke(*grade_args(exam, tmp_path / "broken.jsonl"))
        assert broken.exit_code == 2 and "scorer.json" in broken.output
        assert "edited by hand" in broken.output
    finally:
        own.unlink()


def test_graded_answers_from_the_csv_are_the_scorers_neighbours(exam, tmp_path, monkeypatch):
    counting(monkeypatch)
    out = tmp_path / "graded.jsonl"
    result = invoke(*grade_args(exam, out, "--graded", exam["human"]))
    assert result.exit_code == 0, result.output
    assert "126 answer(s) you scored" in result.output
    essays = [g for g in read_grades(out) if g.details.has("scorer")]
    assert essays and all(g.details.scorer.features.get("graded_count", 0) >= 19
                          for g in essays if g.details.scorer.decided_by != "copy")  # fmt: skip
    for g in essays:
        assert g.submission_id not in {n.id for n in g.details.scorer.neighbours}
        assert g.details.scorer.neighbours or g.details.scorer.copies
    bad = tmp_path / "bad.csv"
    bad.write_text("submission_id,question_id,score\nnope,004-s5-q1,1\n", encoding="utf-8")
    refused = invoke(*grade_args(exam, tmp_path / "x.jsonl", "--graded", bad))
    assert refused.exit_code == 2 and "bad.csv:2" in refused.output
    assert "its text is needed" in " ".join(refused.output.split())


def test_a_scorer_file_round_trips():
    default = load_scorer("default")
    assert load_scorer("default").model_dump() == default.model_dump()
    assert to_json(default).count('"version"') == 1
