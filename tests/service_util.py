"""Helpers of the tuning service's tests: a server in a thread of this process (uvicorn), one in
a child process (`imagecl serve`), and request bodies."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TOKEN = "s3cret-token-of-the-tests-0123456789"
DEVICE = json.loads((ROOT / "benchmarks" / "results" / "knowledge" / "features-cpu.json").read_text())["device"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body(program: str = "box_blur.icl", size=(64, 48), device=None, **extra) -> dict:
    return {"program": {"source": (EXAMPLES / program).read_text(), "filename": program},
            "device": dict(device or DEVICE), "size": list(size), **extra}


def token_file(folder: Path) -> Path:
    path = folder / "tokens"
    path.write_text(f"# the tests' token\n{TOKEN}\n")
    return path


def auth() -> dict:
    return {"Authorization": f"Bearer {TOKEN}"}


class ThreadServer:
    """`create_app(settings)` served by uvicorn in a thread of this process."""

    def __init__(self, settings, knowledge=None) -> None:
        import uvicorn

        from imagecl.service.app import create_app
        from imagecl.service.knowledge import Knowledge

        self.knowledge = knowledge or Knowledge(settings.db, retrain_after=settings.retrain_after,
                                                cache_seconds=settings.cache_seconds, train=settings.train)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings, self.knowledge), host="127.0.0.1", port=self.port, log_level="warning",
                                access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        self.http = httpx.Client(base_url=self.url, timeout=60)

    def stop(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(30)


class ProcessServer:
    """`imagecl serve` in a child process (so that it can be killed)."""

    def __init__(self, db: str, folder: Path, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(folder / f"server-{self.port}.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "imagecl", "serve", "--port", str(self.port), "--db", db,
             "--token-file", str(token_file(folder)), *extra], stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError("the server did not start: " + (folder / f"server-{self.port}.log").read_text())
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
