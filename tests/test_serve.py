"""`--serve`: the dashboard served by textual-serve, seen over HTTP, its websocket, and Chromium.

Every server runs in its own process group on a free loopback port and is killed with its
dashboard children at the end; every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="needs the serve extra: pip install 'ocms-tui[serve]'")
aiohttp = pytest.importorskip("aiohttp")
pyte = pytest.importorskip("pyte")

from ocms_tui.cli import DASHBOARD, build_parser  # noqa: E402
from ocms_tui.ui.demo import write_demo_run  # noqa: E402
from ocms_tui.ui.options import served_options  # noqa: E402
from ocms_tui.ui.serve import (  # noqa: E402
    MAX_TERMINAL_SIZE,
    MIN_TERMINAL_SIZE,
    allowed_origins,
    clamp_terminal_size,
    dashboard_command,
    serve_dashboard,
    startup_message,
)

LAST_STEP = "step 199"  # the legend line of a chart read to the demo's last step
CHART_NAMES = ("loss", "learning_rate", "epoch", "timing", "eval_score", "grad_norm")
# Shell syntax that would create INJECTED next to the run if the command line were not quoted.
HOSTILE_NAME = "run $(touch INJECTED); `touch INJECTED` 'x\" --check"
SERVER_START_SECONDS = 30.0
SCREEN_SECONDS = 60.0
CHROMIUM = shutil.which("chromium")

LAUNCHER = """
import sys
from pathlib import Path
from ocms_tui.ui.serve import serve_dashboard
raise SystemExit(serve_dashboard([Path(sys.argv[2])], port=int(sys.argv[1])))
"""


@dataclass
class Served:
    url: str
    port: int
    run_directory: Path
    process: subprocess.Popen[bytes]


def page_origin(served: Served) -> str:
    """The Origin a browser sends from the served page."""
    return f"http://127.0.0.1:{served.port}"


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group (server, shells, dashboards), then SIGKILL what is left."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            if sig == signal.SIGTERM:
                # The leader is gone; its dashboard children may still be quitting.
                os.killpg(process.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def wait_for_http(url: str, process: subprocess.Popen[bytes]) -> None:
    import urllib.request

    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode} before answering")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"server did not answer {url} within {SERVER_START_SECONDS} s")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    run_directory = tmp_path / HOSTILE_NAME
    write_demo_run(run_directory, steps=200, seed=0)
    launcher = tmp_path / "launch_serve.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    port = free_loopback_port()
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(launcher), str(port), str(run_directory)],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for_http(url, process)
        yield Served(url, port, run_directory, process)
    finally:
        stop_process_group(process)
    assert not (tmp_path / "INJECTED").exists(), "the directory name ran as shell code"


def chart_titles_missing(screen_text: str) -> list[str]:
    # A panel's title sits in its top border ("╭─ loss · ema off · linear ──"); a bare name
    # could be a legend.
    return [name for name in CHART_NAMES if f"─ {name} · ema " not in screen_text]


def shows_whole_run(screen_text: str) -> bool:
    return not chart_titles_missing(screen_text) and LAST_STEP in screen_text


def live_processes_in_group(group: int) -> list[int]:
    """Processes (not zombies) in a process group, from /proc."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            # Fields after the parenthesised command: state, ppid, pgrp, ...
            state, _parent, process_group = stat_file.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue  # exited while we looked
        if int(process_group) == group and state != "Z":
            found.append(int(stat_file.parent.name))
    return found


def assert_shows_every_chart(screen_text: str) -> None:
    """Every chart's panel, and the run read to its last step (199 of the demo's 200)."""
    missing = chart_titles_missing(screen_text)
    assert not missing, f"chart panels {missing} not on the served screen:\n{screen_text}"
    assert LAST_STEP in screen_text, f"the run was not read to its end:\n{screen_text}"


def test_command_line_quotes_directory_names(tmp_path: Path) -> None:
    hostile = tmp_path / HOSTILE_NAME
    option_like = Path("--check")  # relative: made absolute, and after `--` anyway
    command = dashboard_command([hostile, option_like], poll=0.5)
    assert shlex.split(command) == [
        sys.executable,
        "-m",
        "ocms_tui",
        "--poll",
        "0.5",
        "--",
        str(hostile),
        str(Path.cwd() / "--check"),
    ]
    assert shlex.split(dashboard_command([hostile])) == [
        sys.executable,
        "-m",
        "ocms_tui",
        "--",
        str(hostile),
    ]


