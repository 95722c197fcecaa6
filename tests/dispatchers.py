"""Dispatchers for API tests that grade nothing: the app's dispatcher protocol, no broker."""

from __future__ import annotations


class Holding:
    """Grades nothing: what is posted stays queued."""

    def enqueue(self, submissions) -> None:
        pass

    def announce(self, deliveries) -> None:
        pass

    def regrade(self, job_id) -> None:
        pass

    def broker_ok(self) -> bool:
        return True

    def queue_depth(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


class Refusing(Holding):
    """For tests where nothing may be queued: an enqueue fails the test."""

    def enqueue(self, submissions) -> None:
        raise AssertionError("nothing should be queued")
