"""Calibration against an instructor's grades: agreement metrics, disagreement lists, anchors
promoted from graded answers, and per-question score mapping.

Everything here is a pure function over pydantic models, so the CLI and a web page share it:

- ``tables``: read the instructor's CSV, join it with the judge's grades;
- ``metrics``: agreement figures with bootstrap intervals;
- ``summary``: overall / per question / per criterion, largest disagreements, before vs after;
- ``mapping``: isotonic score mapping, cross-validated;
- ``anchors``: graded answers -> rubric anchors;
- ``report``: the HTML report with plots (imports matplotlib only when called).
"""

from grader.calibrate.anchors import promote_anchors
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
    "promote_anchors",
    "question_scales",
    "read_answers",
    "read_human_scores",
    "save_mapping",
]
