"""`imagecl serve`: start the tuning service (uvicorn, with uvloop and httptools)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import ArgumentError
from ..tuner.address import mask
from ..tuner.store import Store


def default_db() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "imagecl" / "service.db"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    parser.add_argument("--db", help="results store: a file or postgresql://USER@HOST:PORT/DBNAME, which several "
                                     "servers can share (default: ~/.cache/imagecl/service.db)")
    parser.add_argument("--token-file", metavar="FILE",
                        help="tokens that Submit and Refuse need (one a line: the token, or sha256:HEX of it)")
    parser.add_argument("--insecure-open-submit", action="store_true",
                        help="accept Submit and Refuse without a token (only on a network you trust)")
    parser.add_argument("--workers", type=int, default=1, help="server processes (default 1)")
    parser.add_argument("--cache-seconds", type=float, default=2.0,
                        help="how long an answer is served from memory before the store is read again; what "
                             "another server or worker learned shows within this time (default 2)")
    parser.add_argument("--retrain-after", type=int, default=20,
                        help="observations submitted before the model is trained again in the background (default 20)")
    parser.add_argument("--no-train", action="store_true", help="serve measurements and defaults only, no model")


def main(args: argparse.Namespace) -> int:
    # the web framework is imported here, not at module level: every other command builds this
    # command's parser, and must run where only the measuring dependencies are installed
    from .app import CONFIG_ENV, Settings, read_tokens

    if not 0 < args.port < 65536:
        raise ArgumentError("--port: a port number from 1 to 65535")
    if not 1 <= args.workers <= 256:
        raise ArgumentError("--workers: from 1 to 256")
    if not 0 <= args.cache_seconds <= 3600 or args.retrain_after < 1:
        raise ArgumentError("--cache-seconds: from 0 to 3600; --retrain-after: at least 1")
    db = args.db
    if db is None:
        default_db().parent.mkdir(parents=True, exist_ok=True)
        db = str(default_db())
    settings = Settings(db=db, token_file=os.path.abspath(args.token_file) if args.token_file else None,
                        open_submit=args.insecure_open_submit, cache_seconds=args.cache_seconds,
                        retrain_after=args.retrain_after, train=not args.no_train)
    # everything a worker would fail on is checked here, with a clear message, before it starts
    if settings.token_file:
        read_tokens(settings.token_file)
    elif not settings.open_submit:
        raise ArgumentError("Submit and Refuse need tokens: give --token-file FILE (one token per line), or "
                            "--insecure-open-submit to let anyone who reaches the server change its store")
    Store(db).close()
    import uvicorn

    os.environ[CONFIG_ENV] = settings.to_env()
    print(f"imagecl serve: http://{args.host}:{args.port} ({args.workers} worker{'s' * (args.workers > 1)}), "
          f"store {mask(db)}" + (", Submit and Refuse open to anyone" if settings.open_submit else ""),
          file=sys.stderr, flush=True)
    uvicorn.run("imagecl.service.app:app_from_env", factory=True, host=args.host, port=args.port,
                workers=args.workers, loop="uvloop", http="httptools", access_log=False, log_level="warning",
                timeout_graceful_shutdown=5)
    return 0
