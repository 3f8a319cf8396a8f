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


class Worker:
    """The test side: start a worker with `pocl_devices`, run cases in it."""

    def __init__(self, pocl_devices: str) -> None:
        import os
        import subprocess
        from pathlib import Path

        env = dict(os.environ, POCL_DEVICES=pocl_devices)
        env.pop("IMAGECL_DEVICE", None)
        here = Path(__file__).resolve().parent
        self.process = subprocess.Popen([sys.executable, "-c", "import multidevice_worker as w; w.serve()"],
                                        cwd=here, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)

    def run(self, case: str) -> None:
        assert self.process.poll() is None, "the multi-device worker has stopped"
        self.process.stdin.write(case + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the multi-device worker stopped during " + case
        answer = json.loads(line)
        assert answer["ok"], f"{case} failed in the worker:\n{answer['error']}"

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
