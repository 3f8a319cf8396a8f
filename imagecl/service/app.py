"""The tuning service's HTTP routes (Starlette on uvicorn): OmniTune's verbs as JSON over HTTP.

    POST /request            {program, device, size} -> the configuration to run
    POST /request-training   {program, device, size} -> the configuration worth measuring next
    POST /submit             an observation (or {"observations": [...]}) -> stored (token)
    POST /refuse             {program, device, size, configuration} -> never suggested again (token)
    GET  /health, /stats

Client mistakes get a 4xx with {"error": message} and change nothing; a store that cannot be
reached is a 503 (nothing was stored). docs/service.md has the messages in full.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import ImageCLError
from ..tuner.store import StoreError
from . import protocol
from .knowledge import Knowledge
from .protocol import ProtocolError

log = logging.getLogger("imagecl.service")
CONFIG_ENV = "IMAGECL_SERVE_CONFIG"  # the settings, as JSON, for uvicorn's worker processes
MIN_TOKEN = 16


@dataclass
class Settings:
    db: str
    token_file: Optional[str] = None
    open_submit: bool = False  # Submit and Refuse without tokens (a trusted network only)
    cache_seconds: float = 2.0
    retrain_after: int = 20
    train: bool = True

    def to_env(self) -> str:
        return json.dumps(self.__dict__)

    @staticmethod
    def from_env() -> "Settings":
        return Settings(**json.loads(os.environ[CONFIG_ENV]))


class TokenError(ImageCLError):
    """A token file that cannot be used."""


def read_tokens(path: str) -> list[bytes]:
    """SHA-256 digests of the tokens in `path`: one a line, either the token itself (at least
    16 characters) or `sha256:HEX` (its digest, so that the file need not hold the secret).
    Blank lines and lines starting with '#' are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenError(f"{path}: cannot read the token file ({exc.__class__.__name__}: {exc})") from None
    digests = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("sha256:"):
            hexdigest = line[len("sha256:"):]
            try:
                digest = bytes.fromhex(hexdigest)
            except ValueError:
                digest = b""
            if len(digest) != 32:
                raise TokenError(f"{path}:{number}: 'sha256:' must be followed by 64 hexadecimal digits")
            digests.append(digest)
        elif len(line) < MIN_TOKEN:
            raise TokenError(f"{path}:{number}: a token needs at least {MIN_TOKEN} characters")
        else:
            digests.append(hashlib.sha256(line.encode()).digest())
    if not digests:
        raise TokenError(f"{path}: no tokens in the token file")
    return digests


def _authorized(request: Request, digests: list[bytes]) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    presented = hashlib.sha256(token.strip().encode()).digest()
    ok = False
    for digest in digests:  # every digest compared, in constant time each: no early exit to time
        ok |= hmac.compare_digest(presented, digest)
    return ok


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _body(request: Request):
    return _parse(await _raw(request))


def _parse(raw: bytes):
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"the body is not valid JSON ({str(exc)[:100]})") from None


