"""``tenure serve``: the HTTP API and the web dashboard of an App (:mod:`tenure.http`)
under uvicorn.

Every request needs ``Authorization: Bearer <token>``. The token comes from
``$TENURE_API_TOKEN``; without it one is made for this run and printed once on
stderr (set the variable to keep one across restarts). ``$TENURE_API_READ_TOKEN``,
if set, is a second token that reads everything and changes nothing (for the
people and tools that only watch). ``--insecure`` serves
without a token, and only on a loopback address: an open API that enqueues and
cancels work must never reach the network by a slip of a flag.

It logs as the worker does (``--log-level``, ``--log-format``), uvicorn's lines
included. Uvicorn's access lines hold the client, method, path, query string and
status, never a header, so the token stays out of the log. The store may be down
at start: the API answers 503 until it can be reached.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from tenure.app import App
from tenure.cli.output import error
from tenure.cli.parsing import HelpFormatter
from tenure.cli.running import RUNNING, served_app
from tenure.cli.settings import Option, add_options
from tenure.errors import ConfigError, StoreUnavailable
from tenure.store.url import describe_url

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

TOKEN_VARIABLE = "TENURE_API_TOKEN"  # noqa: S105 - the variable's name, not a token
READ_TOKEN_VARIABLE = "TENURE_API_READ_TOKEN"  # noqa: S105 - the same
DEFAULT_PORT = 8765
USAGE = 2

log = logging.getLogger("tenure.http")


def add(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    url_too: argparse.ArgumentParser,
) -> None:
    """Add ``serve`` to ``subcommands``."""
    parser = subcommands.add_parser(
        "serve",
        help="serve an App's HTTP API and web dashboard (needs tenure[web])",
        description="Serve the HTTP API of an App's tasks and store under /api and its web "
        f"dashboard at /, behind a token (${TOKEN_VARIABLE}, or one printed at start), until "
        "SIGTERM or SIGINT.",
        parents=[url_too],
        formatter_class=HelpFormatter,
    )
    # Not layered from the environment or the file: each setting of a server
    # that may face the network is given where it starts.
    add_options(parser, (*RUNNING, *SERVING), {})
    parser.set_defaults(run=None, serve=serve)


def port(text: str) -> int:
    """A TCP port number (0: any free one)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} (0 to 65535)")
    return int(text)


def root_path(text: str) -> str:
    """A path prefix such as ``/queue``: begins with ``/``, does not end with one."""
    if text == "":
        return ""
    if not text.startswith("/") or text.endswith("/") or "//" in text:
        raise argparse.ArgumentTypeError(
            f"not a path prefix: {text!r} (begins with /, does not end with one, e.g. /queue)"
        )
    if any(char in text for char in "?#%\\") or not text.isprintable() or " " in text:
        raise argparse.ArgumentTypeError(
            f"not a path prefix: {text!r} (letters, digits, -, _, . and / only)"
        )
    return text


SERVING = (
    Option("--host", "address to listen on (0.0.0.0: all)", default="127.0.0.1"),
    Option("--port", "port to listen on", default=DEFAULT_PORT, type=port),
    Option("--insecure", "no token: only on a loopback host, for trying out", switch=True),
    Option(
        "--root-path",
        "the path a reverse proxy serves this under, removed before it forwards "
        "(e.g. /queue): the dashboard's links, redirects and cookies begin with it",
        default="",
        type=root_path,
    ),
)
"""The server's own options (beside the running ones)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def serve(args: argparse.Namespace) -> int:
    """``tenure serve``: check the settings, load the App, serve until stopped."""
    if args.insecure and not is_loopback(args.host):
        error(
            f"--insecure on {args.host} would open the API to the network without a token",
            f"use --host 127.0.0.1, or drop --insecure and set ${TOKEN_VARIABLE}",
        )
        return USAGE
    for module in ("starlette", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise ConfigError("tenure serve needs the web extra: pip install 'tenure[web]'")
    token = None if args.insecure else _token()
    if token is None and not args.insecure:
        return USAGE
    app = served_app(args, "http")
    for variable in (TOKEN_VARIABLE, READ_TOKEN_VARIABLE):
        if args.insecure and variable in os.environ:
            log.warning("--insecure: $%s is ignored, no token is asked for", variable)
    _open_now(app)
    try:
        _run(app, token, args)
    finally:
        app.close()
    return 0


def _run(app: App, token: str | None, args: argparse.Namespace) -> None:
    """Serve ``app``'s API until uvicorn is told to stop."""
    from tenure.http import create_app  # noqa: PLC0415 - needs the web extra
    from tenure.http.server import end_streams  # noqa: PLC0415 - needs the web extra

    read_token = None if args.insecure else os.environ.get(READ_TOKEN_VARIABLE)
    served = create_app(app, token=token, insecure=args.insecure, read_token=read_token)
    server, listening = build_server(served, args, on_stop=lambda: end_streams(served))
    # Uvicorn stops gracefully on SIGTERM, then raises it again for the handler it
    # found: with this one, the store is closed and the command ends with 0, as a
    # worker does, instead of being killed by the default action.
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        _announce(app, listening, secured=token is not None, root=args.root_path)
        server.run(sockets=[listening])
    finally:
        signal.signal(signal.SIGTERM, previous)
        listening.close()


