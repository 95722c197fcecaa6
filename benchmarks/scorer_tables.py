"""Markdown tables for benchmarks/README.md from scorer_dev.json and scorer_review.json.

Command: ``python benchmarks/scorer_tables.py``
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _cell(fig: dict, interval: bool = True) -> str:
    v = fig["value"]
    if v is None:
        return "—"
    if interval and fig.get("low") is not None:
        return f"{v:.3f} [{fig['low']:.2f}, {fig['high']:.2f}]"
    return f"{v:.3f}"


def model_table(dev: dict, setting: str) -> list[str]:
    lines = [
        "| fit on | model | features | Mohler dev Pearson | Mohler dev MAE | ADS dev Pearson | ADS dev MAE |",
        "|---|---|---|---|---|---|---|",
    ]
    for scope, found in dev["settings"][setting].items():
        for m in found["models"]:
            cells = []
            for ds in ("mohler", "ads"):
                cv = m["cv"].get(ds)
                cells += ["", ""] if cv is None else [_cell(cv["pearson"]), _cell(cv["mae"])]
            label = m.get("set") or m["features"][0]
            lines.append(f"| {scope} | {m['model']} | {label} | " + " | ".join(cells) + " |")
    return lines


def singles_table(dev: dict, setting: str) -> list[str]:
    lines = [
        "| feature | Mohler raw r | Mohler isotonic r / MAE | ADS raw r | ADS isotonic r / MAE |",
        "|---|---|---|---|---|",
    ]
    by_feature: dict[str, dict] = {}
    for scope in ("mohler", "ads"):
        for s in dev["settings"][setting][scope]["singles"]:
            by_feature.setdefault(s["feature"], {})[scope] = s
    for name, found in by_feature.items():
        cells = []
        for scope in ("mohler", "ads"):
            s = found.get(scope)
            if s is None:
                cells += ["", ""]
                continue
            cv = s["isotonic_cv"][scope]
            cells += [f"{s['raw_pearson']:.3f}",
                      f"{_cell(cv['pearson'], False)} / {_cell(cv['mae'], False)}"]  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def grid_table(dev: dict) -> list[str]:
    """One row per (k, weights), the settings side by side: r / MAE, Mohler then ADS."""
    settings = list(dev["neighbour_grid"])
    lines = [
        "| k | weights | "
        + " | ".join(f"{s}: Mohler r / MAE | {s}: ADS r / MAE" for s in settings)
        + " |",
        "|---|---|" + "---|" * (2 * len(settings)),
    ]
    first = dev["neighbour_grid"][settings[0]]["mohler"]
    for n, row in enumerate(first):
        cells = []
        for s in settings:
            for ds in ("mohler", "ads"):
                g = dev["neighbour_grid"][s][ds][n]
                cells.append(f"{g['pearson']:.3f} / {g['mae']:.2f}")
        lines.append(f"| {row['k']} | {row['weights']} | " + " | ".join(cells) + " |")
    return lines


def duplicate_table(review: dict) -> list[str]:
    d = review["near_duplicates_ads_dev"]
    lines = [
        f"{d['pairs_at_cosine_0.97']} pairs at cosine ≥ 0.97 ({d['identical_texts']} identical texts), "
        f"{d['eligible_pairs']} with both answers ≥ 20 content characters; {d['labelled']} labelled "
        f"({d['sample_copies']} copies); estimated copies among the eligible pairs: {d['estimated_copies']}.",
        "",
        "| rule | flagged | copies kept | copies missed | non-copies flagged | in the labelled sample: copies kept / non-copies flagged |",
        "|---|---|---|---|---|---|",
    ]
    for r in d["rules"]:
        lines.append(
            f"| {r['rule']} | {r['flagged']} | {r['copies_kept']} | {r['copies_missed']} | "
            f"{r['non_copies_flagged']} | {r['sample_copies_kept']} / {r['sample_non_copies_flagged']} |"
        )
    return lines


def confidence_tables(review: dict) -> list[str]:
    """Per setting and data set: the logistic confidence and the best single signal."""
    lines = [
        "| setting | data | answers | large errors | confidence: caught at 10 / 20 / 30 % review "
        "| best single signal at 20 % | review below confidence (10 / 20 / 30 %) |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting, found in review["confidence"].items():
        cut = " / ".join(f"{v:.2f}" for v in found["review_below_confidence"].values())
        for ds in ("mohler", "ads"):
            f = found[ds]
            rates = f["caught"]["confidence (logistic, CV)"]
            singles = {k: v for k, v in f["caught"].items() if not k.startswith("confidence")}
            best = max(singles, key=lambda k: singles[k]["20%"])
            lines.append(
                f"| {setting} | {ds} | {f['n']} | {f['large_errors']} | "
                + " / ".join(f"{v:.0%}" for v in rates.values())
                + f" | {best} {singles[best]['20%']:.0%} | {cut} |"
            )
    return lines


def main() -> None:
    dev = json.loads((RESULTS / "scorer_dev.json").read_text(encoding="utf-8"))
    for setting in dev["settings"]:
        n = {s: dev["settings"][setting][s]["n"] for s in ("mohler", "ads")}
        print(f"\n### setting: {setting} (Mohler dev {n['mohler']}, ADS dev {n['ads']} answers)\n")
        print("\n".join(model_table(dev, setting)))
        print()
        print("\n".join(singles_table(dev, setting)))
    print("\n### neighbour rule\n")
    print("\n".join(grid_table(dev)))
    review = json.loads((RESULTS / "scorer_review.json").read_text(encoding="utf-8"))
    print("\n### near-duplicates\n")
    print("\n".join(duplicate_table(review)))
    print("\n### confidence\n")
    print("\n".join(confidence_tables(review)))


if __name__ == "__main__":
    main()
