"""A PostgreSQL server of our own for the class's answers: the lecture hall's shared database, and the tests'.

`PostgresServer` runs `initdb` once on a data folder of its own, then `postgres` on it as an ordinary process:
TCP on 127.0.0.1 only, on a free port, and a unix socket in a folder of its own (never the system's
/var/run/postgresql, so it meets no cluster the distribution runs). It creates the `anatomy` database and an
`anatomy` role with a random password, and gives the SQLAlchemy URL the app reads
(`ANATOMY_CLASS_DATABASE_URL`). It can be stopped and started again on the same data and port: a test stops
the database in the middle of a class, then brings it back.

PostgreSQL refuses to run as root. Run by root, the server runs as the `postgres` system user that Debian's
package creates, and its data and socket live in a temporary folder that user owns (it could not reach a
folder under root's private temporary folders), removed by `close`. Otherwise they live under `folder`.

The binaries are Debian's (`apt-get install postgresql`: /usr/lib/postgresql/<version>/bin, not on the PATH)
or whatever `initdb` the PATH finds; `postgres_binaries` says which, or None where PostgreSQL is not installed.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from harness.server import ends_with_its_parent, free_port, stop_process

DEBIAN_VERSIONS = Path("/usr/lib/postgresql")  # one folder per major version, each with bin/
SYSTEM_USER = "postgres"  # created by Debian's package: the user a server started by root runs as
SUPERUSER = "postgres"  # initdb's superuser: reached only over the socket in the server's own folder
DATABASE = ROLE = "anatomy"
STARTUP_TIMEOUT_SECONDS = 60
# Fast shutdown: open transactions rolled back, clients disconnected, a checkpoint, exit. (SIGTERM is the
# "smart" shutdown, which waits for every client to leave: a replica's pooled connections never do.)
STOP_SIGNAL = signal.SIGINT


def postgres_binaries(search_path: str | None = None, debian: Path = DEBIAN_VERSIONS) -> Path | None:
    """The folder holding `initdb` and `postgres`: the one of the `initdb` on `search_path` (default: the
    PATH), else Debian's newest version; None where neither is found."""
    found = shutil.which("initdb", path=search_path)
    candidates = [Path(found).resolve().parent] if found else []
    versions = [folder / "bin" for folder in debian.glob("*") if folder.name.isdigit()] if debian.is_dir() else []
    candidates += sorted(versions, key=lambda folder: int(folder.parent.name), reverse=True)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in ("initdb", "postgres")):
            return folder
    return None


