"""Celery workers of the grading service: ``celery -A workers.app worker`` or ``grader worker``."""
