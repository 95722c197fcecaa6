"""``grader flower``: Flower, Celery's web monitor, on the grading service's own Celery app.

``celery -A workers.app flower`` works too; this command saves knowing that the app is
configured by ``GRADER_*`` variables (the broker is ``GRADER_REDIS_URL``), listens on
127.0.0.1 unless told otherwise, and says which extra to install when Flower is missing.
Flower's own options follow ``--`` and its ``FLOWER_*`` variables apply (``FLOWER_BASIC_AUTH``
keeps a password off the command line).
"""

from __future__ import annotations

from typing import Annotated

import typer

from grader.cli.app import app, err


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def flower(
    ctx: typer.Context,
    address: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 only behind authentication.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the web pages and the API.")] = 5555,
) -> None:
    """Flower on GRADER_REDIS_URL: workers online, their pools, queues and tasks, in the
    browser and at /api. Set FLOWER_BASIC_AUTH=user:password (its API refuses requests
    without it, unless FLOWER_UNAUTHENTICATED_API=true). Flower's options after `--`."""
    try:
        import flower as _  # noqa: F401
    except ImportError as exc:
        err.print(
            f"[bold red]error:[/] Flower is not installed: pip install 'grader[flower]' ({exc})"
        )
        raise typer.Exit(code=2) from exc
    from grader.config import Settings
    from workers.app import create_app

    celery = create_app(Settings())
    celery.start(["flower", f"--address={address}", f"--port={port}", *ctx.args])
