"""A process whose PoCL exposes several devices (POCL_DEVICES is read when pyopencl first lists
platforms, so it cannot change inside the test process): it runs the named cases of
multidevice_cases.py, one per line on standard input, and answers one JSON line each."""
from __future__ import annotations

import json
import sys
import traceback


def serve() -> None:
    import multidevice_cases

    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        try:
            getattr(multidevice_cases, name)()
            answer = {"ok": True}
        except BaseException:  # noqa: BLE001 - every failure goes back to the test as text
            answer = {"ok": False, "error": traceback.format_exc()[-4000:]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


# PoCL 3.1 (Debian 12's) can abort a process that runs kernels on several of its CPU devices at
# once: an assertion in its cache of compiled work-group functions, not in imagecl. It was seen in
# two of this project's full test runs with three devices, each time under a change that made the
# devices' launches more concurrent (both reverted). A worker that dies of it is started again
# and the case runs once more, with a warning; a worker that dies of anything else fails the case.
POCL_ABORT = "pocl_release_dlhandle_cache"


class Worker:
    """The test side: start a worker with `pocl_devices`, run cases in it."""

    def __init__(self, pocl_devices: str) -> None:
        self.pocl_devices = pocl_devices
        self._start()

    def _start(self) -> None:
        import os
        import subprocess
        import tempfile
        from pathlib import Path

        env = dict(os.environ, POCL_DEVICES=self.pocl_devices)
        env.pop("IMAGECL_DEVICE", None)
        here = Path(__file__).resolve().parent
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen([sys.executable, "-c", "import multidevice_worker as w; w.serve()"],
                                        cwd=here, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, text=True)

    def _died_of_pocl(self) -> bool:
        self.process.wait(timeout=60)
        self.stderr.seek(0)
        return POCL_ABORT in self.stderr.read()

    def _ask(self, case: str) -> str:
        self.process.stdin.write(case + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline()

    def run(self, case: str) -> None:
        import warnings

        assert self.process.poll() is None, "the multi-device worker has stopped"
        line = self._ask(case)
        if not line and self._died_of_pocl():
            warnings.warn(f"PoCL aborted the multi-device worker during {case} ({POCL_ABORT}); ran it again")
            for stream in (self.process.stdin, self.process.stdout, self.stderr):
                stream.close()
            self._start()
            line = self._ask(case)
        if not line:
            self.stderr.seek(0)
            raise AssertionError(f"the multi-device worker stopped during {case}:\n{self.stderr.read()[-4000:]}")
        answer = json.loads(line)
        assert answer["ok"], f"{case} failed in the worker:\n{answer['error']}"

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.stderr.close()
