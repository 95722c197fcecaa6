"""The grading engine: submissions in, grades out (``pipeline.Pipeline.grade_many``).

Objective questions are graded exactly; subjective answers against rubrics (files or derived)
with rule grades, answer signals from embeddings, and the judge's checked verdicts. Nothing here
knows about HTTP, Celery or the database: the service and the command line call it.
"""
