"""The development samples the judge designs are measured on, with their embedding signals.

Everything here is computed once (``python -m benchmarks.judge_designs prepare``, no vLLM, no
lock) and written to ``benchmarks/results/judge_designs/samples.json.gz``, so the locked judge
runs read plain data and never load the embedding model. Only development parts are read:
``splits.mohler_split(...)["dev"]``, ``splits.ads_split(...)["dev"]`` and the hand-graded seed
answers (all development data). See ``judge_designs.py`` for the sample rule.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict

from benchmarks.common import ROOT
from benchmarks.splits import ScoredAnswer, ads_items, ads_split, mohler_items, mohler_split
from grader.bank.files import load_bank
from grader.engine.reading.blanks import blank_reason
from grader.engine.reading.rubrics import derive_rubric, key_points_of, load_rubrics
from grader.models import Question, QuestionType, Rubric

SEEDS = ROOT / "tests" / "data" / "seed_answers.jsonl"
BANKS = ROOT / "rubrics"
SALT = "judge-designs-v1"
PER_QUESTION = {"mohler": 4, "ads": 10}
NEIGHBOURS = 10  # graded neighbours kept per answer (designs use the first k)
MIN_CHARS = 2  # RuleSettings.min_answer_chars: shorter answers are 0 by rule and never judged

_SENTENCE = re.compile(r"(?<=[。；;！!？?\n])|(?<=[.．])(?=\s)")


def _rank(key: str) -> str:
    return hashlib.sha256(f"{SALT}:{key}".encode()).hexdigest()


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def sentences(text: str) -> list[str]:
    """Whole sentences (not comma clauses), the whole text when it has only one."""
    parts = [p.strip(" \t\r\n") for p in _SENTENCE.split(text)]
    parts = [p for p in parts if len(p) >= 4]
    return parts or [text.strip()]


def _criteria(rubric: Rubric) -> list[dict]:
    return [
        {
            "id": c.id,
            "description": c.description,
            "points": c.points,
            "key_points": list(c.key_points),
            "levels": [{"points": lv.points, "descriptor": lv.descriptor} for lv in c.levels],
        }
        for c in rubric.criteria
    ]


def _key_points(rubric: Rubric) -> list[dict]:
    """Each key point with its share of the total: criterion points / its key points."""
    out = []
    for c in rubric.criteria:
        points = c.key_points or [c.description]
        out += [{"text": p, "criterion": c.id, "weight": c.points / len(points)} for p in points]
    return out


def _derived(item: ScoredAnswer, language: str) -> Rubric:
    question = Question(
        id=item.question_id,
        number="1",
        section="",
        type=QuestionType.SHORT_ANSWER,
        stem=item.question,
        answer=item.references[0],
        points=item.max_score,
        language=language,
    )
    return derive_rubric(question)


def _reference_points(reference: str, max_score: float) -> list[dict]:
    """Derived key points: the reference's sentences / numbered items, equal shares."""
    points = key_points_of(reference) or [reference]
    return [{"text": p, "criterion": None, "weight": max_score / len(points)} for p in points]


def _case(
    dataset: str, item: ScoredAnswer, language: str, rubric: Rubric, key_points: list[dict]
) -> dict:
    return {
        "id": item.id,
        "dataset": dataset,
        "question_id": item.question_id,
        "language": language,
        "question": item.question.strip(),
        "reference": item.references[0].strip(),
        "answer": item.answer.strip(),
        "score": item.score,
        "max_score": item.max_score,
        "criteria": _criteria(rubric),
        "rubric_reviewed": rubric.reviewed,
        "key_points": key_points,
    }


