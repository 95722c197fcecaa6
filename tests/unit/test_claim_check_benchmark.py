"""``benchmarks.seed_kinds --claim-check`` asks the development seed answers' unread parts, tables them per
language and margin, and stores the fit under the judge's model name; held-out sets are refused."""

from __future__ import annotations

import json

import pytest

from benchmarks import seed_kinds
from grader.engine.scoring import judge_trust


def test_the_fit_is_stored_with_the_model_and_the_table_counts_every_part(tmp_path):
    out, trust = tmp_path / "result.json", tmp_path / "trust.json"
    seed_kinds.main(["--claim-check", "--sets", "1", "--judge", "scripted", "--store", str(trust),
                     "--out", str(out)])  # fmt: skip
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["model"] == "coverage-script" and result["asks"] > 0
    table = result["table"]
    assert sum(t["parts"] for t in table.values()) == result["asks"]
    for t in table.values():
        stated = [m["stated"] for m in t["margins"].values()]
        assert stated == sorted(stated, reverse=True)  # a larger margin states no more
    entry = judge_trust.load(trust)["coverage-script"]
    assert entry.trust == 0.0 and entry.data == "not measured"  # no criterion fit here
    assert {k: v.model_dump() for k, v in entry.claims.items()} == result["fitted"]


def test_held_out_sets_are_refused(capsys):
    with pytest.raises(SystemExit):
        seed_kinds.main(["--claim-check", "--sets", "1,14", "--judge", "scripted"])
    assert "held out" in capsys.readouterr().err
