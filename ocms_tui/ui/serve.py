"""`ocms-tui --serve`: the same dashboard in a browser, through textual-serve.

textual-serve starts one dashboard process per browser tab, from a shell command line.
That line is built here with `shlex`, so a directory name can never add shell syntax, and
it runs this same interpreter, so the served dashboard is exactly the installed one.

Only loopback is bound unless another address is asked for: the dashboard shows file
paths and metric names, and the usual way in from a laptop is an SSH tunnel.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ocms_tui.follow.report import ExitCode
from ocms_tui.format.directories import directory_problem
from ocms_tui.ui.options import DEFAULT_HOST, DEFAULT_MAX_SESSIONS, DEFAULT_PORT

# The terminal size a browser asks for, in cells, is clamped to this: a dashboard asked for
# 100000x100000 would allocate and draw a screen of gigabytes.
MIN_TERMINAL_SIZE = (20, 10)
MAX_TERMINAL_SIZE = (500, 200)
FALLBACK_TERMINAL_SIZE = (80, 24)  # textual-serve's own default, for sizes that are no number
INSTALL_HINT = "pip install 'ocms-tui[serve]'"

# Why a bind failed, in words a user can act on; anything else is reported as-is.
_BIND_ERRORS = {
    errno.EADDRINUSE: "port {port} on {host} is already in use; pick another with --port N",
    errno.EADDRNOTAVAIL: "{host} is not an address of this machine; the default is --host 127.0.0.1",
    errno.EACCES: "no permission to listen on port {port}; ports below 1024 need root, try --port 8000",
}


def dashboard_command(
    paths: Sequence[Path], poll: float | None = None, options: Sequence[str] = ()
) -> str:
    """The shell command line textual-serve runs for each browser session.

    `options` are the dashboard's own (`--sort=-loss`, `--top=3`...), given as the terminal
    dashboard was given them. Paths are made absolute (the server's working directory is not
    promised to anyone) and follow `--`, so a directory named like an option stays a
    directory.
    """
    arguments = [sys.executable, "-m", "ocms_tui"]
    if poll is not None:
        arguments += ["--poll", repr(float(poll))]
    arguments += [*options, "--", *(str(path.absolute()) for path in paths)]
    return shlex.join(arguments)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_origins(host: str, port: int) -> frozenset[str]:
    """The page origins whose websockets are served: the printed URL's, and on a loopback
    bind the other names of loopback (an SSH tunnel is opened as localhost or 127.0.0.1).

    Any other page in the user's browser (another site, a DNS-rebinding one) sends its own
    Origin and is refused: it could otherwise read the dashboard and type into it.
    """
    origins = {browser_url(host, port)}
    if is_loopback(host):
        origins |= {f"http://{name}:{port}" for name in ("localhost", "127.0.0.1", "[::1]")}
    return frozenset(origin.lower() for origin in origins)


def clamp_terminal_size(width: object, height: object) -> tuple[int, int]:
    """A size a browser asked for, as a size a dashboard may be given."""
    size = []
    for value, fallback, low, high in zip(
        (width, height), FALLBACK_TERMINAL_SIZE, MIN_TERMINAL_SIZE, MAX_TERMINAL_SIZE, strict=True
    ):
        try:
            cells = int(str(value), 10)
        except ValueError:
            cells = fallback
        size.append(min(max(cells, low), high))
    return size[0], size[1]


class _ClampedResize:
    """textual-serve's AppService, but every resize from the browser is clamped."""

    def __init__(self, service: Any) -> None:
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._service, name)

    async def set_terminal_size(self, width: object, height: object) -> None:
        await self._service.set_terminal_size(*clamp_terminal_size(width, height))


