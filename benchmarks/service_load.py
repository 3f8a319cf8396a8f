"""Load benchmark of the tuning service (imagecl serve): warm Request and Submit latency and
throughput with many concurrent keep-alive clients; it starts the server itself and stops.

    python benchmarks/service_load.py --workers N --duration S --out FILE [--clients 64]
    python benchmarks/service_load.py --frameworks --duration S --out FILE   # trivial endpoints

The load generator is `--procs` processes (default: half the cores, at least 2), each running
its share of the clients as asyncio tasks (uvloop) that speak raw HTTP/1.1 on keep-alive
connections: one request in flight per client, the latency of each taken from sending to the
end of the reply. The first second is a warm-up, not counted. Whether the generator could be
the bottleneck is measured, not assumed: `generator` in the output is the same generator against
a trivial raw-asyncio server (no framework, a fixed reply), and `generator_cpu_share` is the
CPU time the generator used over the wall time of each phase.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARMUP = 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(path: str, body: bytes, headers: dict) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _client(port: int, messages: list[bytes], until: float, start_counting: float, out: list, errors: list,
                  interval: float = 0.0, offset: float = 0.0):
    """One keep-alive client. interval 0: closed loop (the next request as soon as the reply is
    in); else open loop: a request every `interval` seconds, its latency counted from when it
    was due (a late send counts against the server, no coordinated omission)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = 0
    due = start_counting - WARMUP + offset
    try:
        while True:
            now = time.perf_counter()
            if interval:
                if due > now:
                    await asyncio.sleep(due - now)
                now, due = due, due + interval
            if now >= until:
                return
            writer.write(messages[i % len(messages)])
            i += 1
            status = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            done = time.perf_counter()
            if now >= start_counting:
                if status[9:12] == b"200":
                    out.append(done - now)
                else:
                    errors.append(status[9:12].decode())
            if not status:
                raise ConnectionError("closed")
    except (OSError, asyncio.IncompleteReadError, ConnectionError) as exc:
        errors.append(type(exc).__name__)
    finally:
        writer.close()


def _generator(port: int, clients: int, messages: list[bytes], duration: float, start_at: float, queue,
               interval: float = 0.0, first: int = 0, total: int = 1) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    latencies: list[float] = []
    errors: list[str] = []

    counted = [0.0]

    async def main():
        while time.time() < start_at:  # all processes start together
            await asyncio.sleep(0.001)
        t0 = time.perf_counter()
        counted[0] = t0 + WARMUP
        # open loop: the clients of all processes take their turns evenly spaced
        await asyncio.gather(*[_client(port, messages, t0 + WARMUP + duration, t0 + WARMUP, latencies, errors,
                                       interval, interval * (first + i) / total)
                               for i in range(clients)])

    cpu = time.process_time()
    asyncio.run(main())
    # the counted phase's real length: in an open loop that the server cannot keep up with, the
    # last replies come after the planned end
    queue.put((latencies, errors, time.process_time() - cpu, time.perf_counter() - counted[0]))


def load(port: int, messages: list[bytes], clients: int, duration: float, procs: int, rate: float = 0.0) -> dict:
    """Run `clients` keep-alive clients in `procs` processes for `duration` seconds; with a
    `rate`, an open loop offering that many requests per second in all."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    start_at = time.time() + 0.5
    shares = [clients // procs + (i < clients % procs) for i in range(procs)]
    interval = clients / rate if rate else 0.0
    firsts = [sum(shares[:i]) for i in range(len(shares))]
    workers = [ctx.Process(target=_generator, args=(port, n, messages, duration, start_at, queue, interval, f, clients))
               for n, f in zip(shares, firsts) if n]
    for w in workers:
        w.start()
    results = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    latencies = sorted(x for r in results for x in r[0])
    errors = [e for r in results for e in r[1]]
    cpu = sum(r[2] for r in results)
    duration = max([duration] + [r[3] for r in results])

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3 if latencies else float("nan")

    return {"requests": len(latencies), "requests_per_s": round(len(latencies) / duration, 1),
            "median_ms": round(pct(0.5), 4), "p90_ms": round(pct(0.9), 4), "p99_ms": round(pct(0.99), 4),
            "mean_ms": round(statistics.fmean(latencies) * 1e3, 4) if latencies else None,
            "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
            "generator_cpu_share": round(cpu / (duration + WARMUP), 3), "seconds": round(duration, 3), "clients": clients, "processes": procs,
            "offered_per_s": rate or None}


# ---- servers ------------------------------------------------------------------------------------------

def _wait(port: int, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


_TRIVIAL = {
    "raw-asyncio": """
