"""The shipped scorer is what the documented fit makes from development data.

``grader/engine/scoring/scorer_default.json`` must equal, byte for byte, ``fit_default`` on
the development rows of the feature table in the repository
(``benchmarks/results/scorer_features.jsonl.gz``, production's features of every Mohler and
ADS answer; ``python -m benchmarks.feature_table --from-table --scorer-out
grader/engine/scoring/scorer_default.json`` writes the file). No model is loaded: the table
holds the numbers.

"Equal" is every name, feature, setting and count the same, and every number within a
relative 1e-4 of the file's: the fit's last digits follow the processor's BLAS kernels (the
file's six significant digits moved in the sixth on another CPU, where the fit is otherwise
the same), and a design change moves them in the first three. The version is the hash of the
file's own content (``load_scorer`` refuses a file edited by hand).
"""

import json
import math

from grader.calibrate.scorer_fit import fit_default
from grader.calibrate.scorer_rows import read_rows
from grader.engine.scoring.scorer_model import DEFAULT_FILE, load_scorer, to_json
from tests.conftest import ROOT

TABLE = ROOT / "benchmarks" / "results" / "scorer_features.jsonl.gz"


def test_the_shipped_file_equals_a_fresh_fit_on_development_rows():
    rows = read_rows(TABLE)
    dev = [r for r in rows if r.part == "dev"]
    assert {r.dataset for r in dev} == {"mohler", "ads"}
    assert len(dev) < len(rows)  # the table's test rows exist, and the fit never sees them
    fresh = json.loads(to_json(fit_default(dev)))
    shipped = json.loads(DEFAULT_FILE.read_text(encoding="utf-8"))
    fresh.pop("version"), shipped.pop("version")
    assert differences(fresh, shipped) == []


def differences(fresh: object, shipped: object, where: str = "") -> list[str]:
    """Where two parsed scorer files differ beyond the processor's last digits."""
    if isinstance(fresh, dict) and isinstance(shipped, dict):
        if fresh.keys() != shipped.keys():
            return [f"{where}: keys {sorted(fresh)} != {sorted(shipped)}"]
        return [d for k in fresh for d in differences(fresh[k], shipped[k], f"{where}.{k}")]
    if isinstance(fresh, list) and isinstance(shipped, list):
        if len(fresh) != len(shipped):
            return [f"{where}: {len(fresh)} items != {len(shipped)}"]
        return [
            d
            for i, pair in enumerate(zip(fresh, shipped, strict=True))
            for d in differences(*pair, f"{where}[{i}]")
        ]
    numbers = (int, float)
    if isinstance(fresh, numbers) and isinstance(shipped, numbers) and not isinstance(fresh, bool):
        close = math.isclose(fresh, shipped, rel_tol=1e-4, abs_tol=1e-9)
        return [] if close else [f"{where}: {fresh} != {shipped}"]
    return [] if fresh == shipped else [f"{where}: {fresh!r} != {shipped!r}"]


def test_a_design_change_is_a_difference():
    shipped = json.loads(DEFAULT_FILE.read_text(encoding="utf-8"))
    moved = json.loads(DEFAULT_FILE.read_text(encoding="utf-8"))
    moved["signals"][0]["coef"][1] *= 1.01
    assert differences(moved, shipped) != []
    moved = json.loads(DEFAULT_FILE.read_text(encoding="utf-8"))
    moved["signals"][0]["coef"][1] *= 1 + 2e-5  # the sixth digit, as another CPU's BLAS
    assert differences(moved, shipped) == []


def test_the_shipped_file_says_what_it_was_fit_on():
    scorer = load_scorer("default")
    assert scorer is not None and scorer.confidence
    for fitted in (*scorer.first_stage, *scorer.bands):
        if fitted.languages == ["en"]:  # the judge's reading, weighed on English answers only
            assert "judge_share" in fitted.features
            assert fitted.trained_on["data"] == "mohler dev"
        else:
            assert not fitted.languages
            assert fitted.trained_on["data"] == "ads dev + mohler dev"
    assert scorer.first_stage[0].languages == ["en"]
    # explainable: no stage-1 feature pushes the score down (non-negative ridge; a weight of
    # exactly 0 is a feature the fit left out, as the cohort model does with reference_margin)
    assert all(c >= 0 for s in scorer.first_stage for c in s.coef)
    assert all(sum(c > 0 for c in s.coef) >= 3 for s in scorer.first_stage)
