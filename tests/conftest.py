"""Test-wide settings: tuned configurations and build caches of the user are not consulted."""
from __future__ import annotations

import os
import tempfile

_scratch = tempfile.mkdtemp(prefix="imagecl-tests-")
os.environ["IMAGECL_TUNED"] = os.path.join(_scratch, "tuned")
os.environ.setdefault("IMAGECL_CACHE", os.path.join(_scratch, "cache"))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the session (tests/pg.py); skipped, with the reason, only where
    the server or the driver is not installed."""
    import pg

    server, why = pg.start()
    if server is None:
        pytest.skip(why)
    yield server
    server.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_address(request, tmp_path):
    """The address of a fresh, empty results store of each back end."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return request.getfixturevalue("pg_server").new_database()


@pytest.fixture
def built_sources(monkeypatch):
    """Every OpenCL source prog() asks launcher.build for (one per cache miss): which variant ran,
    where outputs are equal."""
    from imagecl.runtime import launcher

    built, real = [], launcher.build

    def spy(device, source, *a, **kw):
        built.append(source)
        return real(device, source, *a, **kw)

    monkeypatch.setattr(launcher, "build", spy)
    return built