import asyncio, uvloop
REPLY = b'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 11\\r\\n\\r\\n{"ok":true}'
class P(asyncio.Protocol):
    def connection_made(self, t): self.t, self.buf = t, b''
    def data_received(self, data):
        self.buf += data
        while True:
            head, sep, rest = self.buf.partition(b'\\r\\n\\r\\n')
            if not sep: return
            n = 0
            for line in head.split(b'\\r\\n'):
                if line[:15].lower() == b'content-length:': n = int(line[15:])
            if len(rest) < n: return
            self.buf = rest[n:]
            self.t.write(REPLY)
async def main():
    server = await asyncio.get_running_loop().create_server(P, '127.0.0.1', PORT)
    await server.serve_forever()
uvloop.run(main())
""",
    "starlette-uvicorn": """
import json, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
async def echo(request):
    data = json.loads(await request.body())
    return Response(json.dumps({"ok": True, "n": len(data)}), media_type="application/json")
app = Starlette(routes=[Route("/request", echo, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=PORT, loop="uvloop", http="httptools", log_level="warning", access_log=False)
""",
    "asgi-uvicorn": """
import json, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    data = json.loads(body)
    reply = json.dumps({"ok": True, "n": len(data)}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]})
    await send({"type": "http.response.body", "body": reply})
uvicorn.run(app, host="127.0.0.1", port=PORT, loop="uvloop", http="httptools", log_level="warning", access_log=False,
            lifespan="off")
""",
    "aiohttp": """
import json, uvloop
from aiohttp import web
async def echo(request):
    data = json.loads(await request.read())
    return web.Response(text=json.dumps({"ok": True, "n": len(data)}), content_type="application/json")
app = web.Application()
app.router.add_post("/request", echo)
uvloop.install()
web.run_app(app, host="127.0.0.1", port=PORT, access_log=None, print=None)
""",
    "fastapi-uvicorn": """
import uvicorn
from fastapi import FastAPI, Request
app = FastAPI()
@app.post("/request")
async def echo(request: Request):
    data = await request.json()
    return {"ok": True, "n": len(data)}
