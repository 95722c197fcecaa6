"""Task and queue names, defined once: the Celery app routes by them, the API's dispatcher and
the sweeper send by them, ``grader worker`` consumes them.

The task names are what messages already in Redis carry: changing one strands them. ``io``
carries no task: a worker consuming it sends the webhooks from the outbox (its courier); messages an
earlier version left there (``workers.tasks.deliver_webhook``) are dropped with a log line,
and the deliveries they named go out from the outbox all the same.
"""

GRADE_TASK = "workers.tasks.grade_batch"
REGRADE_TASK = "workers.tasks.regrade_step"  # one batch of a regrade job, then itself again

GRADE_QUEUE = "grade"  # the judge; one worker process per GPU
IO_QUEUE = "io"  # webhooks (the courier); never loads the judge
QUEUES = (GRADE_QUEUE, IO_QUEUE)

ROUTES = {GRADE_TASK: GRADE_QUEUE, REGRADE_TASK: GRADE_QUEUE}


def waiting(redis_url: str, queues: tuple[str, ...] = QUEUES) -> dict[str, int]:
    """Messages in each queue on the Redis broker, not yet taken by a worker."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=2)
    try:
        return {q: int(client.llen(q)) for q in queues}
    finally:
        client.close()
