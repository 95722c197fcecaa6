"""Markdown tables for benchmarks/README.md from scorer_dev.json, scorer_review.json and
scorer_eval.json.

Command: ``python -m benchmarks.scorer_tables``
"""

from __future__ import annotations

import json

from benchmarks.common import RESULTS


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
    """Per setting and data set: the shipped confidence, its CV twin, the best single signal,
    and what the chosen threshold reviews and catches."""
    c = review["confidence"]
    cut = c["review_below_confidence"]
    lines = [
        "| setting | data | grades | large errors | shipped confidence: caught at 10 / 20 / 30 % "
        "review | same, fit without the question (CV) | best single signal at 20 % "
        f"| below {cut:.2f}: reviewed / caught |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for setting, found in c["settings"].items():
        for ds, f in found.items():
            best = max(f["signals"], key=lambda k: f["signals"][k]["20%"])
            below = f["below_threshold"]
            lines.append(
                f"| {setting} | {ds} | {f['n']} | {f['large_errors']} | "
                + " / ".join(f"{v:.0%}" for v in f["shipped"].values())
                + " | "
                + " / ".join(f"{v:.0%}" for v in f["cv"].values())
                + f" | {best} {f['signals'][best]['20%']:.0%} "
                f"| {below['reviewed']:.0%} / {below['caught']:.0%} |"
            )
    return lines


def judge_table(dev: dict) -> list[str]:
    """Stage 1 without and with the judge's reading, on the development answers it read."""
    found = dev.get("judge_designs") or {}
    if not found:
        return []
    lines = [
        f"{found['n']} development answers the judge read ({found['questions']} questions).",
        "",
        "| model | features | Mohler dev Pearson | Mohler dev MAE | ADS dev Pearson | ADS dev MAE "
        "| ridge weights of the judge's features (raw units) |",
        "|---|---|---|---|---|---|---|",
    ]
    grade = found["judge_grade"]
    lines.append("| — | the judge's own grade (no scorer) | " + " | ".join(
        f"{_cell(grade[ds]['pearson'])} | {_cell(grade[ds]['mae'])}" for ds in ("mohler", "ads")
    ) + " | |")  # fmt: skip
    for m in found["models"]:
        cells = " | ".join(f"{_cell(m['cv'][ds]['pearson'])} | {_cell(m['cv'][ds]['mae'])}"
                           for ds in ("mohler", "ads"))  # fmt: skip
        weights = ", ".join(f"{k} {v:+.3f}" for k, v in (m.get("coef") or {}).items()
                            if k.startswith("judge"))  # fmt: skip
        lines.append(f"| {m['model']} | {m['set']} | {cells} | {weights} |")
    return lines


def shipped_table(dev: dict, key: str = "shipped") -> list[str]:
    """A design cross-validated by the production procedure, per setting."""
    lines = [
        "| setting | decided by | Mohler dev Pearson / MAE | ADS dev Pearson / MAE "
        "| signals scorer alone, same answers (Mohler / ADS) |",
        "|---|---|---|---|---|",
    ]
    for setting, found in dev[key]["cv"].items():
        cells = [
            f"{_cell(found['scorer'][ds]['pearson'])} / {_cell(found['scorer'][ds]['mae'], False)}"
            f" (n {found['scorer'][ds]['n']})"
            for ds in ("mohler", "ads")
        ]
        alone = " / ".join(_cell(found["signals_alone"][ds]["pearson"], False)
                           for ds in ("mohler", "ads"))  # fmt: skip
        decided = ", ".join(f"{k} {v}" for k, v in found["decided_by"].items())
        lines.append(f"| {setting} | {decided} | " + " | ".join(cells) + f" | {alone} |")
    return lines


EVAL_METRICS = (("pearson", "Pearson"), ("qwk", "QWK"), ("mae", "MAE"), ("exact", "exact"),
                ("adjacent", "±1"))  # fmt: skip


def eval_tables(result: dict) -> list[str]:
    """One table per data set: every setting, every contender, with 95 % intervals."""
    lines = []
    for name, settings in result["datasets"].items():
        lines += ["", f"**{name}**", "",
                  "| setting | answers (graded per question) | scores | n | "
                  + " | ".join(label for _, label in EVAL_METRICS) + " |",
                  "|---|---|---|---|" + "---|" * len(EVAL_METRICS)]  # fmt: skip
        for setting, found in settings.items():
            where = f"{found['answers']} ({'/'.join(map(str, found['graded_per_question']))})"
            for label, fig in found["rows"].items():
                cells = [_cell(fig[m]) if m in fig else "" for m, _ in EVAL_METRICS]
                lines.append(
                    f"| {setting} | {where} | {label} | {fig['n']} | " + " | ".join(cells) + " |"
                )
                where = ""
    return lines


def eval_review_table(result: dict) -> list[str]:
    cut = result["review_below_confidence"]
    lines = ["| data | setting | scorer-graded answers | large errors | caught at 10 / 20 / 30 % "
             f"review | below {cut:.2f}: reviewed / caught |", "|---|---|---|---|---|---|"]  # fmt: skip
    for name, settings in result["datasets"].items():
        for setting, found in settings.items():
            r = found["review"]
            if not r:
                continue
            rates = " / ".join(f"{v:.0%}" for v in r["caught_at_rate"].values())
            below = r["below_threshold"]
            lines.append(f"| {name} | {setting} | {r['answers']} | {r['large_errors']} | {rates} "
                         f"| {below['reviewed']:.0%} / {below['caught']:.0%} |")  # fmt: skip
    return lines


def main() -> None:
    dev = json.loads((RESULTS / "scorer_dev.json").read_text(encoding="utf-8"))
    print("\n### shipped design, production procedure, dev CV\n")
    print("\n".join(shipped_table(dev)))
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
    for evaluation in sorted(RESULTS.glob("scorer_eval*.json")):
        found = json.loads(evaluation.read_text(encoding="utf-8"))
        print(f"\n### test parts: {evaluation.name} (scorer {found['scorer_version']})\n")
        print("\n".join(eval_tables(found)))
        print()
        print("\n".join(eval_review_table(found)))


if __name__ == "__main__":
    main()