uvicorn.run(app, host="127.0.0.1", port=PORT, loop="uvloop", http="httptools", log_level="warning", access_log=False)
""",
}


_NEEDS = {"raw-asyncio": "uvloop", "starlette-uvicorn": "starlette", "asgi-uvicorn": "uvicorn", "aiohttp": "aiohttp",
          "fastapi-uvicorn": "fastapi"}


def trivial(kind: str, messages: list[bytes], args) -> dict:
    import importlib.util

    if importlib.util.find_spec(_NEEDS[kind]) is None:
        return {"skipped": f"{_NEEDS[kind]} is not installed"}
    port = _free_port()
    code = _TRIVIAL[kind].replace("PORT", str(port))
    process = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    try:
        _wait(port, process, 30)
        return load(port, messages, args.clients, args.duration, args.procs)
    finally:
        process.terminate()
        process.wait(10)


def service_bodies(example: Path, device: dict) -> tuple[bytes, list[bytes]]:
    """The warm Request's body, and Submit bodies (distinct valid configurations in turn)."""
    import imagecl
    from imagecl.service.knowledge import Knowledge
    from imagecl.tuner.knowledge import device_from_json

    case = {"program": {"source": example.read_text(), "filename": example.name}, "device": device,
            "size": [512, 512]}
    space = Knowledge.space(imagecl.load(example), device_from_json(device), (512, 512))
    configs = [space.complete(c) for c in space.random(200, seed=0)]
    submits = [json.dumps({**case, "configuration": c, "seconds": 1e-3 * (1 + i % 17)}).encode()
               for i, c in enumerate(configs)]
    return json.dumps(case).encode(), submits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1, help="server processes (imagecl serve --workers)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per phase (after a 1 s warm-up)")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--procs", type=int, default=max(2, (os.cpu_count() or 2) // 2),
                        help="load generator processes")
    parser.add_argument("--rate", type=float, default=5000.0,
                        help="the open-loop phases' offered requests per second in all (default 5000; 0: none)")
    parser.add_argument("--db", help="the server's store (default: a new SQLite file in a temporary folder)")
    parser.add_argument("--frameworks", action="store_true",
                        help="instead: trivial JSON endpoints of the candidate frameworks (and the raw baseline)")
    parser.add_argument("--rounds", type=int, default=3, help="--frameworks: rounds over the candidates")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    import imagecl

    root = Path(imagecl.__file__).resolve().parent
    features = Path(__file__).resolve().parent / "results" / "knowledge" / "features-cpu.json"
    device = json.loads(features.read_text())["device"]
    example = Path(__file__).resolve().parent.parent / "examples" / "box_blur.icl"
    request_body, submit_bodies = service_bodies(example, device)
    result: dict = {"host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                    "clients": args.clients, "duration_s": args.duration, "generator_processes": args.procs}
    requests = [_request("/request", request_body, {})]
    if args.frameworks:
        # rounds that take the candidates in turn, so that a busy spell of a shared host
        # does not fall on one candidate only
        rounds: dict[str, list] = {kind: [] for kind in _TRIVIAL}
        for _ in range(args.rounds):
            for kind in _TRIVIAL:
                try:
                    rounds[kind].append(trivial(kind, requests, args))
                except (SystemExit, ImportError) as exc:
                    rounds[kind].append({"skipped": str(exc)})
                print(kind, json.dumps(rounds[kind][-1]), file=sys.stderr)
        for kind, runs in rounds.items():
            rates = [r["requests_per_s"] for r in runs if "requests_per_s" in r]
            result[kind] = {"requests_per_s_median": statistics.median(rates) if rates else None,
                            "requests_per_s_each_round": rates, "rounds": runs}
    else:
        result["workers"] = args.workers
        with tempfile.TemporaryDirectory() as tmp:
            token = "benchmark-token-0123456789abcdef"
            (Path(tmp) / "tokens").write_text(token + "\n")
            port = _free_port()
            db = args.db or str(Path(tmp) / "service.db")
            server = subprocess.Popen([sys.executable, "-m", "imagecl", "serve", "--port", str(port), "--db", db,
                                       "--token-file", str(Path(tmp) / "tokens"), "--workers", str(args.workers),
                                       "--no-train", "--cache-seconds", "3600"])
            try:
                _wait(port, server)
                # warm: every worker has compiled the program and cached its answer
                warm = load(port, requests, min(args.clients, 4 * args.workers), 1.0, 1)
                result["warmup"] = {"requests": warm["requests"], "errors": warm["errors"]}
                result["request"] = load(port, requests, args.clients, args.duration, args.procs)
                print("request", json.dumps(result["request"]), file=sys.stderr)
                if args.rate:
                    result["request_at_rate"] = load(port, requests, args.clients, args.duration, args.procs, args.rate)
                    print("request_at_rate", json.dumps(result["request_at_rate"]), file=sys.stderr)
                submits = [_request("/submit", b, {"Authorization": f"Bearer {token}"}) for b in submit_bodies]
                result["submit"] = load(port, submits, args.clients, args.duration, args.procs)
                print("submit", json.dumps(result["submit"]), file=sys.stderr)
            finally:
                server.terminate()
                server.wait(30)
        result["generator"] = trivial("raw-asyncio", requests, args)
        print("generator", json.dumps(result["generator"]), file=sys.stderr)
    del root
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
