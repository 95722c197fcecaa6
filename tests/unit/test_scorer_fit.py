"""fit_default on synthetic rows: both stages, the copy rule, the judge's scorer first when it
read the answer, confidence models for every kind of grade (no model, no table)."""

import numpy as np
import pytest

from grader.calibrate.scorer_cv import cv_grades, grade_rows
from grader.calibrate.scorer_fit import (
    SETTINGS,
    STAGE2,
    ScorerDesign,
    fit_default,
    fit_stages,
    with_judge,
)
from grader.calibrate.scorer_rows import Neighbours, ScorerRow, setting_features
from grader.engine.scoring.scorer_model import AnswerFeatures


def _rows(seed: int = 0, questions: int = 12, answers: int = 20) -> list[ScorerRow]:
    """Signals that track a hidden share with noise; the judge reads every other answer; the
    last answer of each question repeats the first one's text (a copy)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        shares = rng.uniform(0, 1, answers)
        for a, share in enumerate(shares):

            def noisy(scale: float, share: float = share) -> float:
                return float(share + rng.normal(0, scale))

            features = AnswerFeatures(
                reference_margin=noisy(0.3) * 0.1,
                semantic_coverage=noisy(0.3),
                ngram_coverage=noisy(0.3),
                length_log_ratio=noisy(0.5),
            )
            judge = {"share": min(1.0, max(0.0, noisy(0.15))), "entropy": 0.3} if a % 2 else None
            rows.append(ScorerRow(id=f"q{q}-a{a}", question=f"q{q}", share=float(share),
                                  points=5, features=features, judge=judge))  # fmt: skip
    for q in range(questions):
        mine = [r for r in rows if r.question == f"q{q}"]
        graded = {r.id for r in mine[:5]}
        for me in mine:
            others = [r for r in mine if r.id != me.id]
            sims = {r.id: float(0.8 + 0.19 * (1 - abs(r.share - me.share))) for r in others}
            copy = {mine[0].id, mine[-1].id}
            for setting, pool in (("graded5", graded), ("all_other", {r.id for r in others})):
                if setting == "graded5" and me.id in graded:
                    continue
                eligible = sorted((i for i in pool if i != me.id and {i, me.id} != copy),
                                  key=lambda i: -sims[i])  # fmt: skip
                identical = [i for i in pool if {i, me.id} == copy]
                me.neighbours[setting] = Neighbours(
                    ids=eligible, sims=[sims[i] for i in eligible], identical=identical
                )
    return rows


def test_both_stages_are_fit_and_explainable():
    rows = _rows()
    scorers = fit_default(
        rows, ScorerDesign(bands=(("all_other", 20, STAGE2), ("graded5", 5, STAGE2)))
    )
    assert [s.name for s in scorers.first_stage] == ["signals"]
    assert all(c > 0 for s in scorers.first_stage for c in s.coef)
    assert [(g.name, g.min_graded) for g in scorers.bands] == [("graded20+", 20), ("graded5+", 5)]
    assert scorers.first_stage[0].trained_on["answers"] == len(rows)
    assert {c.name for c in scorers.confidence} == {"graded", "signals"}


def test_graded_rows_are_decided_as_production_decides():
    rows = _rows()
    scorers = fit_stages(rows, ScorerDesign())
    graded = grade_rows(rows, scorers, ["none", "all_other"])
    copies = [g for g in graded if g.decided == "copy"]
    assert {g.row.id for g in copies} == {f"q{q}-a{a}" for q in range(12) for a in (0, 19)}
    for g in copies:  # the copy takes its twin's human share
        twin = g.row.neighbours["all_other"].identical[0]
        assert g.share == pytest.approx(next(r.share for r in rows if r.id == twin))
    staged = [g for g in graded if g.setting == "all_other" and g.decided != "copy"]
    # 18 or 19 neighbours: below the 20+ band, so the 5+ one (no 10+ band without its setting)
    assert {g.decided for g in staged} == {"graded5+"}
    none = [g for g in graded if g.setting == "none"]
    assert len(none) == len(rows) and {g.decided for g in none} == {"signals"}


def test_the_judge_scorer_decides_where_the_judge_read_the_answer():
    rows = _rows()
    design = with_judge(ScorerDesign())
    scorers = fit_default(rows, design)
    assert scorers.first_stage[0].name == "judge+signals"
    assert scorers.first_stage[0].trained_on["answers"] == sum(r.judge is not None for r in rows)
    names = {c.name for c in scorers.confidence}
    assert {"graded+judge", "judge", "signals"} <= names
    shares = {r.id: r.share for r in rows}
    read, unread = rows[1], rows[2]
    assert scorers.score(setting_features(read, "none", shares, None))[0] == "judge+signals"
    assert scorers.score(setting_features(unread, "none", shares, None))[0] == "signals"
    # out-of-fold grades with the judge beat the signals alone on this synthetic data
    oof = {g.row.id: g.share for g in cv_grades(rows, lambda t: fit_stages(t, design), ["none"])}
    plain = {
        g.row.id: g.share
        for g in cv_grades(rows, lambda t: fit_stages(t, ScorerDesign()), ["none"])
    }
    judged = [r for r in rows if r.judge is not None]
    error = lambda found: np.mean([abs(found[r.id] - r.share) for r in judged])  # noqa: E731
    assert error(oof) < error(plain)
    assert set(SETTINGS) == {"none", "graded5", "graded10", "all_other"}


def test_a_judge_scorer_fit_on_one_language_serves_that_language_only():
    rows = _rows()
    for row in rows:  # questions 0-5 English, 6-11 Chinese; the judge read both
        language = "en" if int(row.question[1:]) < 6 else "zh"
        row.features = row.features.model_copy(update={"language": language})
    scorers = fit_stages(rows, with_judge(ScorerDesign(), languages=("en",)))
    first = scorers.first_stage[0]
    assert first.name == "judge+signals" and first.languages == ["en"]
    english = [r for r in rows if r.features.language == "en" and r.judge is not None]
    assert first.trained_on["answers"] == len(english)
    shares = {r.id: r.share for r in rows}
    read_zh = next(r for r in rows if r.features.language == "zh" and r.judge is not None)
    read_en = english[0]
    assert scorers.score(setting_features(read_en, "none", shares, None))[0] == first.name
    # a Chinese answer the judge read is scored from the signals: its reading is not trusted
    assert scorers.score(setting_features(read_zh, "none", shares, None))[0] == "signals"
    unknown = read_en.own_features().model_copy(update={"language": None})
    assert scorers.base(unknown)[0] == "signals"
    # the reading is dropped where it is not weighed, so a confidence model fit on judged
    # English grades never rates a Chinese one
    assert scorers.usable(read_zh.own_features()).judge_share is None
    assert scorers.usable(read_en.own_features()).judge_share == read_en.judge.share
