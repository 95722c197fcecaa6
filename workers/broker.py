"""The Redis transport of the workers and the API's dispatcher: kombu's, with one guard, so a
worker rides out a Redis restart in its own process (its judge stays loaded).

When Redis goes away under a worker, Celery (5.7) cleans up the broken connection in two
steps: ``connection.collect()``, then ``connection.close()``. kombu's Redis transport has no
``_collect``, so ``collect()`` closes the channels itself: closing the first one raises (its
socket is gone), which stops the loop over the others, and the transport is then detached
from its connection (``transport.client = None``) with the consumer's channel still open.
``close()`` closes that channel, which restores its unacknowledged messages through a new
connection pool whose parameters are read from the detached ``transport.client``:
``AttributeError: 'NoneType' object has no attribute 'hostname'`` in ``_connparams``. That is
not a connection error, so Celery takes it as unrecoverable and stops the worker. It happens
only while the worker holds an unacknowledged message (a task running, or waiting on its
countdown): with none, nothing is restored and the worker reconnects.

Here a channel whose transport is detached (or closed) raises redis' ``ConnectionError``
instead: a broker error, which Celery ignores while closing a broken connection before it
reconnects. The messages that could not be restored stay in Redis' unacknowledged index and
are delivered again after ``GRADER_VISIBILITY_TIMEOUT_S``, as when a whole worker dies; a
task that ends after the reconnect cannot acknowledge on the old channel either (Celery logs
"Couldn't ack"), so it too comes back, and finds its work done (grading is idempotent).
"""

from __future__ import annotations

from kombu.exceptions import OperationalError
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

NAME = "grader-redis"  # what Celery's ``broker_transport`` names and its logs show
# Redis refused, reset, timed out or still loading its file (``BusyLoadingError`` is a
# ``ConnectionError``), and kombu's own wrapper of those once its retries ran out.
_OUTAGES = (
    OperationalError,
    RedisConnectionError,
    RedisTimeoutError,
    ConnectionError,
    TimeoutError,
)


def broker_unavailable(error: BaseException) -> bool:
    """True for an error that means the broker could not be reached for now."""
    return isinstance(error, _OUTAGES)


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:
        transport = self.connection
        if transport is None or transport.client is None:
            raise RedisConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


TRANSPORT_ALIASES.setdefault(NAME, f"{__name__}:Transport")
