"""A throwaway PostgreSQL server (Debian's ``postgresql`` binaries) in a temporary folder,
listening on a Unix socket only: what the selftests and benchmarks/bench_history.py run the
PostgreSQL back end against. initdb refuses to run as root, so as root the server runs as the
``postgres`` user that Debian's package creates.

    with LocalServer() as server:
        url = server.create_database("h1")      # postgresql+psycopg://postgres@/h1?host=<socket dir>
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Optional


def binaries() -> Optional[Path]:
    """The folder holding initdb and postgres, or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                    if Path(p).parent.name.isdigit() else 0, reverse=True):
        if (Path(d) / "initdb").is_file() and (Path(d) / "postgres").is_file():
            return Path(d)
    return None


def unavailable() -> Optional[str]:
    """Why no local server can be started here, or None."""
    if binaries() is None:
        return ("no PostgreSQL server binaries (initdb, postgres): install Debian's `postgresql` "
                "package (scripts/setup.sh does)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run the server as (initdb refuses root)"
        if not shutil.which("runuser"):
            return "running as root and there is no runuser to start the server as `postgres`"
    return None


class LocalServer:
    def __init__(self, max_connections: int = 100):
        why = unavailable()
        if why:
            raise RuntimeError(why)
        self.bin = binaries()
        self.max_connections = max_connections
        self.root: Optional[Path] = None

    def _as_owner(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv

    def start(self) -> "LocalServer":
        # Not under pytest's tmp_path: its folders are 0700 root's, which `postgres` cannot enter.
        self.root = Path(tempfile.mkdtemp(prefix="accel-pg-"))
        self.data, self.socket = self.root / "data", self.root / "sock"
        self.socket.mkdir()
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            for p in (self.root, self.socket):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        subprocess.run(self._as_owner([str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                                       "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"]),
                       check=True, capture_output=True, text=True, timeout=120)
        self.log = open(self.root / "server.log", "ab")
        self.proc = subprocess.Popen(
            self._as_owner([str(self.bin / "postgres"), "-D", str(self.data), "-k", str(self.socket),
                            "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
                            "-c", "full_page_writes=off", "-c", f"max_connections={self.max_connections}"]),
            stdout=self.log, stderr=subprocess.STDOUT)
        # The socket appears before the server accepts connections ("the database system is
        # starting up"): ready is when a connection succeeds.
        import psycopg
        deadline = time.monotonic() + 120
        while True:
            try:
                psycopg.connect(host=str(self.socket), user="postgres", dbname="postgres", connect_timeout=5).close()
                return self
            except psycopg.OperationalError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.root / "server.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"PostgreSQL did not start: {log}")
            time.sleep(0.1)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@/{database}?host={self.socket}"

    def create_database(self, name: Optional[str] = None) -> str:
        import sqlalchemy as sa
        name = name or "h" + uuid.uuid4().hex[:12]
        engine = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            # A database name cannot be a bound parameter: quoted as an identifier.
            conn.exec_driver_sql(f"CREATE DATABASE {engine.dialect.identifier_preparer.quote(name)}")
        engine.dispose()
        return self.url(name)

    def stop(self) -> None:
        if self.root is None:
            return
        pid_file = self.data / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGINT)       # the server's own "fast" shutdown
        except (OSError, ValueError, IndexError):
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
