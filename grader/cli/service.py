"""The grading service's commands: ``db``, ``platform``, ``serve``, ``worker``, ``instructor``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from grader.cli.app import app, console, err, fail
from grader.errors import GraderError
from workers.queues import GRADE_QUEUE, QUEUES

platform_app = typer.Typer(help="Platforms that post to the grading service.", no_args_is_help=True)
app.add_typer(platform_app, name="platform")
db_app = typer.Typer(help="The service's database.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _store():
    """The store, migrated; a database that does not answer is said in one line (exit 2, so
    a supervisor restarting on failure tries again), not a traceback."""
    from grader.config import Settings
    from grader.service.outages import database_unavailable
    from grader.service.store import Store

    url = Settings().service.database_url
    store = Store(url)
    try:
        store.migrate()
    except Exception as exc:
        if not database_unavailable(exc):
            raise
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise fail(GraderError(f"the database at {_masked(url)} is unavailable: {cause}")) from exc
    return store


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the schema of GRADER_DATABASE_URL to the newest version."""
    from grader.config import Settings

    _store()
    console.print(
        f"database at the newest schema: {escape(_masked(Settings().service.database_url))}"
    )


def _masked(url: str) -> str:
    """The database URL with its password replaced by ``***``, fit for a terminal or a log."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not a URL SQLAlchemy reads: show none of it
        return "(the URL in GRADER_DATABASE_URL)"


@platform_app.command("add")
def platform_add(
    name: Annotated[str, typer.Argument(help="The platform's name, unique.")],
    exam: Annotated[
        list[str], typer.Option("--exam", help="An exam (bank name) it may post to; repeat.")
    ],
    webhook_url: Annotated[
        str | None, typer.Option(help="Where to POST each grade, signed.")
    ] = None,
    allow_unserved: AllowUnserved = False,
) -> None:
    """Register a platform; prints its API key and webhook secret once (only a hash is kept)."""
    from grader.api.keys import new_key
    from grader.service.webhooks import new_secret

    if webhook_url is not None:
        _check_webhook_url(webhook_url)
    store = _store()
    if store.accounts.platform_by_name(name, include_removed=True) is not None:
        err.print(f"[bold red]error:[/] platform {escape(repr(name))} exists (or was removed)")
        raise typer.Exit(code=2)
    _refuse_unserved(exam, allow_unserved)
    key, secret = new_key(), new_secret()
    store.accounts.add_platform(name, exam, key.key_id, key.key_hash, secret, webhook_url)
    console.print(escape(f"platform {name} may post to: {', '.join(sorted(set(exam)))}"))
    print(f"api_key={key.key}")
    print(f"webhook_secret={secret}")


def _check_webhook_url(url: str) -> None:
    """Refuse a webhook URL the service must not call; a host that does not resolve now is
    allowed with a warning (each delivery resolves it again)."""
    from grader.config import Settings
    from grader.service.webhook_urls import address_problem

    try:
        problem = address_problem(url, Settings().webhooks.allow_private)
    except OSError as exc:
        err.print(
            f"[yellow]warning:[/] cannot resolve the webhook's host now "
            f"({escape(str(exc))}): it is checked again at each delivery"
        )
        return
    if problem:
        err.print(f"[bold red]error:[/] --webhook-url: {escape(problem)}")
        raise typer.Exit(code=2)


AllowUnserved = Annotated[
    bool,
    typer.Option(
        "--allow-unserved",
        help="Register exams no bank in GRADER_BANKS serves yet (refused by default: a typo).",
    ),
]


def _refuse_unserved(exams: list[str], allow: bool) -> None:
    """An exam no bank serves is most likely a typo: refused, naming the exams served and the
    closest one, unless ``allow`` (banks may come later); then a warning."""
    from difflib import get_close_matches

    from grader.bank.files import load_bank
    from grader.config import Settings

    served = {load_bank(path).name for path in Settings().service.banks if Path(path).exists()}
    unknown = sorted(set(exams) - served)
    for exam in unknown:
        close = get_close_matches(exam, sorted(served), n=1)
        message = (
            f"--exam {exam!r}: no bank served here is named so (GRADER_BANKS serves: "
            f"{', '.join(sorted(served)) or 'none'})"
            + (f"; did you mean {close[0]!r}?" if close else "")
        )
        level = "[yellow]warning:[/] " if allow else "[bold red]error:[/] "
        err.print(level + escape(message))
    if unknown and not allow:
        err.print("(--allow-unserved registers it anyway, for a bank to come)")
        raise typer.Exit(code=2)


@platform_app.command("list")
def platform_list() -> None:
    """Platforms, their exams and webhook URLs (never keys)."""
    table = Table(title="platforms")
    for column in ("name", "exams", "webhook"):
        table.add_column(column)
    for p in _store().accounts.list_platforms():
        table.add_row(
            escape(p.name), escape(", ".join(sorted(p.exams))), escape(p.webhook_url or "")
        )
    console.print(table)


@platform_app.command("rotate-key")
def platform_rotate_key(
    name: Annotated[str, typer.Argument(help="The platform's name.")],
) -> None:
    """Give a platform a new API key, printed once; the old key stops working at once."""
    from grader.api.keys import new_key

    key = new_key()
    if not _store().accounts.rotate_platform_key(name, key.key_id, key.key_hash):
        _no_such("platform", name)
    console.print(f"platform {escape(name)} has a new key; the old one no longer works")
    print(f"api_key={key.key}")


@platform_app.command("remove")
def platform_remove(
    name: Annotated[str, typer.Argument(help="The platform's name.")],
) -> None:
    """Remove a platform: its key stops working at once; what it posted stays in the database
    (queued answers are still graded), and its name is not given out again."""
    if not _store().accounts.remove_platform(name):
        _no_such("platform", name)
    console.print(f"platform {escape(name)} removed; its key no longer works")


def _no_such(kind: str, name: str) -> None:
    err.print(f"[bold red]error:[/] no {kind} {escape(repr(name))} (see `grader {kind} list`)")
    raise typer.Exit(code=2)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8080,
    inline: Annotated[
        bool,
        typer.Option(help="Grade in a child process of this one (no Redis, no workers)."),
    ] = False,
) -> None:
    """Run the HTTP intake (OpenAPI docs at /docs). Grading: workers on Redis, or --inline."""
    import uvicorn

    from grader.api.app import create_app
    from grader.api.server import server_config
    from grader.config import Settings
    from grader.service.dispatch import Dispatcher
    from grader.service.exams import load_exams
    from grader.service.inline_process import InlineProcess
    from workers.dispatch import CeleryDispatcher

    settings = Settings()
    store = _store()
    dispatcher: Dispatcher
    try:
        exams = load_exams(settings.service.banks)
        if inline:  # the API keeps the intake, pages and health; a child process grades
            grading = InlineProcess(settings, store)
            dispatcher, mode = grading, f"inline, grading in process {grading.pid}"
        else:
            dispatcher, mode = CeleryDispatcher(settings), "workers"
    except GraderError as exc:
        raise fail(exc) from exc
    err.print(escape(f"serving exams: {', '.join(sorted(exams))} ({mode})"))
    try:
        # Stopped by a signal, uvicorn shuts the app down, then ends the process with that
        # signal: grading (the inline process and what its judge started) stops first.
        app = create_app(settings, store, exams, dispatcher, on_shutdown=dispatcher.close)
        uvicorn.Server(server_config(settings.limits, app, host, port)).run()
    finally:
        dispatcher.close()  # started but never served (a port taken): closing twice is safe


@app.command()
def worker(
    queues: Annotated[
        str, typer.Option(help="grade (the judge), io (webhooks), or both: grade,io.")
    ] = ",".join(QUEUES),
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Pool processes. Default: 2 for --queues io alone, 1 with a model judge (one "
            "engine per process; run one worker per GPU), the CPU count otherwise. With io, "
            "each sends webhooks, GRADER_WEBHOOK_CONCURRENCY at once."
        ),
    ] = None,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork or solo.")] = "prefork",
    loglevel: Annotated[str, typer.Option(help="Log level.")] = "INFO",
) -> None:
    """Start a Celery worker on GRADER_REDIS_URL with the service's defaults. It rides out a
    Redis restart (it reconnects, its judge kept); it exits non-zero only when it stops on an
    error, so run it under a supervisor that restarts it on failure (workers/deploy/)."""
    import os

    from grader.config import Settings

    settings = Settings()
    consumed = queues.split(",")
    if concurrency is None and GRADE_QUEUE not in consumed:
        concurrency = 2  # webhook senders, each with many deliveries in flight
    elif concurrency is None:
        concurrency = 1 if settings.judge.backend == "vllm" else (os.cpu_count() or 1)
    os.environ["GRADER_WORKER_LOADS_JUDGE"] = "1" if GRADE_QUEUE in consumed else "0"
    from celery.signals import worker_init

    from workers.app import get_app

    # ``worker_main`` drops the worker's exit status (celery 5.7): read it off the worker. One
    # that stops on an unrecoverable error must exit non-zero, so a supervisor restarting on
    # failure brings it back (workers/deploy/).
    started = []
    worker_init.connect(lambda sender=None, **_: started.append(sender), weak=False)
    get_app().worker_main(
        [
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-P",
            pool,
            "--loglevel",
            loglevel,
            "--without-mingle",
            "--without-gossip",
        ]
    )
    status = started[0].exitcode if started else None
    if status:
        err.print(
            f"[bold red]error:[/] the worker stopped on an error (exit status {status}; the "
            "cause is logged above): restart it, or let its supervisor do so"
        )
        raise typer.Exit(code=status if isinstance(status, int) else 1)


# --- instructors ---------------------------------------------------------------------------

instructor_app = typer.Typer(help="Instructors who use the web pages.", no_args_is_help=True)
app.add_typer(instructor_app, name="instructor")


@instructor_app.command("add")
def instructor_add(
    name: Annotated[str, typer.Argument(help="The instructor's name, unique.")],
    exam: Annotated[
        list[str], typer.Option("--exam", help="An exam (bank name) they grade; repeat.")
    ],
    allow_unserved: AllowUnserved = False,
) -> None:
    """Register an instructor; prints their login key once (only a hash is kept)."""
    from grader.api.keys import INSTRUCTOR_PREFIX, new_key

    store = _store()
    if store.accounts.instructor(name=name, include_removed=True) is not None:
        err.print(f"[bold red]error:[/] instructor {escape(repr(name))} exists (or was removed)")
        raise typer.Exit(code=2)
    _refuse_unserved(exam, allow_unserved)
    key = new_key(INSTRUCTOR_PREFIX)
    store.accounts.add_instructor(name, exam, key.key_id, key.key_hash)
    console.print(escape(f"instructor {name} grades: {', '.join(sorted(set(exam)))}"))
    print(f"instructor_key={key.key}")


@instructor_app.command("list")
def instructor_list() -> None:
    """Instructors and their exams (never keys)."""
    table = Table(title="instructors")
    for column in ("name", "exams"):
        table.add_column(column)
    for i in _store().accounts.list_instructors():
        table.add_row(escape(i.name), escape(", ".join(sorted(i.exams))))
    console.print(table)


@instructor_app.command("remove")
def instructor_remove(
    name: Annotated[str, typer.Argument(help="The instructor's name.")],
) -> None:
    """Remove an instructor: their key and every session they hold stop working at once; the
    scores they entered stay, under their name, which is not given out again."""
    if not _store().accounts.remove_instructor(name):
        _no_such("instructor", name)
    console.print(f"instructor {escape(name)} removed; their key and sessions no longer work")
