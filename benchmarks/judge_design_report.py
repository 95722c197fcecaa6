"""Figures for every judge-design result: agreement with the human scores, cost, combinations.

Scores are compared as fractions of each question's maximum (the seed questions are worth 5,
10 and 20). Baselines on the same answers without the judge: the e5 cosine between answer
and reference, and the cosine-weighted mean score of the k nearest graded answers of the
question (kNN). "z+cos" is the mean of the design's and the cosine's z-scores over the
sample, "z+knn3" the same with the 3-nearest kNN, "z+cos+knn3" all three: what a scorer
could combine.

Cost: a run asks several designs of one shared context, so its seconds per answer cover all
of them. "est. alone" is what one design would cost on its own: its own requests' uncached
tokens (prefix caching replayed on 32-token blocks, requests sorted as the run sorts them)
times the run's measured seconds per uncached token.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

from scipy.stats import pearsonr, spearmanr

from benchmarks.judge_design_prompts import GRADED, RUNS, design_of

DATASET_ORDER = ("mohler", "ads", "seed")
BLOCK = 32
MIN_NEIGHBOURS = 5  # graded answers a question needs before the graded setting is measured
_PART = re.compile(r"^(?P<run>[^.]+)\.(?P<dataset>[^.]+)(?:\.p(?P<i>\d+)of(?P<n>\d+))?\.json$")


def _r(x) -> float | None:
    return None if x is None or x != x else round(float(x), 3)


def _corr(pred: list[float], human: list[float]) -> tuple[float | None, float | None]:
    if len(set(pred)) < 2 or len(set(human)) < 2:
        return None, None
    return _r(pearsonr(pred, human)[0]), _r(spearmanr(pred, human)[0])


def _within(pred: list[float], human: list[float], questions: list[str]) -> float | None:
    """Mean Pearson inside each question (questions with > 2 answers where both sides vary)."""
    groups = defaultdict(list)
    for p, h, q in zip(pred, human, questions, strict=True):
        groups[q].append((p, h))
    values = []
    for pairs in groups.values():
        ps, hs = zip(*pairs, strict=True)
        if len(pairs) > 2 and statistics.pstdev(ps) > 1e-9 and statistics.pstdev(hs) > 1e-9:
            values.append(pearsonr(ps, hs)[0])
    return _r(statistics.fmean(values)) if values else None


def _z(xs: list[float]) -> list[float]:
    mean, sd = statistics.fmean(xs), statistics.pstdev(xs)
    return [(x - mean) / sd if sd else 0.0 for x in xs]


def _zmean(*columns: list[float]) -> list[float]:
    zs = [_z(c) for c in columns]
    return [statistics.fmean(values) for values in zip(*zs, strict=True)]


def knn(case: dict, k: int) -> float:
    """Cosine-weighted mean fraction-of-max score of the k nearest graded answers."""
    nbs = case["neighbours"][:k]
    total = sum(nb["cos"] for nb in nbs)
    return sum(nb["cos"] * nb["score"] for nb in nbs) / total / case["max_score"]


def figures(pred: list[float], human: list[float], questions: list[str]) -> dict:
    pearson, spearman = _corr(pred, human)
    return {"pearson": pearson, "spearman": spearman, "within_q": _within(pred, human, questions)}


def baselines(cases: list[dict]) -> dict:
    human = [c["score"] / c["max_score"] for c in cases]
    qs = [c["question_id"] for c in cases]
    cos = [c["cos_ref"] for c in cases]
    out = {"e5 cosine": figures(cos, human, qs)}
    graded = ["kNN k=1", "kNN k=3", "kNN k=5", "kNN k=10", "z(cos)+z(kNN k=3)"]
    if min(len(c["neighbours"]) for c in cases) < MIN_NEIGHBOURS:
        # 4 other answers per question (the seed set): the mean of "the k nearest" is nearly
        # the leave-one-out mean, which falls as the answer's own score rises. Not a setting.
        return out | dict.fromkeys(graded)
    for k in (1, 3, 5, 10):
        out[f"kNN k={k}"] = figures([knn(c, k) for c in cases], human, qs)
    out[graded[-1]] = figures(_zmean(cos, [knn(c, 3) for c in cases]), human, qs)
    return out


def merge(paths: list[Path]) -> list[dict]:
    """One result per (model, run, data set), its parts joined; incomplete ones flagged."""
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for path in paths:
        m = _PART.match(path.name)
        if not m or ".limit" in path.name:
            continue
        groups[(path.parent.name, m["run"], m["dataset"])].append((m["n"], path))
    merged = []
    for (model, run, dataset), found in sorted(groups.items()):
        results = [json.loads(p.read_text(encoding="utf-8")) for _, p in sorted(found)]
        expected = int(found[0][0]) if found[0][0] else 1
        merged.append(
            {
                "model": model,
                "run": run,
                "dataset": dataset,
                "complete": len(results) == expected,
                "parts": f"{len(results)}/{expected}",
                "rows": [row for r in results for row in r["rows"]],
                "wall_s": sum(r["wall_s"] for r in results),
                "prompt_tokens": sum(r["prompt_tokens_per_answer"] * r["answers"] for r in results),
                "new_tokens": sum(r["new_tokens_per_answer"] * r["answers"] for r in results),
                "dtype": results[0].get("dtype"),
                "date": results[0]["date"],
            }
        )
    return merged


def standalone_new_tokens(tokenizer, run: str, cases: list[dict]) -> dict[str, int]:
    """Uncached prompt tokens each design of ``run`` would need if it ran alone (cold cache)."""
    by_design: dict[str, list] = defaultdict(list)
    for case in cases:
        for request in RUNS[run](case):
            by_design[design_of(request.part)].append(request)
    out = {}
    for design, requests in by_design.items():
        requests.sort(key=lambda r: (r.system, r.user))
        seen: set[int] = set()
        new = 0
        for r in requests:
            ids = tokenizer.apply_chat_template(
                [{"role": "system", "content": r.system}, {"role": "user", "content": r.user}],
                tokenize=True,
                add_generation_prompt=True,
            )["input_ids"]
            hit = 0
            for b in range(len(ids) // BLOCK):
                key = hash(tuple(ids[: BLOCK * (b + 1)]))
                if key in seen and hit == b:
                    hit = b + 1
                seen.add(key)
            new += len(ids) - BLOCK * hit
        out[design] = new
    return out


def design_figures(result: dict, design: str, cases: dict[str, dict]) -> dict:
    rows = [r for r in result["rows"] if design in r["judge"]]
    human = [r["score"] / r["max_score"] for r in rows]
    pred = [r["judge"][design] / r["max_score"] for r in rows]
    qs = [r["question_id"] for r in rows]
    cos = [cases[r["id"]]["cos_ref"] for r in rows]
    enough = all(len(cases[r["id"]]["neighbours"]) >= MIN_NEIGHBOURS for r in rows)
    k3 = [knn(cases[r["id"]], 3) for r in rows] if enough else None
    masses = [p["mass"] for r in rows for p in r["parts"] if design_of(p["part"]) == design]
    return {
        **figures(pred, human, qs),
        "z+cos": figures(_zmean(pred, cos), human, qs)["pearson"],
        "z+knn3": figures(_zmean(pred, k3), human, qs)["pearson"] if k3 else None,
        "z+cos+knn3": figures(_zmean(pred, cos, k3), human, qs)["pearson"] if k3 else None,
        "label_mass_mean": _r(statistics.fmean(masses)),
        "label_mass_min": _r(min(masses)),
        "mean_pred": _r(statistics.fmean(pred)),
        "mean_human": _r(statistics.fmean(human)),
        "n": len(rows),
        "requests_per_answer": round(len(masses) / len(rows), 2),
        "setting": "graded" if design in GRADED else "none",
    }


def report(results: Path) -> dict:
    from transformers import AutoTokenizer

    from grader.packaged import prepare_model

    samples = json.loads(gzip.decompress((results / "samples.json.gz").read_bytes()))
    by_id = {name: {c["id"]: c for c in cases} for name, cases in samples.items()}
    summary: dict = {"baselines": {n: baselines(samples[n]) for n in DATASET_ORDER}, "designs": {}}
    tokenizers: dict = {}
    for result in merge(sorted(results.glob("*/*.json"))):
        cases = by_id[result["dataset"]]
        n = len(result["rows"])
        if result["model"] not in tokenizers:
            folder = prepare_model(f"qwen2.5-coder-{result['model']}-instruct", _models_dir())
            tokenizers[result["model"]] = AutoTokenizer.from_pretrained(str(folder))
        alone = standalone_new_tokens(
            tokenizers[result["model"]], result["run"], [cases[r["id"]] for r in result["rows"]]
        )
        s_per_token = result["wall_s"] / result["new_tokens"] if result["new_tokens"] else 0.0
        for design in result["rows"][0]["judge"]:
            entry = design_figures(result, design, cases)
            entry.update(
                {
                    "run": result["run"],
                    "run_complete": result["complete"],
                    "run_parts": result["parts"],
                    "run_s_per_answer": round(result["wall_s"] / n, 2),
                    "run_cached_share": _r(1 - result["new_tokens"] / result["prompt_tokens"]),
                    "run_prompt_tokens_per_answer": round(result["prompt_tokens"] / n),
                    "est_alone_new_tokens_per_answer": round(alone[design] / n),
                    "est_alone_s_per_answer": round(alone[design] * s_per_token / n, 2),
                    "dtype": result["dtype"],
                    "date": result["date"],
                }
            )
            summary["designs"].setdefault(f"{result['model']}/{design}", {})[result["dataset"]] = (
                entry
            )
    (results / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(table(summary))
    return summary


def _models_dir() -> Path:
    return Path.home() / ".cache" / "grader" / "models"


def _c(x) -> str:
    return "—" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))


def table(summary: dict) -> str:
    """Three markdown tables: agreement, combinations with the e5 signals, cost."""
    designs = sorted(summary["designs"], key=_design_order)
    sets = " | ".join(f"{d} P / S / within-q" for d in DATASET_ORDER)
    lines = [f"| design | setting | {sets} | label mass |", "|---|---|---|---|---|---|"]
    for name in summary["baselines"]["mohler"]:
        cells = [_psw(summary["baselines"][d][name]) for d in DATASET_ORDER]
        setting = "graded" if "kNN" in name else "none"
        lines.append(f"| {name} (no judge) | {setting} | " + " | ".join(cells) + " | — |")
    for key in designs:
        per = summary["designs"][key]
        cells = [_psw(per[d]) if d in per else "not run" for d in DATASET_ORDER]
        mass = " / ".join(_c(per[d]["label_mass_mean"]) if d in per else "—" for d in DATASET_ORDER)
        setting = next(iter(per.values()))["setting"]
        lines.append(f"| {key} | {setting} | " + " | ".join(cells) + f" | {mass} |")

    lines += [
        "",
        "| design | "
        + " | ".join(f"{d} z+cos / z+knn3 / z+cos+knn3" for d in DATASET_ORDER)
        + " |",
    ]
    lines.append("|---|---|---|---|")
    for key in designs:
        per = summary["designs"][key]
        cells = [
            " / ".join(_c(per[d][k]) for k in ("z+cos", "z+knn3", "z+cos+knn3"))
            if d in per
            else "—"
            for d in DATASET_ORDER
        ]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")

    cost = "s/answer (run · est. alone) · cached · prompt tok"
    lines += ["", "| design | run | " + " | ".join(f"{d} {cost}" for d in DATASET_ORDER) + " |"]
    lines.append("|---|---|---|---|---|")
    for key in designs:
        per = summary["designs"][key]
        cells = [
            f"{_c(per[d]['run_s_per_answer'])} · {_c(per[d]['est_alone_s_per_answer'])} · "
            f"{_c(per[d]['run_cached_share'])} · {per[d]['run_prompt_tokens_per_answer']}"
            if d in per
            else "—"
            for d in DATASET_ORDER
        ]
        lines.append(f"| {key} | {next(iter(per.values()))['run']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _psw(f: dict | None) -> str:
    if f is None:
        return "n/a"
    text = f"{_c(f['pearson'])} / {_c(f['spearman'])} / {_c(f['within_q'])}"
    return text if f.get("run_complete", True) else f"{text} (parts {f['run_parts']})"


def _design_order(key: str) -> tuple:
    model, design = key.split("/")
    m = re.match(r"D(\d+)(.*)", design)
    return (model, int(m[1]) if m else 99, m[2] if m else design)