def test_command_line_gives_the_dashboard_options_before_the_paths(tmp_path: Path) -> None:
    hostile = tmp_path / HOSTILE_NAME
    options = ["--sort=-loss", "--top=3", f"--group={HOSTILE_NAME}", "--no-health"]
    assert shlex.split(dashboard_command([hostile], poll=1, options=options)) == [
        sys.executable,
        "-m",
        "ocms_tui",
        "--poll",
        "1.0",
        *options,
        "--",
        str(hostile),
    ]


def parsed_dashboard_options(arguments: list[str]) -> argparse.Namespace:
    """The options `ocms-tui ARGUMENTS` (no command: the dashboard) is run with."""
    options, unknown = build_parser(configured=()).parse_known_args([DASHBOARD, *arguments])
    assert unknown == []
    return options


@pytest.mark.parametrize(
    "given",
    [
        [],
        ["--sort=-grad_norm", "--top", "2", "--group", "--no-health", "--notify"],
        ["--sort", "+accuracy", "--group", r"s(ee)?d\d+ $(x)", "--baseline", "base"],
        ["--sort", "eval/loss", "--top", "40"],
    ],
)
def test_served_dashboards_get_the_dashboard_options_the_terminal_one_would(
    given: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: --serve dropped --sort/--top/--group; every dashboard option is passed on,
    and each session's dashboard parses them to the same values."""
    monkeypatch.chdir(tmp_path)
    typed = parsed_dashboard_options(["--serve", *given, "run"])
    command = shlex.split(dashboard_command([Path("run")], options=served_options(typed)))
    monkeypatch.chdir("/")  # a session's working directory is not the server's
    session = parsed_dashboard_options(command[3:])
    assert session.paths == [tmp_path / "run"] and not session.serve
    for name in ("sort", "top", "group", "notify", "no_health"):
        assert getattr(session, name) == getattr(typed, name), name
    expected_baseline = None if typed.baseline is None else tmp_path / typed.baseline
    assert session.baseline == expected_baseline


def test_startup_message_gives_url_and_tunnel_and_warns_off_loopback() -> None:
    local = startup_message("127.0.0.1", 8000)
    assert "http://127.0.0.1:8000" in local
    assert "ssh -L 8000:127.0.0.1:8000" in local
    exposed = startup_message("0.0.0.0", 8000)
    assert "anyone who can reach this port" in exposed
    assert "ssh -L" not in exposed


def test_port_out_of_range_and_missing_directory_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_dashboard([tmp_path], port=0) == 2
    assert "--port must be between 1 and 65535, got 0" in capsys.readouterr().err
    assert serve_dashboard([tmp_path / "absent"], port=free_loopback_port()) == 2
    assert f"the directory {tmp_path / 'absent'} does not exist" in capsys.readouterr().err


def test_port_in_use_is_a_usage_error_without_traceback(tmp_path: Path) -> None:
    write_demo_run(tmp_path / "run", steps=20, seed=0)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        launcher = tmp_path / "launch_serve.py"
        launcher.write_text(LAUNCHER, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(launcher), str(port), str(tmp_path / "run")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "http://" not in result.stdout  # no URL printed for a server that never ran


@pytest.mark.slow  # a server process and its dashboards
def test_page_loads_and_points_its_websocket_at_the_server(served: Served) -> None:
    import urllib.request

    with urllib.request.urlopen(served.url, timeout=10) as response:
        page = response.read().decode("utf-8")
    assert "<title>ocms-tui</title>" in page or ">ocms-tui<" in page
    assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in page
    with urllib.request.urlopen(f"{served.url}static/js/textual.js", timeout=10) as response:
        assert response.status == 200
        assert len(response.read()) > 10_000


@pytest.mark.slow  # a server process and its dashboards
async def test_websocket_session_renders_every_chart(served: Served) -> None:
    """What a browser session receives, replayed through a terminal emulator."""
    columns, rows = 160, 48
    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    url = f"ws://127.0.0.1:{served.port}/ws?width={columns}&height={rows}"
    deadline = time.monotonic() + SCREEN_SECONDS
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            url, origin=page_origin(served), timeout=aiohttp.ClientWSTimeout(ws_close=5)
        ) as websocket,
    ):
        await websocket.send_json(["resize", {"width": columns, "height": rows}])
        while time.monotonic() < deadline:
            try:
                message = await websocket.receive(timeout=max(0.1, deadline - time.monotonic()))
            except asyncio.TimeoutError:  # not yet TimeoutError on Python 3.10
                break
            if message.type == aiohttp.WSMsgType.BINARY:
                stream.feed(message.data)
                if shows_whole_run("\n".join(screen.display)):
                    break
            elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                break
    assert_shows_every_chart("\n".join(screen.display))


