"""The grading service's statuses: a submission's and a webhook delivery's."""

from __future__ import annotations

from enum import StrEnum


class SubmissionStatus(StrEnum):
    """A stored submission's way through the service."""

    QUEUED = "queued"  # stored, waiting for (or being given) a grade
    GRADED = "graded"
    FAILED = "failed"  # out of retries: see its error and the dead letters


class DeliveryStatus(StrEnum):
    """A webhook delivery: pending until the platform acknowledges it or retries run out."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"
