"""A lightweight Streamlit client for benchmarks: one browser session spoken at the protocol level, no browser.

:class:`Client` opens the app's websocket (``/_stcore/stream``), asks for a page with a query string exactly as
the browser does (a ``BackMsg`` with ``rerun_script``), and reads the ``ForwardMsg`` s the server sends: it notes
when the first heading arrived, every new value of the Step metric, exceptions, "Place N in line" notices and
the ends of script runs. It can click a button (a rerun whose widget state triggers that button's id) and rerun
its page. The server does the same work for it as for a browser; the client's own cost is tiny.

:class:`ServerProcess` starts the app on a free port and reads its memory and its log.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]


class Client:
    """One session on ``page`` (its url path, "" for home) with ``query``; see the module docstring.

    ``finishes``: whether the page's first script run ends (a page that follows a run keeps running). ``cookie``:
    the browser's XSRF secret (by default a new one: a new browser); ``headers``: more handshake headers (e.g.
    ``X-Forwarded-For`` as a proxy sends it).
    """

    def __init__(self, base: str, page: str, query: str, *, name: str = "", finishes: bool = True,
                 cookie: str | None = None, headers: dict[str, str] | None = None) -> None:
        self.uri = base.replace("http", "ws", 1) + "/_stcore/stream"
        self.page, self.query, self.name, self.finishes = page, query, name or page, finishes
        self.cookie, self.headers = cookie or secrets.token_hex(16), dict(headers or {})
        self.query_shown = query  # the address's query as the page last set it (st.query_params)
        self.alerts: list[str] = []  # every notice's text, in order
        self.charts = 0  # charts received
        self.ws = None
        self.started = 0.0
        self.first_heading_s = float("nan")
        self.open_s = float("nan")  # how long open() took: to the end of the first script run, or the first heading
        self.steps: list[tuple[float, int]] = []  # (time, step) for every new Step value
        self.max_step, self.went_back, self.waited, self.exceptions = 0, False, False, 0
        self.exception_texts: list[str] = []  # each exception the page showed: its type and message
        self.buttons: dict[str, str] = {}  # label -> widget id
        self.rerun_times: list[float] = []
        self._finished = asyncio.Event()

    async def open(self, timeout_s: float = 60.0) -> None:
        """Connect and ask for the page; return at its first heading (or the end of its script run)."""
        self.started = time.perf_counter()
        # Each client is its own browser (unless given one's cookie): its XSRF secret is the id quotas count.
        headers = {"Cookie": f"_streamlit_xsrf={self.cookie}", **self.headers}
        self.ws = await websockets.connect(self.uri, subprotocols=["streamlit"], max_size=2**27,
                                           open_timeout=timeout_s, additional_headers=headers)
        await self._rerun()
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            await self._receive(deadline)
            if (self.finishes and self._finished.is_set()) or (
                not self.finishes and self.first_heading_s == self.first_heading_s
            ):
                break
        self.open_s = time.perf_counter() - self.started

    async def _rerun(self, triggers: tuple[str, ...] = ()) -> None:
        msg = BackMsg()
        msg.rerun_script.query_string = self.query_shown  # as a browser sends its address bar's
        msg.rerun_script.page_name = self.page
        for widget_id in triggers:
            state = msg.rerun_script.widget_states.widgets.add()
            state.id, state.trigger_value = widget_id, True
        self._finished.clear()
        await self.ws.send(msg.SerializeToString())

    async def click(self, label: str) -> None:
        """Click the button called ``label`` (seen in the page's last run) and wait for the rerun to start."""
        await self._rerun((self.buttons[label],))

    async def rerun_and_wait(self, timeout_s: float = 60.0) -> None:
        """Rerun the page (as a widget change does) and note how long its script run took."""
        start = time.perf_counter()
        await self._rerun()
        deadline = start + timeout_s
        while not self._finished.is_set() and time.perf_counter() < deadline:
            await self._receive(deadline)
        self.rerun_times.append(time.perf_counter() - start)

    async def listen(self, until: float) -> None:
        """Read messages until the clock reaches ``until``."""
        while time.perf_counter() < until:
            await self._receive(until)

    async def _receive(self, until: float) -> None:
        try:
            data = await asyncio.wait_for(self.ws.recv(), max(0.01, min(1.0, until - time.perf_counter())))
        except TimeoutError:
            return
        except websockets.ConnectionClosed:
            self.exceptions += 1
            await asyncio.sleep(until - time.perf_counter())
            return
        msg = ForwardMsg()
        msg.ParseFromString(data)
        kind = msg.WhichOneof("type")
        if kind == "script_finished":
            self._finished.set()
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._element(msg.delta.new_element)
        elif kind == "page_info_changed":
            self.query_shown = msg.page_info_changed.query_string

    def _element(self, element) -> None:
        kind = element.WhichOneof("type")
        now = time.perf_counter()
        if kind == "heading" and self.first_heading_s != self.first_heading_s:
            self.first_heading_s = now - self.started
        elif kind == "metric" and element.metric.label == "Step":
            step = int(element.metric.body.split("/")[0].replace(",", "").strip() or 0)
            if self.steps and step < self.steps[-1][1]:
                self.went_back = True
            if not self.steps or step != self.steps[-1][1]:
                self.steps.append((now, step))
            self.max_step = max(self.max_step, step)
        elif kind == "exception":
            self.exceptions += 1
            self.exception_texts.append(f"{element.exception.type}: {element.exception.message}")
        elif kind == "button":
            self.buttons[element.button.label] = element.button.id
        elif kind == "alert":
            self.alerts.append(element.alert.body)
            self.waited = self.waited or "in line**" in element.alert.body  # the line's notice: "Place N in line"
        elif kind in ("vega_lite_chart", "plotly_chart"):
            self.charts += 1

    def refresh_rate(self) -> float:
        """New Step values per second over the time this client saw them arrive."""
        if len(self.steps) < 2:
            return 0.0
        return (len(self.steps) - 1) / (self.steps[-1][0] - self.steps[0][0])

    def lost(self) -> bool:
        """Whether this student's run was lost: its Step went backwards, it showed an exception, or it never
        trained and never waited in line."""
        return self.went_back or self.exceptions > 0 or (self.max_step == 0 and not self.waited)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


# ``python -c`` that starts the app as ``python -m streamlit`` does, with uvloop hidden: Streamlit then runs on
# asyncio's own event loop (to compare the two loops on one machine in one run)
WITHOUT_UVLOOP = ("import sys; sys.modules['uvloop'] = None; sys.argv[0] = 'streamlit'; "
                  "from streamlit.web.cli import main; main(prog_name='streamlit')")


class ServerProcess:
    """The app on a free port (``with ServerProcess(env) as server: server.base``), with its memory and log.

    ``event_loop``: ``"installed"`` (uvloop when it is installed, as the app runs) or ``"asyncio"`` (uvloop hidden).
    """

    def __init__(self, env: dict[str, str] | None = None, event_loop: str = "installed") -> None:
        if event_loop not in ("installed", "asyncio"):
            raise ValueError(f"event_loop is 'installed' or 'asyncio', not {event_loop!r}")
        self.env = env or {}
        self.event_loop = event_loop
        self.peak_rss = 0

    def __enter__(self) -> ServerProcess:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        self._logdir = tempfile.TemporaryDirectory(prefix="classroom-")
        self.log_path = Path(self._logdir.name) / "server.log"
        start = ["-c", WITHOUT_UVLOOP] if self.event_loop == "asyncio" else ["-m", "streamlit"]
        command = [sys.executable, *start, "run", "app.py", "--server.headless", "true",
                   "--server.fileWatcherType", "none", "--server.port", str(port),
                   "--browser.gatherUsageStats", "false"]
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, **self.env}, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the app did not start; see {self.log_path}")

    def sample_memory(self) -> int:
        """The server's resident memory now (bytes); the peak is kept in :attr:`peak_rss`, and the peak memory of
        the server with its trainer processes (PSS, shared pages counted once) in :attr:`peak_tree`."""
        from explorer.process_tree import tree_pss_bytes

        self.peak_tree = max(getattr(self, "peak_tree", 0), tree_pss_bytes(self.proc.pid))
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                    self.peak_rss = max(self.peak_rss, rss)
                    return rss
        except OSError:
            pass
        return 0

    def logged_exceptions(self) -> int:
        """Tracebacks in the server's log."""
        return len(self.tracebacks())

    def tracebacks(self) -> list[str]:
        """Each traceback in the server's log, in short: where it was raised (its innermost frame) and what."""
        chunks = self.log_path.read_text(errors="replace").split("Traceback")[1:]
        said = []
        for chunk in chunks:
            lines = [line.strip() for line in chunk.splitlines() if line.strip()]
            last = max((i for i, line in enumerate(lines) if line.startswith('File "')), default=-1)
            after = [line for line in lines[last + 2:] if not line.startswith(("^", "~"))]  # past its code line
            said.append(f"{lines[last] if last >= 0 else '?'} -> {after[0] if after else '?'}")
        return said

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._logdir.cleanup()
