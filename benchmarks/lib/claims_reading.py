"""Claims read by rules and by wording, on the claim-reading development set.

``shared/data/claims/claims_90.jsonl`` holds 30 claims C, each with three answers: one stating
C in other words, one stating its contradiction ¬C, one on the topic saying neither. Each
answer is read for C by three readers, as the grade reads a listed wrong claim:

- ``wording``: the older matcher, C as a wrong claim without patterns
  (``finish.wrong_claims``: 3-gram containment of C's wording beyond the question stem,
  ``CLAIM_CONTAINMENT``, negation words nearby);
- ``rules_strict``: ``claims.rules.read_claim`` with the claim's patterns, ``strict=True``
  (as a wrong claim is read: a two-group pattern holds in one clause);
- ``rules``: the same patterns, ``strict=False`` (as a criterion's part is read).

Per reader, overall and split by whether C is true in the world: recall (C answers read
asserted), false "asserted" on ¬C and on neither answers, ¬C answers read negated, neither
answers read negated, answers read as labelled (3-way); and one line per claim. The patterns are a data file, claim id →
patterns: ``benchmarks/labels/claims_90_patterns.json`` was written blind (from C, ¬C and the
question, before any answer was read); ``claims_90_patterns_tuned.json`` was tuned on this
set afterwards, so its figures are not a measure. Development data; no model is loaded.

    python -m benchmarks.seed_kinds --claims-set [--patterns benchmarks/labels/claims_90_patterns.json]
        [--out benchmarks/results/claims_reading_blind.json]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.lib.common import ROOT
from grader.engine.finish.wrong_claims import wrong_claims
from grader.engine.reading.claims.patterns import PatternError, parse_group
from grader.engine.reading.claims.rules import ReadAnswer, RuleStatus, read_claim
from grader.engine.signals.copies import char_ngrams
from grader.models import Criterion, Rubric, WrongClaim

BLIND_PATTERNS = ROOT / "benchmarks" / "labels" / "claims_90_patterns.json"
LABELS = ("C", "notC", "neither")
RIGHT: dict[str, RuleStatus] = {"C": "asserted", "notC": "negated", "neither": "absent"}
READERS = ("wording", "rules_strict", "rules")
FIELDS = ("claim_id", "C", "notC", "C_true", "question", "answer", "label")

Patterns = list[list[str]]


def load_rows(path: Path) -> list[dict]:
    """The set's answers; a line that is not a complete row fails naming the file and line."""
    if not path.is_file():
        raise SystemExit(f"{path}: no such file (the claims set lives in shared/data/claims)")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}, line {number}: not JSON ({exc})") from exc
        missing = [f for f in FIELDS if f not in row]
        if missing or row["label"] not in LABELS:
            raise SystemExit(f"{path}, line {number}: missing {missing} or label not in {LABELS}")
        rows.append(row)
    return rows


def load_patterns(path: Path) -> dict[int, Patterns]:
    """Claim id → patterns (``{"patterns": {id: [[group, ...], ...]}}``); every group is
    parsed here, so a bad one fails naming its claim before anything is read."""
    try:
        written = json.loads(path.read_text(encoding="utf-8"))["patterns"]
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise SystemExit(f"{path}: no readable 'patterns' mapping ({exc})") from exc
    for claim, patterns in written.items():
        for pattern in patterns:
            for group in pattern:
                try:
                    parse_group(group)
                except PatternError as exc:
                    raise SystemExit(f"{path}, claim {claim}: {exc}") from exc
    return {int(claim): patterns for claim, patterns in written.items()}


def wording_status(answer: str, claim: str, question: str) -> RuleStatus:
    """The older reader: ``claim`` listed as a wrong claim without patterns, read by its
    wording through the production function."""
    rubric = Rubric(
        question_id="claims_90",
        points=1,
        criteria=[
            Criterion(id="C1", description=claim, points=1, wrong_claims=[WrongClaim(claim=claim)])
        ],
    )
    found = wrong_claims(answer, rubric, char_ngrams(question))
    if not found:
        return "absent"
    return "negated" if all(f.negated for f in found) else "asserted"


def readings(row: dict, patterns: Patterns) -> dict[str, RuleStatus]:
    """One answer read for its claim C by each reader."""
    read = ReadAnswer.of(row["answer"])
    return {
        "wording": wording_status(row["answer"], row["C"], row["question"]),
        "rules_strict": read_claim(read, patterns, strict=True).status,
        "rules": read_claim(read, patterns, strict=False).status,
    }


def read_set(rows: Sequence[dict], patterns: dict[int, Patterns]) -> list[dict]:
    """Every answer with its label and the readers' statuses; a claim without patterns fails."""
    missing = sorted({r["claim_id"] for r in rows} - set(patterns))
    if missing:
        raise SystemExit(f"no patterns for claim(s) {missing}")
    return [
        {
            "claim_id": r["claim_id"],
            "C_true": bool(r["C_true"]),
            "label": r["label"],
            **readings(r, patterns[r["claim_id"]]),
        }
        for r in rows
    ]


def figures(read: Sequence[dict], reader: str) -> dict:
    """One reader's counts: recall on C answers, false "asserted" on ¬C and neither, ¬C read
    negated, neither read negated, and every answer read as its label says (C asserted, ¬C
    negated, neither absent: comparable with a 3-way choice); each as [count, answers, share]."""

    def share(label: str, status: RuleStatus) -> list:
        xs = [r for r in read if r["label"] == label]
        hits = sum(r[reader] == status for r in xs)
        return [hits, len(xs), round(hits / len(xs), 3) if xs else None]

    right = sum(r[reader] == RIGHT[r["label"]] for r in read)

    return {
        "recall_C_asserted": share("C", "asserted"),
        "notC_false_asserted": share("notC", "asserted"),
        "neither_false_asserted": share("neither", "asserted"),
        "notC_negated": share("notC", "negated"),
        "neither_negated": share("neither", "negated"),
        "three_way_right": [right, len(read), round(right / len(read), 3) if read else None],
    }


def summary(read: Sequence[dict]) -> dict:
    """Per reader: over all claims, over the claims true in the world, over the false ones."""
    return {
        reader: {
            "all": figures(read, reader),
            "C_true": figures([r for r in read if r["C_true"]], reader),
            "C_false": figures([r for r in read if not r["C_true"]], reader),
        }
        for reader in READERS
    }


def per_claim(read: Sequence[dict], rows: Sequence[dict]) -> list[dict]:
    """One line per claim: C, whether it is true, and each reader's status per answer label."""
    claims = {r["claim_id"]: r["C"] for r in rows}
    lines = []
    for claim_id in sorted(claims):
        mine = {r["label"]: r for r in read if r["claim_id"] == claim_id}
        lines.append(
            {
                "claim_id": claim_id,
                "C_true": next(iter(mine.values()))["C_true"],
                "C": claims[claim_id],
                **{
                    reader: {label: mine[label][reader] for label in LABELS if label in mine}
                    for reader in READERS
                },
            }
        )
    return lines
