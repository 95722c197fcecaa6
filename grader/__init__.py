"""grader: grade exam answers against rubrics — exactly where possible, with a judge where not."""

__version__ = "0.1.0"
