"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc``, served whole by this
server: FastAPI's defaults load their scripts and styles from a CDN, so on a machine without
the internet they render blank. The assets come from the ``fastapi-offline`` package (pinned
in the ``service`` extra), which ships Swagger UI's and ReDoc's distribution files."""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def install_docs(app: FastAPI) -> None:
    """Mount the assets and the two pages; the app is made with ``docs_url=None`` and
    ``redoc_url=None`` so that these are the only ones."""
    app.mount(ASSETS, StaticFiles(directory=str(files("fastapi_offline") / "static")), "docs")
    title = app.title
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - Swagger UI",
            oauth2_redirect_url=f"{root}{redirect_url}",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            # no badge from the public validator: it would send the schema's URL out
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get(redirect_url, include_in_schema=False)
    async def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