async def read_until_closed(websocket: aiohttp.ClientWebSocketResponse) -> None:
    while not websocket.closed:
        message = await websocket.receive()
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            return


@pytest.mark.slow  # a server process and its dashboards
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups from /proc")
async def test_sigterm_with_a_browser_connected_stops_promptly_with_its_dashboards(
    served: Served,
) -> None:
    group = served.process.pid
    url = f"ws://127.0.0.1:{served.port}/ws?width=100&height=30"
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, origin=page_origin(served)) as websocket,
    ):
        first = await websocket.receive(timeout=SCREEN_SECONDS)
        assert first.type == aiohttp.WSMsgType.BINARY  # a dashboard is drawing
        dashboards = [pid for pid in live_processes_in_group(group) if pid != group]
        assert dashboards, "no dashboard process for the open session"
        # Keep reading, as a browser does, so the server's close handshake is answered.
        reading = asyncio.create_task(read_until_closed(websocket))
        started = time.monotonic()
        served.process.send_signal(signal.SIGTERM)  # the server only, as Ctrl+C would
        exit_code = await asyncio.to_thread(served.process.wait, 15)
        stopped_after = time.monotonic() - started
        await asyncio.wait_for(reading, timeout=5)
    assert exit_code == 0
    assert stopped_after < 5, f"took {stopped_after:.1f} s to stop with a browser connected"
    deadline = time.monotonic() + 5
    while live_processes_in_group(group) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not live_processes_in_group(group), "dashboard processes outlived the server"


# Installed before the page's scripts run: textual-serve keeps its xterm.js Terminal in a
# `terminal` property and exposes it nowhere, so catch the assignment. Reading the
# terminal's buffer gives the text the page draws on its canvas.
CATCH_TERMINAL_JS = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  get() { return undefined; },
  set(value) {
    Object.defineProperty(this, "terminal",
      {value, writable: true, configurable: true, enumerable: true});
    if (value && typeof value.onData === "function" && value.buffer) {
      window.__servedTerminal = value;
    }
  },
});
"""
READ_SCREEN_JS = """
(() => {
  const terminal = window.__servedTerminal;
  if (!terminal) return null;
  const buffer = terminal.buffer.active;
  const rows = [];
  for (let y = 0; y < terminal.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
})()
"""


class DevTools:
    """The few Chrome DevTools protocol calls the test needs, over one page's websocket."""

    def __init__(self, websocket: aiohttp.ClientWebSocketResponse) -> None:
        self.websocket = websocket
        self.next_id = 0

    async def call(self, method: str, **params: object) -> dict[str, object]:
        self.next_id += 1
        await self.websocket.send_json({"id": self.next_id, "method": method, "params": params})
        while True:
            reply = json.loads(await self.websocket.receive_str(timeout=30))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply["result"]


@pytest.fixture
async def chromium_page() -> AsyncIterator[DevTools]:
    if CHROMIUM is None:
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium)")
    profile = tempfile.mkdtemp(prefix="ocms-chromium-")
    process = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",  # root in a container
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1600,1000",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert process.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium opened no DevTools port in 30 s"
            await asyncio.sleep(0.1)
        devtools_port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{devtools_port}/json/list") as response:
                targets = await response.json()
            page_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with session.ws_connect(page_url, max_msg_size=0) as websocket:
                yield DevTools(websocket)
    finally:
        stop_process_group(process)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.slow  # a server process and its dashboards
