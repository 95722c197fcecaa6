"""benchmarks.claims_reading on three claims of the claim-reading set (``claims_90_sample``:
claims 0, 10 and 11, their nine answers as the set has them), read with the blind patterns:
the readers' statuses, the figures they add up to, and bad input that names where it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.lib.claims_reading import (
    BLIND_PATTERNS,
    load_patterns,
    load_rows,
    per_claim,
    read_set,
    summary,
)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "claims_90_sample.jsonl"


@pytest.fixture(scope="module")
def read() -> tuple[list[dict], list[dict]]:
    rows = load_rows(SAMPLE)
    return rows, read_set(rows, load_patterns(BLIND_PATTERNS))


def test_each_answer_is_read_by_each_reader(read) -> None:
    rows, readings = read
    assert len(rows) == len(readings) == 9
    status = {(r["claim_id"], r["label"]): r for r in readings}
    # rules read the paraphrases; the wording reader finds none of them
    for claim in (0, 10, 11):
        assert status[claim, "C"]["rules_strict"] == "asserted"
        assert status[claim, "C"]["wording"] == "absent"
        assert status[claim, "neither"]["rules_strict"] == "absent"
    assert status[0, "notC"]["rules_strict"] == "negated"  # "並沒有省下算力"
    # "比ZeRO-2還少" repeats the claim's wording: the wording reader takes it as asserted
    assert status[11, "notC"]["wording"] == "asserted"


def test_the_figures_count_the_readings(read) -> None:
    rows, readings = read
    figures = summary(readings)
    assert figures["rules_strict"]["all"]["recall_C_asserted"] == [3, 3, 1.0]
    assert figures["wording"]["all"]["notC_false_asserted"] == [1, 3, 0.333]
    # claim 0 is false in the world, 10 and 11 are true
    assert figures["rules_strict"]["C_false"]["notC_negated"] == [1, 1, 1.0]
    assert figures["rules_strict"]["C_true"]["recall_C_asserted"] == [2, 2, 1.0]
    # C, ¬C and neither read right for all three claims ("還少" is a direction word now)
    assert figures["rules_strict"]["all"]["three_way_right"] == [9, 9, 1.0]
    lines = per_claim(readings, rows)
    assert [c["claim_id"] for c in lines] == [0, 10, 11]
    assert lines[2]["wording"] == {"C": "absent", "notC": "asserted", "neither": "absent"}


def test_bad_input_names_where_it_is(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"claim_id": 0}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"rows\.jsonl, line 1: missing"):
        load_rows(rows)
    patterns = tmp_path / "patterns.json"
    patterns.write_text(json.dumps({"patterns": {"3": [["学习率", "@sideways"]]}}), "utf-8")
    with pytest.raises(SystemExit, match=r"claim 3: .*unknown class"):
        load_patterns(patterns)
    with pytest.raises(SystemExit, match=r"no patterns for claim\(s\) \[0, 10, 11\]"):
        read_set(load_rows(SAMPLE), {})
