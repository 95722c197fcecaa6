"""Calibration against an instructor's grades: agreement metrics, disagreement lists, anchors
promoted from graded answers, and per-question score mapping.

Everything here is a pure function over pydantic models (but ``save_promotions``, which writes
the new rubric files), so the CLI and a web page share it:

- ``tables``: read the instructor's CSV, join it with the judge's grades;
- ``metrics``: agreement figures with bootstrap intervals;
- ``summary``: overall / per question / per criterion, largest disagreements, before vs after;
- ``mapping``: isotonic score mapping, cross-validated;
- ``promote``: graded answers -> rubric anchors, the flow the CLI and the pages share;
- ``report``: the HTML report with plots (imports matplotlib only when called).
"""

from grader.calibrate.mapping import (
    MappingCheck,
    ScoreMapping,
    apply_mapping,
    cross_validate,
    fit_mapping,
    load_mapping,
    save_mapping,
)
from grader.calibrate.metrics import Agreement, Estimate, agreement
from grader.calibrate.promote import Promotion, plan_promotions, promote_anchors, save_promotions
from grader.calibrate.summary import Calibration, Comparison, Disagreement, calibrate, compare
from grader.calibrate.tables import (
    HumanScore,
    Pairing,
    Scale,
    ScorePair,
    pair_scores,
    question_scales,
    read_answers,
    read_human_scores,
)

__all__ = [
    "Agreement",
    "Calibration",
    "Comparison",
    "Disagreement",
    "Estimate",
    "HumanScore",
    "MappingCheck",
    "Pairing",
    "Promotion",
    "Scale",
    "ScoreMapping",
    "ScorePair",
    "agreement",
    "apply_mapping",
    "calibrate",
    "compare",
    "cross_validate",
    "fit_mapping",
    "load_mapping",
    "pair_scores",
    "plan_promotions",
    "promote_anchors",
    "question_scales",
    "read_answers",
    "read_human_scores",
    "save_mapping",
    "save_promotions",
]
