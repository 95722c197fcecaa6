"""Health and Prometheus metrics, read from the store at scrape time so API and workers on any
host agree.

``grader_graded_total`` is a counter: graded/s is ``rate(grader_graded_total[1m])``.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

from grader.api.deps import Svc
from grader.api.schemas import Health
from grader.models import DeliveryStatus, SubmissionStatus
from grader.service.store import Store

router = APIRouter()


@router.get("/healthz", response_model=Health, responses={503: {"model": Health}})
def health(svc: Svc) -> Any:
    """200 when the database and the broker answer, 503 otherwise."""
    try:
        svc.store.ping()
        database = "ok"
    except Exception as exc:
        database = f"error: {type(exc).__name__}"
    broker = "ok" if svc.dispatcher.broker_ok() else "unreachable"
    body = Health(database=database, broker=broker)
    status = 200 if database == broker == "ok" else 503
    return JSONResponse(body.model_dump(), status_code=status)


_bearer = HTTPBearer(auto_error=False, description="GRADER_METRICS_TOKEN")


def scraper(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)], svc: Svc
) -> None:
    """With GRADER_METRICS_TOKEN set, 401 unless the request carries it as a bearer token
    (compared in constant time); unset, /metrics is open."""
    token = svc.settings.pages.metrics_token
    if token is None:
        return
    given = credentials.credentials.encode() if credentials else b""
    if not hmac.compare_digest(given, token.get_secret_value().encode()):
        raise HTTPException(
            401, "missing or wrong metrics token", headers={"WWW-Authenticate": "Bearer"}
        )


@router.get("/metrics", include_in_schema=False, dependencies=[Depends(scraper)])
def metrics(svc: Svc) -> Response:
    return metrics_response(svc.store, svc.dispatcher)


class _StoreCollector:
    def __init__(self, store: Store, dispatcher):
        self.store, self.dispatcher = store, dispatcher

    def collect(self):
        counts = self.store.metrics.counts()
        totals = counts["totals"]
        submissions = GaugeMetricFamily(
            "grader_submissions", "submissions by status", labels=["status"]
        )
        for status in SubmissionStatus:
            submissions.add_metric([status.value], counts["submissions"].get(status.value, 0))
        yield submissions
        depth = GaugeMetricFamily(
            "grader_queue_depth", "messages waiting in the broker", labels=["queue"]
        )
        try:
            for queue, n in self.dispatcher.queue_depth().items():
                depth.add_metric([queue], n)
        except Exception:  # broker down: report what the store knows
            pass
        yield depth
        yield CounterMetricFamily("grader_graded", "grades stored", value=totals["grades"])
        yield CounterMetricFamily(
            "grader_dead_letters", "grading tasks that exhausted their retries",
            value=totals["dead_letters"],
        )  # fmt: skip
        yield SummaryMetricFamily(
            "grader_judge_latency_seconds", "judge time per judged answer",
            count_value=int(totals["judged"]), sum_value=totals["judge_latency_s"],
        )  # fmt: skip
        yield GaugeMetricFamily(
            "grader_open_reviews", "grades waiting for a human", value=totals["open_reviews"]
        )
        deliveries = GaugeMetricFamily(
            "grader_webhook_deliveries", "webhook deliveries by status", labels=["status"]
        )
        for delivery in DeliveryStatus:
            deliveries.add_metric([delivery.value], counts["deliveries"].get(delivery.value, 0))
        yield deliveries


def metrics_response(store: Store, dispatcher) -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StoreCollector(store, dispatcher))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
