"""The ``grader`` command line: one module per command group, registered on one Typer app.

Commands import what they use when they run, so ``grader --help`` stays fast and works without
the optional extras (vLLM, sentence-transformers, the service, calibration).
"""

# Imported for their commands, in the order `grader --help` lists them: the everyday ones first.
from grader.cli import grading, suggest, cohort, bank, rubric, calibrate  # noqa: F401, I001
from grader.cli import calibrate_fit, reports, service, monitor  # noqa: F401
from grader.cli.app import app, err

__all__ = ["app", "main"]


def main() -> None:
    from pydantic import ValidationError
    from rich.markup import escape

    try:
        app()
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        # a bad GRADER_* variable: say which and why, without a traceback (or its value)
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            err.print(f"[bold red]error:[/] settings: {escape(field)}: {escape(error['msg'])}")
        raise SystemExit(2) from None
