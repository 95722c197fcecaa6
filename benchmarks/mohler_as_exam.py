"""Mohler et al. (2011) as a calibration exam: one human grader as the instructor, the other as
the "judge", so ``grader calibrate`` must reproduce the published human–human agreement
(Pearson 0.597, exact agreement 55.6 % over all 2,273 answers).

    python -m benchmarks.mohler_as_exam ../shared/data/mohler/mohler_2011.csv out/mohler
    grader calibrate --human out/mohler/human.csv --grades out/mohler/grades.jsonl \
        --submissions out/mohler/submissions.jsonl --report out/mohler/report

Writes ``human.csv`` (``score_me``), ``grades.jsonl`` (``score_other`` as Grade records out of
5 points) and ``submissions.jsonl`` (the answers; the 9 corrupted ``#NAME?`` answers are kept).
Submission ids are ``<question id>-<row within the question>``.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from pathlib import Path

from grader.models import Grade, GradeStatus, Method

MAX_SCORE = 5.0


def write_exam(source: Path, folder: Path) -> int:
    """Write the three files into ``folder``; returns the number of answers."""
    folder.mkdir(parents=True, exist_ok=True)
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    seen: Counter[str] = Counter()
    with (
        (folder / "human.csv").open("w", encoding="utf-8", newline="") as human_file,
        (folder / "grades.jsonl").open("w", encoding="utf-8") as grades_file,
        (folder / "submissions.jsonl").open("w", encoding="utf-8") as submissions_file,
    ):
        human = csv.writer(human_file)
        human.writerow(["submission_id", "question_id", "score"])
        for row in rows:
            question = row["id"]
            seen[question] += 1
            submission = f"{question}-{seen[question]}"
            human.writerow([submission, question, row["score_me"]])
            grade = Grade(
                submission_id=submission,
                question_id=question,
                status=GradeStatus.GRADED,
                score=float(row["score_other"]),
                max_score=MAX_SCORE,
                method=Method.NONE,
                provenance={"source": "mohler_2011 score_other (the second human grader)"},
            )
            grades_file.write(json.dumps(grade.model_dump(mode="json")) + "\n")
            submissions_file.write(
                json.dumps(
                    {"id": submission, "question_id": question, "answer": row["student_answer"]},
                    ensure_ascii=False,
                )
                + "\n"
            )
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="mohler_2011.csv")
    parser.add_argument("folder", type=Path, help="where to write the three files")
    args = parser.parse_args()
    count = write_exam(args.source, args.folder)
    print(f"wrote {count} answers to {args.folder}")


if __name__ == "__main__":
    main()