async def _raw(request: Request) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > protocol.MAX_BODY):
        raise ProtocolError(f"the body is larger than {protocol.MAX_BODY} bytes", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > protocol.MAX_BODY:
            raise ProtocolError(f"the body is larger than {protocol.MAX_BODY} bytes", status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def create_app(settings: Settings, knowledge: Optional[Knowledge] = None) -> Starlette:
    digests = read_tokens(settings.token_file) if settings.token_file else []
    if not digests and not settings.open_submit:
        raise TokenError("Submit and Refuse need tokens: give --token-file FILE (one token per line), or "
                         "--insecure-open-submit to let anyone who reaches the server change its store")
    state: dict = {"knowledge": knowledge}

    def k() -> Knowledge:
        return state["knowledge"]

    async def guarded(request: Request, handler, needs_token: bool = False, raw: bool = False) -> Response:
        try:
            if needs_token and digests and not _authorized(request, digests):
                return _error("this verb needs 'Authorization: Bearer TOKEN' with a token of the server's "
                              "--token-file", 401)
            return await handler(await _raw(request) if raw else await _body(request))
        except ProtocolError as exc:
            return _error(str(exc), exc.status)
        except StoreError as exc:
            log.warning("store unavailable: %s", exc)
            return _error(f"the results store is unavailable ({exc}); nothing was stored, try again", 503)

    async def hot(request: Request, kind: str) -> Response:
        async def handle(raw: bytes) -> Response:
            # the hot path: these exact bytes were validated before (validation is a function of
            # them alone), and their answer is fresh: two dict lookups
            key = k().raw_keys.get(raw)
            if key is not None:
                body = k().cached(key, kind)
                if body is not None:
                    return Response(body, media_type="application/json")
            case = protocol.case(_parse(raw))
            compiled = k().compiled_now(case.program)
            if compiled is not None:
                key = k().cache_key(compiled, case)
                body = k().cached(key, kind)
                if body is not None:
                    k().remember_raw(raw, key)
                    return Response(body, media_type="application/json")
            body, key = await k().answer(case, kind)
            k().remember_raw(raw, key)
            return Response(body, media_type="application/json")

        return await guarded(request, handle, raw=True)

    async def request_(request: Request) -> Response:
        return await hot(request, "request")

    async def training(request: Request) -> Response:
        return await hot(request, "training")

    async def submit(request: Request) -> Response:
        async def handle(data) -> Response:
            stored = await k().submit(protocol.submit(data))
            return JSONResponse({"stored": stored})

        return await guarded(request, handle, needs_token=True)

    async def refuse(request: Request) -> Response:
        async def handle(data) -> Response:
            config = await k().refuse(protocol.refusal(data))
            return JSONResponse({"refused": config})

        return await guarded(request, handle, needs_token=True)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "model": k().model_info.get("state")})

    async def stats(request: Request) -> Response:
        return JSONResponse(k().stats())

    async def startup() -> None:
        if state["knowledge"] is None:
            state["knowledge"] = Knowledge(settings.db, retrain_after=settings.retrain_after,
                                           cache_seconds=settings.cache_seconds, train=settings.train)
        k().start()

    async def shutdown() -> None:
        k().close()

    routes = [Route("/request", request_, methods=["POST"]), Route("/request-training", training, methods=["POST"]),
              Route("/submit", submit, methods=["POST"]), Route("/refuse", refuse, methods=["POST"]),
              Route("/health", health, methods=["GET"]), Route("/stats", stats, methods=["GET"])]
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app):
        await startup()
        try:
            yield
        finally:
            await shutdown()

    return HotPath(Starlette(routes=routes, lifespan=lifespan), state)


_HOT = {"/request": "request", "/request-training": "training"}
_JSON_HEADERS = [(b"content-type", b"application/json")]


class HotPath:
    """An ASGI layer before Starlette for the warm Request: a body seen before whose answer is
    still cached is answered from two dict lookups, without the framework's request and
    response objects (they cost more than the answer: benchmarks/service_load.py --frameworks).
    Everything else, misses included, goes on to Starlette with the body replayed."""

    def __init__(self, app: Starlette, state: dict) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope, receive, send) -> None:
        kind = _HOT.get(scope.get("path", "")) if scope["type"] == "http" and scope["method"] == "POST" else None
        knowledge = self.state.get("knowledge")
        if kind is None or knowledge is None:
            return await self.app(scope, receive, send)
        chunks, size, more = [], 0, True
        while more and size <= protocol.MAX_BODY:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
        else:
            if not more:
                body = b"".join(chunks)
                key = knowledge.raw_keys.get(body)
                answer = knowledge.cached(key, kind) if key is not None else None
                if answer is not None:
                    await send({"type": "http.response.start", "status": 200,
                                "headers": _JSON_HEADERS + [(b"content-length", str(len(answer)).encode())]})
                    await send({"type": "http.response.body", "body": answer})
                    return
        replay = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
        if replay:
            replay[-1]["more_body"] = more

        async def replayed():
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)


def app_from_env() -> Starlette:
    """uvicorn's factory in each worker process (`imagecl serve --workers N`)."""
    return create_app(Settings.from_env())
