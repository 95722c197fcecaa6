"""/docs and /redoc render offline: every script, style and icon they load is served by this
server (from the pinned fastapi-offline package), none from a CDN."""

import re

from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.config import JudgeSettings, ServiceSettings, Settings
from grader.service.exams import load_exams
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.dispatchers import Holding


def test_the_docs_pages_load_only_assets_of_this_server(tmp_path):
    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'g.db'}",
            banks=[RUBRICS / "grad_accum_engineer.yaml"],
        ),
        judge=JudgeSettings(backend="scripted"),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    app = create_app(settings, store, load_exams(settings.service.banks), Holding())
    with TestClient(app) as client:
        for page, wanted in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
            html = client.get(page)
            assert html.status_code == 200
            linked = re.findall(r'(?:src|href)="([^"]+)"', html.text)
            assert any(link.endswith(wanted) for link in linked), linked
            assert not re.search(r"https?://", html.text), page  # nothing from elsewhere
            for link in linked:
                asset = client.get(link)
                assert asset.status_code == 200 and len(asset.content) > 1000, link
        assert "validatorUrl" in client.get("/docs").text  # no badge from the public validator
        schema = client.get("/openapi.json").json()
        assert "/v1/exams/{exam}/changes" in schema["paths"]
