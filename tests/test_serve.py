"""`--serve`: the dashboard served by textual-serve, seen over HTTP, its websocket, and Chromium.

Every server runs in its own process group on a free loopback port and is killed with its
dashboard children at the end; every wait is bounded.
"""

from __future__ import annotations

import asyncio
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

from ocms_tui.demo import write_demo_run  # noqa: E402
from ocms_tui.serve import dashboard_command, serve_dashboard, startup_message  # noqa: E402

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
from ocms_tui.serve import serve_dashboard
raise SystemExit(serve_dashboard([Path(sys.argv[2])], port=int(sys.argv[1])))
"""


@dataclass
class Served:
    url: str
    port: int
    run_directory: Path
    process: subprocess.Popen[bytes]


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
    # A panel's title sits in its top border ("╭─ loss ──"); a bare name could be a legend.
    return [name for name in CHART_NAMES if f"─ {name} ─" not in screen_text]


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
    assert f"{tmp_path / 'absent'}: no such directory" in capsys.readouterr().err


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
        session.ws_connect(url, timeout=aiohttp.ClientWSTimeout(ws_close=5)) as websocket,
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
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as websocket:
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
