"""A throwaway PostgreSQL server for the tests that need one (gateway stores, batch
manifests).

Loaded with `pytest_plugins = ["tests.postgres"]` (tests/gateway/postgres.py does).

`postgres_server` (session-scoped) is, in this order:

* the server named by `OUTFORM_TEST_POSTGRES_DSN`, when set (an existing server);
* a new cluster: `initdb` into a temporary directory, `pg_ctl start` on a free port of
  127.0.0.1 with its unix socket in that directory, a database created, all removed at the
  end. PostgreSQL refuses to run as root, so as root the cluster belongs to an unprivileged
  user (`postgres` when it exists, else `nobody`) and its commands run through `runuser`
  (or `su`). The binaries are looked up on PATH, then in /usr/lib/postgresql/*/bin and
  the other usual places (`.ci/run` installs them when missing);
* otherwise the PostgreSQL tests skip, saying so.

Every test gets its own schema (through `search_path` in the DSN), dropped afterwards, so
tests never see each other's rows and an existing server is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ENV_DSN = "OUTFORM_TEST_POSTGRES_DSN"
SEARCH = (
    "/usr/lib/postgresql/*/bin",  # Debian, Ubuntu
    "/usr/pgsql-*/bin",  # RHEL, Fedora (PGDG)
    "/usr/local/pgsql/bin",  # built from source
    "/opt/homebrew/opt/postgresql*/bin",  # macOS
    "/usr/local/opt/postgresql*/bin",
)


@dataclass
class PostgresServer:
    dsn: str
    """A superuser DSN of the test database."""

    def schema(self) -> tuple[str, str]:
        """A new empty schema and a DSN whose `search_path` is that schema."""
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        options = str(conninfo_to_dict(self.dsn).get("options") or "")
        return name, make_conninfo(self.dsn, options=f"{options} -c search_path={name}".strip())

    def drop(self, schema: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[dev]')")
    existing = os.environ.get(ENV_DSN)
    if existing:
        yield PostgresServer(existing)
        return
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) are not on PATH nor in "
            f"{', '.join(SEARCH)}, and {ENV_DSN} is not set: install PostgreSQL "
            "(apt-get install postgresql; .ci/run does) or point the variable at a server"
        )
    with Cluster(bindir) as cluster:
        yield PostgresServer(cluster.dsn)


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: PATH first, then the highest version found."""
    found = shutil.which("initdb")
    if found and (Path(found).parent / "pg_ctl").exists():
        return Path(found).parent
    candidates = [d for pattern in SEARCH for d in Path("/").glob(pattern.lstrip("/"))]
    usable = [d for d in candidates if (d / "initdb").exists() and (d / "pg_ctl").exists()]
    if not usable:
        return None
    return max(usable, key=lambda d: [int(n) for n in re.findall(r"\d+", str(d))] or [0])


class Cluster:
    """initdb + pg_ctl in a temporary directory; `dsn` while inside the `with`."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.user = _unprivileged_user() if os.geteuid() == 0 else None
        self.root = Path(tempfile.mkdtemp(prefix="outform-pg-", dir=_tmp_base(self.user)))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.dsn = ""
        self._started = False

    def __enter__(self) -> Cluster:
        try:
            if self.user is not None:
                shutil.chown(self.root, self.user)
            self._run(
                "initdb", "-D", str(self.data), "-U", "outform", "-A", "trust", "-E", "UTF8",
                "--locale=C", "--no-sync",
            )  # fmt: skip
            port = self._start()
            import psycopg

            admin = f"host=127.0.0.1 port={port} user=outform dbname=postgres"
            with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
                conn.execute("CREATE DATABASE outform_test")
            self.dsn = f"host=127.0.0.1 port={port} user=outform dbname=outform_test"
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _start(self) -> int:
        """Start on a free port; another process may take the port first, so try thrice."""
        failure = ""
        for _ in range(3):
            port = _free_port()
            options = f"-F -h 127.0.0.1 -p {port} -k {shlex.quote(str(self.root))}"
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                    "-o", options, "start",
                )  # fmt: skip
            except RuntimeError as exc:
                failure = str(exc)
                continue
            self._started = True
            return port
        raise RuntimeError(f"PostgreSQL did not start: {failure}\n{self._log_tail()}")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bindir / program), *args]
        if self.user is not None:
            command = _as_user(self.user, command)
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=self.root, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{shlex.join(command)} exited with {done.returncode}:\n{done.stdout}{done.stderr}"
            )

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return "server log:\n" + "\n".join(self.log.read_text().splitlines()[-20:])
        return ""


def _unprivileged_user() -> str:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            if pwd.getpwnam(name).pw_uid != 0:
                return name
    raise RuntimeError("running as root and found neither a 'postgres' nor a 'nobody' user")


def _as_user(user: str, command: list[str]) -> list[str]:
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", user, "--", *command]
    su = shutil.which("su")
    if su:
        return [su, user, "-s", "/bin/sh", "-c", shlex.join(command)]
    raise RuntimeError("running as root, and neither runuser nor su is available")


def _tmp_base(user: str | None) -> str | None:
    """Where the cluster directory goes: the usual temporary directory, unless the cluster's
    user cannot reach it (TMPDIR inside root's home), then /tmp."""
    base = tempfile.gettempdir()
    if user is None:
        return base
    path = Path(base).resolve()
    reachable = all(p.stat().st_mode & 0o001 for p in (path, *path.parents))
    return base if reachable else "/tmp"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