def _stopped(signum: int, frame: object) -> None:
    """SIGTERM once uvicorn has shut down: nothing left to do."""


def _token() -> str | None:
    """``$TENURE_API_TOKEN``, or a new one printed once on stderr; ``None``
    (said on stderr, without the value) if the variable's token is unusable."""
    from tenure.http.server import MIN_TOKEN_LENGTH  # noqa: PLC0415 - needs the web extra

    token = os.environ.get(TOKEN_VARIABLE)
    if token is None:
        token = secrets.token_urlsafe(32)
        print(f"API token for this run (set ${TOKEN_VARIABLE} to choose one): {token}",
              file=sys.stderr, flush=True)  # fmt: skip
        return token
    if len(token) < MIN_TOKEN_LENGTH or not all("!" <= c <= "~" for c in token):
        error(
            f"${TOKEN_VARIABLE} must be at least {MIN_TOKEN_LENGTH} visible ASCII characters",
            'e.g. python -c "import secrets; print(secrets.token_urlsafe(32))"',
        )
        return None
    return token


def _open_now(app: App) -> None:
    """Open (and migrate) the App's store before the first request, if it can be."""
    try:
        app.store  # noqa: B018 - opens it
    except StoreUnavailable as exc:
        log.warning("%s; the API answers 503 until the store can be reached", exc)


def build_server(
    api: ASGIApp, args: argparse.Namespace, on_stop: Callable[[], None] = lambda: None
) -> tuple[uvicorn.Server, socket.socket]:
    """A uvicorn server for ``api`` and the socket it will serve, bound now, so
    that an address in use is one line (exit 2), not a traceback. Logging is
    tenure's (``log_config=None``): uvicorn's records go to its handlers.
    ``on_stop`` is called when the server is told to stop, before it waits for
    the open responses."""
    import uvicorn  # noqa: PLC0415 - needs the web extra

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            on_stop()
            super().handle_exit(sig, frame)

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((args.host.strip("[]"), args.port))
        listening.listen(2048)  # connections wait from now on, not from uvicorn's start
    except OSError as exc:
        listening.close()
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    config = uvicorn.Config(
        api,
        log_config=None,
        log_level=args.log_level,
        access_log=True,
        server_header=False,
        lifespan="off",
        root_path=args.root_path,
        # A dashboard tab holds a stream of live updates open: a stop waits this
        # long for it, then closes it (the browser reconnects to the next server).
        timeout_graceful_shutdown=3,
    )
    return Server(config), listening


def _announce(app: App, listening: socket.socket, *, secured: bool, root: str) -> None:
    host, bound = listening.getsockname()[:2]
    where = f"[{host}]" if ":" in host else host
    guard = "bearer token required" if secured else "NO TOKEN (--insecure)"
    proxied = f", served under {root} by the proxy" if root else ""
    log.info(
        "HTTP API of %s on http://%s:%d/api, dashboard on http://%s:%d/ (%s%s); "
        "%d tasks registered",
        describe_url(app.url),
        where,
        bound,
        where,
        bound,
        guard,
        proxied,
        len(app.registry),
    )
