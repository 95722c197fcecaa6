"""The grading service's HTTP face (FastAPI): the platforms' intake, health and metrics, and the
instructor pages. Imported only by `grader serve` and tests."""
