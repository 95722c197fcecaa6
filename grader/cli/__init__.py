"""The ``grader`` command line: one module per command group, registered on one Typer app.

Commands import what they use when they run, so ``grader --help`` stays fast and works without
the optional extras (vLLM, sentence-transformers, the service, calibration).
"""

# Imported for their commands, in the order `grader --help` lists them: the everyday ones first.
from grader.cli import grading, explain, suggest, cohort, bank, rubric, calibrate  # noqa: F401, I001
from grader.cli import calibrate_fit, calibrate_judge, reports, service, monitor  # noqa: F401
from grader.cli.app import app, err

__all__ = ["app", "main"]


def main() -> None:
    from pydantic import ValidationError
    from rich.markup import escape

    from grader.config import PARTS, env_name

    try:
        app()
    except ValidationError as exc:
        part = next((p for p in PARTS if p.__name__ == exc.title), None)
        if part is None:
            raise
        # a bad GRADER_* variable: say which and why, without a traceback (or its value)
        for error in exc.errors():
            name = env_name(part, str(error["loc"][0])) if error["loc"] else exc.title
            err.print(f"[bold red]error:[/] settings: {escape(name)}: {escape(error['msg'])}")
        raise SystemExit(2) from None
