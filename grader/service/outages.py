"""Which errors mean "the database is away for now" rather than a bug: the API answers them
503 with ``Retry-After`` and the webhook worker retries them with backoff, where anything else
is a 500 or a failed task."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

# Connection refused or lost, a server shutting down, a pool with no connection to give.
OUTAGE_ERRORS = (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError)


def database_unavailable(error: BaseException) -> bool:
    """True for an error that a later try may not meet: the database was unreachable."""
    if isinstance(error, OUTAGE_ERRORS):
        return True
    return isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated
