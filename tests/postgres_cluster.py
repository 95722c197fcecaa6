"""A throwaway PostgreSQL cluster for one test session, started the way ``.ci/run`` starts one.

``initdb`` in a temporary folder, trust authentication for the ``postgres`` role, a free port
on 127.0.0.1 and the socket in the folder (nothing of the machine's own clusters is touched),
durability off (it is thrown away), stopped with ``pg_ctl -m immediate`` and the folder
removed. ``initdb`` refuses to run as root, so under root every server command runs as the
``postgres`` user the Debian package creates (``runuser``, else ``su``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SERVER_USER = "postgres"  # created by Debian's postgresql-common
TIMEOUT_S = 120  # initdb and a start on a busy 2-core machine; never reached when healthy
SETTINGS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c max_connections=200"
)
# A server that is stopped as a crash would be (``halt``) and must keep every commit it
# acknowledged: with ``synchronous_commit=off`` the last ones die with the server's memory.
# (``fsync=off`` stays: the machine itself does not crash, its page cache survives.)
DURABLE = SETTINGS.replace("synchronous_commit=off", "synchronous_commit=on")


class ClusterError(Exception):
    """The cluster could not be created or started; the message has the server's own words."""


def server_binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb`` and ``pg_ctl`` (the
    Debian layout), else the folder of an ``initdb`` on PATH; None when neither is installed."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.name)],
        reverse=True,
    )
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Cluster:
    binaries: Path
    folder: Path
    port: int
    user: str | None  # the OS user the server runs as, when it cannot be this one (root)
    options: str = SETTINGS
    running: bool = field(default=False)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    @classmethod
    def start(cls, binaries: Path, options: str = SETTINGS) -> Cluster:
        """A new cluster, running; a ``ClusterError`` (and nothing left behind) otherwise."""
        user = SERVER_USER if os.geteuid() == 0 else None
        if user is not None:
            try:
                pwd.getpwnam(user)
            except KeyError:
                raise ClusterError(f"running as root and there is no {user!r} user") from None
        folder = Path(tempfile.mkdtemp(prefix="grader-test-pg-"))
        cluster = cls(binaries, folder, _free_port(), user, options)
        try:
            if user is not None:
                shutil.chown(folder, user)
            cluster._server("initdb", "-D", "data", "-A", "trust", "-U", "postgres", "-E", "UTF8",
                            "--locale=C", "--no-sync")  # fmt: skip
            cluster._start()
        except BaseException:
            cluster.stop()
            raise
        atexit.register(cluster.stop)  # a session that ends without its finish hook
        return cluster

    def _start(self, attempts: int = 3) -> None:
        """``pg_ctl start`` on a free port; another port if one was taken in between."""
        for attempt in range(attempts):
            try:
                self._server("pg_ctl", "-D", "data", "-l", "server.log", "-w", "-t",
                             str(TIMEOUT_S), "start", "-o",
                             f"-p {self.port} -k {self.folder} {self.options}")  # fmt: skip
            except ClusterError:
                if attempt == attempts - 1:
                    raise
                self.port = _free_port()
                continue
            self.running = True
            return

    def halt(self) -> None:
        """Stop the server at once, as a crash would (``-m immediate``), keeping its data."""
        if self.running:
            self.running = False
            self._server("pg_ctl", "-D", "data", "-m", "immediate", "-w", "stop")

    def resume(self) -> None:
        """Start a halted server again on the same port (it recovers from its log)."""
        self._start(attempts=1)

    def stop(self) -> None:
        """Stop the server (immediately: nothing in it is kept) and remove its folder."""
        if self.running:
            self.running = False
            with contextlib.suppress(ClusterError):  # already gone: the folder goes anyway
                self._server("pg_ctl", "-D", "data", "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def _server(self, program: str, *args: str) -> None:
        """Run a server program in the cluster's folder, as the server's user."""
        command = [str(self.binaries / program), *args]
        if self.user is not None:
            runuser = shutil.which("runuser")
            command = (
                [runuser, "-u", self.user, "--", *command]
                if runuser
                else ["su", self.user, "-c", shlex.join(command)]
            )
        try:
            done = subprocess.run(
                command,
                cwd=self.folder,  # the server's user may not enter the caller's folder
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClusterError(f"{program}: {exc}") from exc
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ClusterError(f"{program} exited {done.returncode}: {' / '.join(said)}")
