"""The tuning service's client: what `imagecl.load(path, service=URL)` (or `$IMAGECL_SERVICE`)
and `imagecl tune --service URL` use.

The service is a help, never a dependency: a service that cannot be reached, answers with an
error, or returns a configuration that is not valid here is reported with one warning per
service address, and the program runs its local tuned or default configuration. Connections
time out quickly (CONNECT_TIMEOUT), and a service that failed is not asked again for
RETRY_AFTER seconds, so that a program in a loop is not slowed by a service that is down.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from typing import Any, Iterable, Optional

from ..errors import ConfigError

ENV = "IMAGECL_SERVICE"
TOKEN_ENV = "IMAGECL_SERVICE_TOKEN"  # Submit's token (an environment variable: never on a command line)
CONNECT_TIMEOUT = 0.5
READ_TIMEOUT = 10.0  # a first Request compiles the program and may run the model
RETRY_AFTER = 60.0

_lock = threading.Lock()
_warned: set[str] = set()
_down_until: dict[str, float] = {}
_clients: dict[str, "ServiceClient"] = {}


class ServiceUnavailable(Exception):
    """The service could not answer (unreachable, an error status, a malformed reply)."""


def service_url(explicit: Optional[str] = None) -> Optional[str]:
    url = explicit or os.environ.get(ENV) or None
    return url.rstrip("/") if url else None


def warn_once(url: str, why: str, then: str = "running the local configuration instead") -> None:
    with _lock:
        _down_until[url] = time.monotonic() + RETRY_AFTER
        if url in _warned:
            return
        _warned.add(url)
    warnings.warn(f"tuning service {url}: {why}; {then}", RuntimeWarning, stacklevel=3)


class ServiceClient:
    def __init__(self, url: str, token: Optional[str] = None) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._http = httpx.Client(base_url=self.url, timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
                                  trust_env=False)
        self._httpx = httpx

    def post(self, verb: str, body: dict, token: bool = False) -> dict:
        headers = {"Authorization": f"Bearer {self.token}"} if token and self.token else {}
        try:
            reply = self._http.post(f"/{verb}", json=body, headers=headers)
        except self._httpx.HTTPError as exc:
            raise ServiceUnavailable(f"cannot reach it ({exc.__class__.__name__}: {exc})") from None
        try:
            data = reply.json()
        except ValueError:
            data = None
        if reply.status_code != 200 or not isinstance(data, dict):
            why = data.get("error") if isinstance(data, dict) else reply.text[:200]
            raise ServiceUnavailable(f"/{verb} answered {reply.status_code}: {why}")
        return data

    def close(self) -> None:
        self._http.close()


def client(url: str) -> ServiceClient:
    with _lock:
        found = _clients.get(url)
        if found is None:
            found = _clients[url] = ServiceClient(url)
        return found


def _available(url: str) -> bool:
    return _down_until.get(url, 0.0) <= time.monotonic()


def case_body(program: Any, cl_device: Any, size_xyz: tuple[int, ...]) -> dict:
    from dataclasses import asdict

    from ..features.device import device_features

    source = program.info.unit.source
    return {"program": {"source": source, "filename": os.path.basename(program.filename)[:200] or "program.icl"},
            "device": asdict(device_features(cl_device)), "size": [int(s) for s in size_xyz]}


def configuration(url: str, program: Any, cl_device: Any, space: Any, size_xyz: tuple[int, ...]) -> Optional[dict]:
    """The configuration the service at `url` gives `program` on `cl_device` at `size_xyz`, made
    complete and valid in `space`; None (after one warning per service) when it cannot."""
    if not _available(url):
        return None
    try:
        answer = client(url).post("request", case_body(program, cl_device, size_xyz))
        return space.complete(answer.get("configuration"))
    except ServiceUnavailable as exc:
        warn_once(url, str(exc))
    except ConfigError as exc:
        warn_once(url, f"it returned a configuration not valid here ({exc})")
    return None


def submit_run(url: Optional[str], program: Any, cl_device: Any, size_xyz: tuple[int, ...],
               records: Iterable[Any]) -> Optional[int]:
    """Send a tuning run's stored records (tuner.store.Record) to the service in one Submit;
    returns how many it stored, or None (after a warning) when it could not."""
    if not url:
        return None
    observations = []
    base = case_body(program, cl_device, size_xyz)
    for r in records:
        item = {**base, "configuration": r.config}
        if r.status == "ok" and r.time is not None and r.time > 0:
            item["seconds"] = float(r.time)
            times = [float(t) for t in r.times if isinstance(t, (int, float)) and t > 0][:1000]
            if times:
                item["times"] = times
        elif r.status == "ok":
            continue  # a time the service cannot take (zero): nothing to teach
        else:
            item["failure"] = r.status
        observations.append(item)
    stored = 0
    try:
        for start in range(0, len(observations), 1000):
            stored += client(url).post("submit", {"observations": observations[start:start + 1000]},
                                       token=True)["stored"]
    except (ServiceUnavailable, KeyError, TypeError) as exc:
        warn_once(url, f"Submit failed after {stored} observations ({exc})", "the measurements stay in the local store")
        return None
    return stored


def served_config(program: Any, cl_device: Any, space: Any, size_xyz: tuple[int, ...]) -> Optional[dict]:
    """For a program with no local tuning: the configuration of its service (`load(...,
    service=URL)`, else $IMAGECL_SERVICE), asked once per device and size and remembered; None
    without a service or when it cannot answer."""
    url = service_url(getattr(program, "service", None))
    if url is None:
        return None
    from ..runtime.devices import device_key

    memo = program.__dict__.setdefault("_served", {})
    key = (url, device_key(cl_device), tuple(size_xyz))
    if key not in memo:
        config = configuration(url, program, cl_device, space, size_xyz)
        if config is None:
            return None  # asked again after RETRY_AFTER: the service may be back
        memo[key] = config
    return memo[key]
