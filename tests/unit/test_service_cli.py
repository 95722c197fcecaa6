"""Service commands: migrate, register a platform (key shown once, only its hash kept)."""

from typer.testing import CliRunner

from grader.api.keys import INSTRUCTOR_PREFIX, hash_key, key_id_of
from grader.cli import app
from grader.service.store import Store

runner = CliRunner()


def test_platform_add_prints_the_key_once_and_stores_its_hash(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    result = runner.invoke(
        app, ["platform", "add", "acme", "--exam", "grad_accum_engineer",
              "--webhook-url", "https://acme.example/hook"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    key = next(line for line in result.output.splitlines() if line.startswith("api_key="))[8:]
    platform = Store(url).accounts.platform_by_key_id(key_id_of(key))
    assert platform.name == "acme" and platform.exams == {"grad_accum_engineer"}
    assert platform.key_hash == hash_key(key) and key not in (
        tmp_path / "g.db"
    ).read_bytes().decode("latin-1")
    typo = runner.invoke(app, ["platform", "add", "other", "--exam", "grad_accum"])
    assert typo.exit_code == 2, typo.output
    said = " ".join(typo.output.split())
    assert "--exam 'grad_accum': no bank served here is named so" in said
    assert "did you mean 'grad_accum_engineer'?" in said
    assert Store(url).accounts.platform_by_name("other") is None  # nothing registered
    unknown = runner.invoke(
        app, ["platform", "add", "other", "--exam", "no_such_exam", "--allow-unserved"]
    )
    assert unknown.exit_code == 0 and "warning" in unknown.output
    assert "platform other may post to: no_such_exam" in unknown.output
    assert Store(url).accounts.platform_by_name("other").exams == {"no_such_exam"}
    assert Store(url).accounts.platform_by_name("no_such_exam") is None  # not named after the exam
    again = runner.invoke(app, ["platform", "add", "acme", "--exam", "x"])
    assert again.exit_code == 2 and "exists" in again.output
    listed = runner.invoke(app, ["platform", "list"])
    assert "acme" in listed.output and key not in listed.output


def test_instructor_add_prints_a_login_key_once_and_stores_its_hash(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    result = runner.invoke(app, ["instructor", "add", "li", "--exam", "grad_accum_engineer"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("instructor_key="))
    key = line[len("instructor_key=") :]
    assert key_id_of(key) is None  # not a platform key
    instructor = Store(url).accounts.instructor(key_id=key_id_of(key, INSTRUCTOR_PREFIX))
    assert instructor.name == "li" and instructor.exams == {"grad_accum_engineer"}
    assert instructor.key_hash == hash_key(key)
    assert key not in (tmp_path / "g.db").read_bytes().decode("latin-1")
    again = runner.invoke(app, ["instructor", "add", "li", "--exam", "x"])
    assert again.exit_code == 2 and "exists" in again.output
    listed = runner.invoke(app, ["instructor", "list"])
    assert "li" in listed.output and "grad_accum_engineer" in listed.output
    assert key not in listed.output


def test_db_upgrade_masks_the_password_of_the_url_it_prints(database_url, monkeypatch):
    import sqlalchemy as sa

    url = sa.make_url(database_url)
    if url.get_backend_name() == "postgresql":  # the test cluster trusts: any password works
        url = url.set(password="s3cret-pw")
    monkeypatch.setenv("GRADER_DATABASE_URL", url.render_as_string(hide_password=False))
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert "database at the newest schema: " in result.output
    assert "s3cret-pw" not in result.output


def test_db_upgrade_masks_a_password_whatever_the_server(monkeypatch):
    """Without a PostgreSQL server here: the migration itself is left out, the printing kept."""
    import grader.cli.service as service

    monkeypatch.setattr(service, "_store", lambda: None)
    monkeypatch.setenv("GRADER_DATABASE_URL", "postgresql+psycopg://grader:s3cret-pw@db:5432/g")
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert "postgresql+psycopg://grader:***@db:5432/g" in result.output
    assert "s3cret-pw" not in result.output


def test_platform_add_refuses_webhooks_into_the_network_unless_allowed(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    monkeypatch.delenv("GRADER_WEBHOOK_ALLOW_PRIVATE", raising=False)
    add = ["platform", "add", "p", "--exam", "grad_accum_engineer", "--webhook-url"]
    for hook, why in [
        ("ftp://acme.example/hook", "scheme ftp: refused: use http or https"),
        ("http://127.0.0.1:8000/hook", "127.0.0.1, a loopback address"),
        ("http://localhost:8000/hook", "a loopback address"),
        ("http://169.254.169.254/latest", "a link-local address"),
        ("https://192.168.1.20/hook", "a private address"),
        # forms the address check once let through and httpx then refused at every delivery
        ("http://１.１.１.１/hook", "not a URL (Invalid IDNA hostname"),
        ("http://acme.example/h\r\nX-Injected: 1", "not a URL (Invalid non-printable"),
    ]:
        result = runner.invoke(app, [*add, hook])
        assert result.exit_code == 2, (hook, result.output)
        assert why in result.output.replace("\n", ""), result.output
    assert not (tmp_path / "g.db").exists()  # refused before the database was opened
    monkeypatch.setenv("GRADER_WEBHOOK_ALLOW_PRIVATE", "true")
    result = runner.invoke(app, [*add, "http://127.0.0.1:8000/hook"])
    assert result.exit_code == 0, result.output
    assert Store(url).accounts.platform_by_name("p").webhook_url == "http://127.0.0.1:8000/hook"


def test_platform_add_accepts_a_host_it_cannot_resolve_yet_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", f"sqlite:///{tmp_path / 'g.db'}")
    monkeypatch.delenv("GRADER_WEBHOOK_ALLOW_PRIVATE", raising=False)
    result = runner.invoke(
        app,
        [
            "platform",
            "add",
            "p",
            "--exam",
            "grad_accum_engineer",
            "--webhook-url",
            "https://x.invalid/h",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "checked again at each delivery" in result.output.replace("\n", "")


def test_a_database_that_does_not_answer_is_said_in_one_line(monkeypatch):
    """The fault soak restarted an API while PostgreSQL was down: it printed a traceback.
    Port 9 (discard) on this machine refuses the connection at once."""
    monkeypatch.setenv("GRADER_DATABASE_URL", "postgresql+psycopg://grader:pw@127.0.0.1:9/g")
    result = runner.invoke(app, ["serve", "--port", "9"])
    assert result.exit_code == 2, result.output
    assert "the database at postgresql+psycopg://grader:***@127.0.0.1:9/g is unavailable" in (
        result.output
    )
    assert "Traceback" not in result.output and "pw@" not in result.output
