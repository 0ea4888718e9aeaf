"""The app served for real: `streamlit run app.py` on a free loopback port, Debian's Chromium to look at it,
and a tiny HTTP server that records every request it gets (to prove that a page fetched nothing).

Shared by the browser tests (tests/browser/conftest.py) and the browser benchmarks (benchmarks/).
"""

from __future__ import annotations

import ctypes
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Screenshots and server logs of tests and benchmarks (ignored by git). Each pytest-xdist worker gets a folder of
# its own: the two workers' session servers would otherwise write one log, and read each other's tracebacks.
ARTIFACTS = ROOT / "test-artifacts" / os.environ.get("PYTEST_XDIST_WORKER", "")
CHROMIUM = Path("/usr/bin/chromium")  # Debian's package: `apt-get install -y chromium`
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
]
STARTUP_TIMEOUT_SECONDS = 90


def chromium_launch_options() -> dict:
    return {"executable_path": str(CHROMIUM), "headless": True, "args": CHROMIUM_ARGS}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def stop_process(process: subprocess.Popen, timeout: float = 15, stop_signal: int = signal.SIGTERM) -> None:
    """`stop_signal` (SIGTERM: most servers' orderly, fast shutdown; PostgreSQL's is SIGINT), then SIGKILL if it
    has not ended within `timeout` seconds."""
    if process.poll() is None:
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def ends_with_its_parent(parent: int, stop_signal: int = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for a child in a session of its own: Linux sends it `stop_signal` when the thread that
    started it ends, so a supervisor killed outright (SIGKILL, which it cannot catch to stop its children)
    leaves no server behind. A child whose parent is already gone by then ends at once."""

    def in_the_child() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, stop_signal) != 0 or os.getppid() != parent:
            os.kill(os.getpid(), stop_signal)

    return in_the_child


class StreamlitServer:
    """`streamlit run app.py` on 127.0.0.1, ready once its health endpoint answers."""

    def __init__(
        self,
        log_path: Path | None = None,
        port: int | None = None,
        environment: dict | None = None,
        script: Path = ROOT / "app.py",
        detached: bool = False,
        folder: Path = ROOT,
    ):
        self.script = script
        self.folder = folder  # where it runs: Streamlit reads the .streamlit/config.toml found there
        self.detached = detached  # in a session of its own: a Ctrl-C in the terminal does not reach it
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(environment or {})}
        self.process: subprocess.Popen | None = None

    def start(self) -> StreamlitServer:
        command = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(self.script),
            "--server.headless=true",
            "--server.address=127.0.0.1",
            f"--server.port={self.port}",
            "--server.fileWatcherType=none",
            "--browser.gatherUsageStats=false",
            "--global.developmentMode=false",
        ]
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            command,
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.environment,
            start_new_session=self.detached,
            preexec_fn=ends_with_its_parent(os.getpid()) if self.detached else None,
        )
        return self

    @property
    def started_process(self) -> subprocess.Popen:
        """The server's process; raises before `start`."""
        if self.process is None:
            raise RuntimeError("the server has not been started")
        return self.process

    def wait_until_healthy(self, timeout: float = STARTUP_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.started_process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.started_process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"streamlit did not answer on {self.url} within {timeout} s; see {self.log_path}")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def __enter__(self) -> StreamlitServer:
        self.start()
        try:
            self.wait_until_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# 1×1 transparent PNG: what the recorder answers, so an <img> that did load would show nothing odd.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class LoopbackRecorder:
    """An HTTP server on a free 127.0.0.1 port that notes the path of every request it receives."""

    def __init__(self):
        self.hits: list[str] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                recorder.hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PIXEL)))
                self.end_headers()
                self.wfile.write(PIXEL)

            do_POST = do_HEAD = do_GET

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackRecorder:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