def browser_url(host: str, port: int) -> str:
    """The address a browser uses: a wildcard bind is reached through this machine's name."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:  # an IPv6 literal needs brackets in a URL
        host = f"[{host}]"
    return f"http://{host}:{port}"


def startup_message(host: str, port: int) -> str:
    url = browser_url(host, port)
    lines = [f"ocms-tui dashboard at {url}  (Ctrl+C stops serving)"]
    if is_loopback(host):
        tunnel_target = url.removeprefix("http://").rsplit(":", 1)[0]
        # The page's websocket URL names this host and port, so the tunnel must keep both.
        lines.append(
            f"From another machine: ssh -L {port}:{tunnel_target}:{port} {socket.gethostname()}"
            f" (same port on both ends), then open {url} there."
        )
    else:
        lines.append(f"Listening on {host}: anyone who can reach this port can see the dashboard.")
    return "\n".join(lines)


def serve_dashboard(
    paths: list[Path],
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    poll: float | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    dashboard_options: Sequence[str] = (),
) -> int:
    """Serve the dashboard on `paths` at http://host:port until interrupted; each
    session's dashboard gets `dashboard_options` (see dashboard_command).

    Websockets from other pages' origins are refused (403), sessions beyond `max_sessions`
    get 503, and the terminal size a browser asks for is clamped.

    Returns an ExitCode: OK after Ctrl+C or SIGTERM, USAGE when textual-serve is missing,
    the port is out of range, a directory does not exist, or the address cannot be bound
    (port in use, not this machine's address, no permission).
    """
    try:
        from aiohttp import web
        from textual_serve.server import Server
    except ImportError:
        return _fail(f"--serve needs textual-serve: {INSTALL_HINT}")
    if max_sessions < 1:
        return _fail(f"--max-sessions must be at least 1, got {max_sessions}")
    if not 1 <= port <= 65535:
        # Port 0 would bind a random port while the printed URL and the page said 0.
        return _fail(f"--port must be between 1 and 65535, got {port}")
    unreadable = [problem for path in paths if (problem := directory_problem(Path(path)))]
    if unreadable:
        return _fail(unreadable[0].message)

    bind_error = _bind_error(host, port)
    if bind_error is not None:
        return _fail(bind_error)

    open_sessions: set[asyncio.Task[Any]] = set()
    origins = allowed_origins(host, port)

    class DashboardServer(Server):
        async def on_startup(self, app: object) -> None:
            # Replaces textual-serve's banner, which shows the raw command line.
            print(startup_message(host, port), flush=True)

        async def handle_websocket(self, request: Any) -> Any:
            origin = request.headers.get("Origin", "").lower()
            if origin not in origins:
                return web.Response(
                    status=403,
                    text=f"websocket refused: origin {origin or '(none)'} is not this dashboard's "
                    f"page; open {browser_url(host, port)}\n",
                )
            # No await between this check and add(): sessions cannot race past the cap.
            if len(open_sessions) >= max_sessions:
                return web.Response(
                    status=503,
                    text=f"all {max_sessions} dashboard sessions are in use; close one "
                    "(or restart with a higher --max-sessions)\n",
                )
            width, height = clamp_terminal_size(
                request.query.get("width", FALLBACK_TERMINAL_SIZE[0]),
                request.query.get("height", FALLBACK_TERMINAL_SIZE[1]),
            )
            request = request.clone(
                rel_url=request.rel_url.update_query(width=width, height=height)
            )
            session = asyncio.current_task()
            if session is not None:
                open_sessions.add(session)
            try:
                return await super().handle_websocket(request)
            finally:
                open_sessions.discard(session)  # type: ignore[arg-type]

        async def _process_messages(self, websocket: Any, app_service: Any) -> None:
            # textual-serve's message loop, with each "resize" clamped like the first size.
            await super()._process_messages(websocket, _ClampedResize(app_service))

        async def on_shutdown(self, app: object) -> None:
            # aiohttp would wait for open browser tabs (about 25 s) before Ctrl+C takes
            # effect; ending each session quits its dashboard and closes its websocket.
            for session in list(open_sessions):
                session.cancel()

    server = DashboardServer(
        dashboard_command(paths, poll, dashboard_options),
        host=host,
        port=port,
        title="ocms-tui",
        public_url=browser_url(host, port),
    )
    try:
        server.serve()
    except OSError as error:  # lost a race for the port since the probe
        return _fail(_describe_bind_error(error, host, port))
    return ExitCode.OK


def _bind_error(host: str, port: int) -> str | None:
    """Why `host:port` cannot be listened on, found before the server starts.

    aiohttp runs the startup hook (which prints the URL) before it binds, so without
    this probe a taken port would print a URL and then fail.
    """
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return f"cannot serve on {host}:{port}: {error.strerror}"
    for family, kind, protocol, _name, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            # The same option aiohttp sets, so a port in TIME_WAIT is not refused here only.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as error:
                return _describe_bind_error(error, host, port)
    return None


def _describe_bind_error(error: OSError, host: str, port: int) -> str:
    template = _BIND_ERRORS.get(error.errno or 0)
    reason = template.format(host=host, port=port) if template else str(error)
    return f"cannot serve on {host}:{port}: {reason}"


def _fail(message: str, stream: TextIO | None = None) -> int:
    print(f"ocms-tui: {message}", file=stream or sys.stderr)
    return ExitCode.USAGE
