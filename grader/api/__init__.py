"""The grading service's HTTP intake (FastAPI). Imported only by `grader serve` and tests."""