class PostgresServer:
    """PostgreSQL on 127.0.0.1:`port` with its data under `folder` (see the module's docstring for root), while
    in a `with` block or between `start()` and `stop()`. `durable=False` trades crash safety for speed (fsync
    off): for tests only, whose data may be lost with the machine; the lecture hall keeps the defaults."""

    def __init__(self, folder: Path, binaries: Path | None = None, port: int | None = None, durable: bool = True):
        found = binaries or postgres_binaries()
        if found is None:
            raise FileNotFoundError("PostgreSQL is not installed here (no initdb and postgres found)")
        self.binaries = found
        self.folder = folder
        self.port = port or free_port()
        self.durable = durable
        self.password = secrets.token_urlsafe(24)  # URL-safe: it goes into the URL as it is
        self.process: subprocess.Popen | None = None
        self.home: Path | None = None  # the data and socket folders' parent, chosen on the first start
        self.log_path = folder / "postgres.log"

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the `anatomy` database, as the `anatomy` role."""
        return self.url_of(DATABASE)

    def url_of(self, database: str) -> str:
        return f"postgresql+psycopg://{ROLE}:{self.password}@127.0.0.1:{self.port}/{database}"

    @property
    def data(self) -> Path:
        return self._home() / "data"

    @property
    def socket_folder(self) -> Path:
        return self._home() / "socket"

    def start(self) -> PostgresServer:
        """Start the server (creating its data, role and database the first time); returns once it answers."""
        self.folder.mkdir(parents=True, exist_ok=True)
        first_time = not (self.data / "PG_VERSION").exists()
        if first_time:
            self._initdb()
        command = [
            str(self.binaries / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.socket_folder}",
            "-c",
            "unix_socket_permissions=0700",
        ]
        if not self.durable:
            # Tests only: a crash of the machine may lose or corrupt these databases, which no test keeps.
            for setting in ("fsync=off", "synchronous_commit=off", "full_page_writes=off"):
                command += ["-c", setting]
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._home(),  # the system user may not enter ours
                start_new_session=True,  # a Ctrl-C in the terminal reaches the hall alone, which stops us in order
                preexec_fn=ends_with_its_parent(os.getpid(), STOP_SIGNAL),  # killed outright, we leave no server
                **as_the_system_user(),
            )
        try:
            self._wait_until_ready()
            if first_time:
                self._create_role_and_database()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """A fast shutdown; the data stays, and `start` brings the same server back on the same port."""
        if self.process is not None:
            stop_process(self.process, stop_signal=STOP_SIGNAL)

    def close(self) -> None:
        """Stop, and remove the data where it lives in a temporary folder of its own (run by root)."""
        self.stop()
        if self.home is not None and not self.home.is_relative_to(self.folder):
            shutil.rmtree(self.home, ignore_errors=True)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def create_database(self, name: str) -> str:
        """A new, empty database owned by the `anatomy` role; returns its URL."""
        with self._superuser() as connection:
            connection.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(ROLE))
            )
        return self.url_of(name)

    def drop_database(self, name: str) -> None:
        """The database gone, whoever is still connected to it."""
        with self._superuser() as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------------------

    def _home(self) -> Path:
        if self.home is None:
            if os.geteuid() == 0:
                self.home = Path(tempfile.mkdtemp(prefix="anatomy-postgres-"))
                user = pwd.getpwnam(SYSTEM_USER)
                os.chown(self.home, user.pw_uid, user.pw_gid)
            else:
                self.home = self.folder / "postgres"
                self.home.mkdir(parents=True, exist_ok=True)
        return self.home

    def _initdb(self) -> None:
        command = [
            str(self.binaries / "initdb"),
            "-D",
            str(self.data),
            "--username",
            SUPERUSER,
            # The superuser without a password over the socket, whose folder only the server's user can enter;
            # every TCP connection with a password (SCRAM).
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
        ]
        if not self.durable:
            command.append("--no-sync")
        self.socket_folder.mkdir(mode=0o700, exist_ok=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam(SYSTEM_USER)
            os.chown(self.socket_folder, user.pw_uid, user.pw_gid)
        with open(self.folder / "initdb.log", "w") as log:
            done = subprocess.run(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=self._home(), **as_the_system_user()
            )
        if done.returncode:
            raise RuntimeError(f"initdb failed with {done.returncode}; see {self.folder / 'initdb.log'}")

    def _wait_until_ready(self, timeout: float = STARTUP_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"postgres exited; see {self.log_path}")
            try:
                with self._superuser():
                    return
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise TimeoutError(f"postgres did not answer within {timeout} s; see {self.log_path}")

    def _create_role_and_database(self) -> None:
        with self._superuser() as connection:
            # A utility statement takes no bound parameter: the password goes in as a quoted literal.
            connection.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(ROLE), sql.Literal(self.password))
            )
        self.create_database(DATABASE)

    def _superuser(self) -> psycopg.Connection:
        return psycopg.connect(
            host=str(self.socket_folder),
            port=self.port,
            user=SUPERUSER,
            dbname="postgres",
            autocommit=True,
            connect_timeout=2,
        )


def as_the_system_user() -> dict:
    """Popen's arguments that run a child as the `postgres` system user when we are root (PostgreSQL refuses
    to run as root); none otherwise."""
    if os.geteuid() != 0:
        return {}
    return {"user": SYSTEM_USER, "group": SYSTEM_USER, "extra_groups": []}