async def test_chromium_shows_every_chart_name(served: Served, chromium_page: DevTools) -> None:
    await chromium_page.call("Page.enable")
    await chromium_page.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL_JS)
    started = time.monotonic()
    await chromium_page.call("Page.navigate", url=served.url)
    screen_text: str | None = None
    while time.monotonic() - started < SCREEN_SECONDS:
        result = await chromium_page.call(
            "Runtime.evaluate", expression=READ_SCREEN_JS, returnByValue=True
        )
        screen_text = result["result"].get("value")  # type: ignore[union-attr]
        if screen_text is not None and shows_whole_run(screen_text):
            break
        await asyncio.sleep(0.5)
    print(f"chromium: {time.monotonic() - started:.1f} s from navigation to every chart")
    assert screen_text is not None, (
        "the page made no xterm.js Terminal in a `terminal` property: "
        "has textual-serve's page changed? (see CATCH_TERMINAL_JS)"
    )
    assert_shows_every_chart(screen_text)


# -- who may connect, how many, how big -----------------------------------------------------


@contextlib.contextmanager
def serve_cli(tmp_path: Path, *options: str) -> Iterator[Served]:
    """`ocms-tui --serve` as a user types it (no --host), on a small run and a free port."""
    run_directory = tmp_path / "run"
    write_demo_run(run_directory, steps=30, seed=0)
    port = free_loopback_port()
    with (tmp_path / "serve-cli.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ocms_tui",
                "--serve",
                "--port",
                str(port),
                *options,
                str(run_directory),
            ],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", process)
        yield Served(f"http://127.0.0.1:{port}/", port, run_directory, process)
    finally:
        stop_process_group(process)


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a listening TCP socket on `port`, from /proc/net/tcp{,6}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, local_port = local.rsplit(":", 1)
            if state == "0A" and int(local_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                # /proc writes each 32-bit word in host (little-endian) order.
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
                found.add(socket.inet_ntop(family, words))
    return found


async def first_frame(served: Served, origin: str | None, query: str = "") -> bytes:
    """Connect as a browser on `origin` would and return the first bytes a dashboard draws."""
    url = f"ws://127.0.0.1:{served.port}/ws{query}"
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, origin=origin) as websocket,
    ):
        message = await websocket.receive(timeout=SCREEN_SECONDS)
        assert message.type == aiohttp.WSMsgType.BINARY, message
        return bytes(message.data)


async def refusal(served: Served, origin: str | None) -> tuple[int, str]:
    """The HTTP status and body with which the server refuses a websocket."""
    url = f"ws://127.0.0.1:{served.port}/ws"
    headers = {"Origin": origin} if origin else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            url,
            headers={
                **headers,
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            },
        ) as response,
    ):
        return response.status, await response.text()


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads sockets from /proc")
async def test_default_bind_is_loopback_and_foreign_origins_are_refused(tmp_path: Path) -> None:
    with serve_cli(tmp_path) as served:
        assert listening_addresses(served.port) == {"127.0.0.1"}
        # Another site in the user's browser, a DNS-rebinding page, or no browser page at all.
        for origin in (
            "http://evil.example",
            f"http://evil.example:{served.port}",
            "null",
            f"https://127.0.0.1:{served.port}",
            None,
        ):
            status, body = await refusal(served, origin)
            assert status == 403, origin
            assert "is not this dashboard's page" in body
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await first_frame(served, "http://evil.example")
        assert refused.value.status == 403
        # The served page, also opened as localhost through an SSH tunnel.
        assert await first_frame(served, f"http://127.0.0.1:{served.port}")
        assert await first_frame(served, f"http://localhost:{served.port}")


def dashboard_command_lines(group: int) -> list[list[str]]:
    """The command line of each dashboard process the server started."""
    found = []
    for pid in live_processes_in_group(group):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        except OSError:
            continue
        if command[1:3] == ["-m", "ocms_tui"] and "--serve" not in command:
            found.append(command)
    return found


