"""The service's worker app (``workers.app.get_app``) with pool processes that take
``SLOW_START_S`` seconds to start, as a model judge loading in each one does:
``celery -A tests.integration.slow_start worker``."""

import os
import time

from celery.signals import worker_process_init

from workers.app import get_app

app = get_app()


@worker_process_init.connect(weak=False)
def _load_slowly(**_) -> None:
    time.sleep(float(os.environ["SLOW_START_S"]))
