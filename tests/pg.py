"""A throwaway PostgreSQL server for the tests: Debian's `postgresql` binaries, a data folder in a
temporary directory, trust authentication, listening on 127.0.0.1 at a free port. PostgreSQL
refuses to run as root, so as root the server runs as `nobody`."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Optional


def binaries() -> Optional[Path]:
    """The newest installed server's bin folder (None when postgresql is not installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server; `url(dbname)` addresses a database of it, `new_database()` makes a fresh one."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="imagecl-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "imagecl"
        self._as: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.root, nobody.pw_uid, nobody.pw_gid)
            self._as = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
        self._count = 0
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", self.user, "--no-sync", "-E", "UTF8")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(self._as + [str(self.bin / tool), *args], capture_output=True, text=True,
                              cwd=self.root, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-o",
                  f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=50", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        import psycopg

        self._count += 1
        name = f"t{self._count}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def close(self) -> None:
        try:
            self.stop("immediate")
        except RuntimeError:  # already stopped (a test that failed while it was down)
            pass
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start() -> tuple[Optional[Server], str]:
    """(a running server, "") or (None, why there is none)."""
    bin_dir = binaries()
    if bin_dir is None:
        return None, "PostgreSQL is not installed (scripts/setup.sh installs Debian's postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg 3 is not installed (pip install 'psycopg[binary]')"
    return Server(bin_dir), ""