def _public_cases(
    dataset: str, items: list[ScoredAnswer], language: str
) -> tuple[list[dict], dict]:
    """The seeded sample of one public data set's dev part, and every dev answer as the pool."""
    usable = [i for i in items if not blank_reason(i.answer, MIN_CHARS)]
    by_question: dict[str, list[ScoredAnswer]] = defaultdict(list)
    for item in usable:
        by_question[item.question_id].append(item)
    cases = []
    for qid in sorted(by_question):
        answers = by_question[qid]
        ranked = sorted(answers, key=lambda i: _rank(f"{dataset}:{qid}:{i.id}"))
        rubric = _derived(answers[0], language)
        for item in ranked[: PER_QUESTION[dataset]]:
            kps = _reference_points(item.references[0], item.max_score)
            cases.append(_case(dataset, item, language, rubric, kps))
    pool = {
        qid: [{"id": i.id, "answer": i.answer.strip(), "score": i.score} for i in answers]
        for qid, answers in by_question.items()
    }
    return cases, pool


def _seed_cases() -> tuple[list[dict], dict]:
    where: dict[str, tuple] = {}
    for path in sorted(BANKS.glob("*.yaml")):
        bank = load_bank(path)
        rubrics = load_rubrics(path, bank)
        for question in bank.questions:
            if question.id in rubrics:
                where[question.id] = (question, rubrics[question.id])
    rows = [json.loads(line) for line in SEEDS.read_text(encoding="utf-8").splitlines() if line]
    rows = [r for r in rows if not blank_reason(r["answer"], MIN_CHARS)]
    cases, pool = [], defaultdict(list)
    for row in rows:
        question, rubric = where[row["question_id"]]
        item = ScoredAnswer(
            id=row["id"],
            question_id=row["question_id"],
            question=question.stem,
            references=(question.answer,),
            answer=row["answer"],
            score=float(row["human_total"]),
            max_score=rubric.points,
        )
        case = _case("seed", item, question.language, rubric, _key_points(rubric))
        case["kind"] = row["kind"]
        cases.append(case)
        pool[row["question_id"]].append(
            {"id": row["id"], "answer": row["answer"].strip(), "score": item.score}
        )
    return cases, dict(pool)


def build_samples(embedder) -> dict[str, list[dict]]:
    """{dataset: cases}, each case with its e5 signals (cosine, neighbours, closest sentences)."""
    mohler = _public_cases("mohler", mohler_split(mohler_items())["dev"], "en")
    ads = _public_cases("ads", ads_split(ads_items())["dev"], "zh")
    out = {}
    for name, (cases, pool) in (("mohler", mohler), ("ads", ads), ("seed", _seed_cases())):
        for case in cases:
            _add_signals(case, pool[case["question_id"]], embedder)
        out[name] = cases
    return out


def _add_signals(case: dict, pool: list[dict], embedder) -> None:
    """Reference cosine, the nearest graded answers of the question, each key point's sentence."""
    others = [
        p
        for p in pool
        if p["id"] != case["id"]
        and _norm(p["answer"]) != _norm(case["answer"])
        and not blank_reason(p["answer"], MIN_CHARS)
    ]
    sents = sentences(case["answer"])
    kps = [k["text"] for k in case["key_points"]]
    texts = [case["answer"], case["reference"], *(p["answer"] for p in others), *sents, *kps]
    v = embedder.encode(texts)
    answer, reference = v[0], v[1]
    other_v = v[2 : 2 + len(others)]
    sent_v = v[2 + len(others) : 2 + len(others) + len(sents)]
    kp_v = v[2 + len(others) + len(sents) :]
    case["cos_ref"] = round(float(answer @ reference), 5)
    sims = other_v @ answer if others else []
    order = sorted(range(len(others)), key=lambda j: -float(sims[j]))[:NEIGHBOURS]
    case["neighbours"] = [{**others[j], "cos": round(float(sims[j]), 5)} for j in order]
    closeness = kp_v @ sent_v.T
    for k, kp in enumerate(case["key_points"]):
        best = int(closeness[k].argmax())
        kp["sentence"] = sents[best]
        kp["sentence_cos"] = round(float(closeness[k, best]), 5)