@pytest.mark.slow  # a server process and a dashboard
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
async def test_a_browser_session_runs_the_dashboard_with_the_served_options(
    tmp_path: Path,
) -> None:
    options = ["--sort=-loss", "--top", "1", "--group", "--no-health"]
    with serve_cli(tmp_path, *options) as served:
        url = f"ws://127.0.0.1:{served.port}/ws"
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(url, origin=page_origin(served)) as websocket,
        ):
            message = await websocket.receive(timeout=SCREEN_SECONDS)
            assert message.type == aiohttp.WSMsgType.BINARY, message
            commands = dashboard_command_lines(served.process.pid)
    assert len(commands) == 1, commands
    session_options = parsed_dashboard_options(commands[0][3:])
    assert session_options.paths == [served.run_directory]
    assert session_options.sort == "-loss" and session_options.top == 1
    assert session_options.group is not None and session_options.no_health


async def test_sessions_beyond_max_sessions_get_503(tmp_path: Path) -> None:
    with serve_cli(tmp_path, "--max-sessions", "2") as served:
        origin = page_origin(served)
        url = f"ws://127.0.0.1:{served.port}/ws"
        async with aiohttp.ClientSession() as session:
            first = await session.ws_connect(url, origin=origin)
            second = await session.ws_connect(url, origin=origin)
            for websocket in (first, second):
                assert (await websocket.receive(timeout=SCREEN_SECONDS)).type == (
                    aiohttp.WSMsgType.BINARY
                )
            status, body = await refusal(served, origin)
            assert status == 503
            assert "all 2 dashboard sessions are in use" in body
            await first.close()
            # The closed session's slot is free again once the server has seen the close.
            deadline = time.monotonic() + 15
            while (await refusal(served, origin))[0] == 503:
                assert time.monotonic() < deadline, "a closed session kept its slot"
                await asyncio.sleep(0.2)
            await second.close()


def dashboard_environments(group: int) -> list[dict[str, str]]:
    """The environment of each dashboard process the server started."""
    found = []
    for pid in live_processes_in_group(group):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"ocms_tui" not in command or b"--serve" in command:
                continue
            pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        found.append(dict(p.decode().split("=", 1) for p in pairs if b"=" in p))
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
async def test_terminal_size_a_browser_asks_for_is_clamped(tmp_path: Path) -> None:
    with serve_cli(tmp_path) as served:
        url = f"ws://127.0.0.1:{served.port}/ws?width=100000&height=-5"
        columns, rows = 700, 300  # bigger than the clamp, to see where drawing stops
        screen = pyte.Screen(columns, rows)
        stream = pyte.ByteStream(screen)
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(url, origin=page_origin(served)) as websocket,
        ):
            stream.feed((await websocket.receive(timeout=SCREEN_SECONDS)).data)
            environments = dashboard_environments(served.process.pid)
            assert [(e["COLUMNS"], e["ROWS"]) for e in environments] == [("500", "10")]
            await websocket.send_json(["resize", {"width": 10**9, "height": "99999"}])
            deadline = time.monotonic() + SCREEN_SECONDS
            while time.monotonic() < deadline:
                try:
                    message = await websocket.receive(timeout=2)
                except asyncio.TimeoutError:
                    if drawn_extent(screen)[1] >= 190:
                        break
                    continue
                if message.type == aiohttp.WSMsgType.BINARY:
                    stream.feed(message.data)
        width, height = drawn_extent(screen)
        # Drawn up to the clamp (500x200: the last rows are the footer), never past it.
        assert width == 499 and 190 <= height <= 199, (width, height)


def drawn_extent(screen: pyte.Screen) -> tuple[int, int]:
    """The last column and row with anything drawn."""
    last_column = last_row = -1
    for row, line in enumerate(screen.display):
        text = line.rstrip()
        if text:
            last_row = row
            last_column = max(last_column, len(text) - 1)
    return last_column, last_row


def test_clamp_and_origin_rules() -> None:
    assert clamp_terminal_size("100", "30") == (100, 30)
    assert clamp_terminal_size(10**9, -1) == (MAX_TERMINAL_SIZE[0], MIN_TERMINAL_SIZE[1])
    assert clamp_terminal_size("abc", None) == (80, 24)  # textual-serve's own default
    assert clamp_terminal_size(12.5, "9" * 5000) == (80, 24)  # no whole number: the default
    assert allowed_origins("127.0.0.1", 8000) == {
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://[::1]:8000",
    }
    # Off loopback only the printed URL's origin: the page is opened there.
    assert allowed_origins("10.1.2.3", 9000) == {"http://10.1.2.3:9000"}
