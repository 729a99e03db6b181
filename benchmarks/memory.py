"""Measure the app server's memory with one, then three browser sessions each training a default run.

Starts ``streamlit run app.py`` on a free port, opens the Live Training page in headless Chromium, presses Start
with the page's default settings and waits for the run to finish; then opens two more sessions that train at the
same time. The resident memory (VmRSS from /proc) of the server process and its children is read once the app
has started and served its home page, after each phase, and continuously for the peak. Prints, for example::

    one session with a default training run: 472 MB (peak 486 MB; ...); each further session: +19 MB (...)

Usage::

    python benchmarks/memory.py                 # the page's default run (300 steps of the reverse task)
    python benchmarks/memory.py --steps 100     # shorter runs
    python benchmarks/memory.py --json          # also print the figures as JSON

Linux only (reads /proc). Targets: under 700 MB for one session, under 150 MB for each further one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from tests.e2e.browser import find_chromium  # noqa: E402  (needs ROOT on the path)

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
FINISHED = "[data-testid=stApp][data-test-script-state=notRunning]"
TARGET_ONE_MB, TARGET_EXTRA_MB = 700, 150


def start_server(checkout: Path = ROOT) -> tuple[str, subprocess.Popen]:
    """Start the app of ``checkout`` on a free port in its own process group; return its URL and process."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.fileWatcherType", "none", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    # No recordings: a benchmark that trains the same settings twice must train them twice, not replay them.
    proc = subprocess.Popen(cmd, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "TE_RECORDINGS_MB": "0"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return url, proc
        except OSError:
            time.sleep(0.25)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("the app did not become healthy within 90 s")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, in MB (VmRSS of /proc/<pid>/status)."""
    total_kb, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        total_kb += int(match.group(1)) if match else 0
        todo += _children(current)
    return total_kb / 1024


class PeakWatch:
    """Remembers the highest tree RSS seen by :meth:`poll`."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0.0

    def poll(self) -> float:
        now = tree_rss_mb(self.pid)
        self.peak = max(self.peak, now)
        return now


def warm_up(browser, url: str) -> None:
    """Open the home page once: until the router has run, Streamlit answers a deep link with "Page not found"."""
    context = browser.new_context(base_url=url)
    page = context.new_page()
    page.goto("/")
    page.wait_for_selector("[data-testid=stApp][data-test-connection-state=CONNECTED]")
    page.wait_for_timeout(300)
    page.wait_for_selector(FINISHED, timeout=120_000)
    context.close()


def open_training(browser, url: str, steps: int | None):
    """A new session on the Live Training page with its default settings (optionally fewer steps)."""
    context = browser.new_context(base_url=url, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto("/training" + (f"?steps={steps}" if steps else ""))
    page.wait_for_selector("[data-testid=stApp][data-test-connection-state=CONNECTED]")
    page.wait_for_timeout(300)
    page.wait_for_selector(FINISHED)
    page.get_by_role("button", name="Start").wait_for()
    return context, page


def step_text(page) -> str:
    return page.get_by_test_id("stMetricValue").first.inner_text()


def train_until_done(pages: list, watch: PeakWatch, timeout_s: float) -> None:
    """Press Start on every page, then wait (sampling memory) until every Step metric reads "N / N"."""
    for page in pages:
        page.get_by_role("button", name="Start").click()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        watch.poll()
        texts = [step_text(p) for p in pages]
        if all(re.fullmatch(r"([\d,]+) / \1", t) for t in texts):
            return
        time.sleep(0.5)
    raise TimeoutError(f"runs not finished after {timeout_s:.0f} s: {texts}")


def settle(watch: PeakWatch, seconds: float = 2.0) -> float:
    """Memory after the runs ended and the last reruns are over."""
    time.sleep(seconds)
    return watch.poll()


def measure(steps: int | None, sessions: int, timeout_s: float) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    url, proc = start_server()
    watch = PeakWatch(proc.pid)
    figures: dict[str, float] = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(headless=True, args=CHROMIUM_ARGS, executable_path=find_chromium())
            warm_up(browser, url)
            figures["idle_mb"] = settle(watch)
            _, first = open_training(browser, url, steps)
            figures["one_session_open_mb"] = watch.poll()
            train_until_done([first], watch, timeout_s)
            figures["one_session_mb"] = settle(watch)
            figures["one_session_peak_mb"] = watch.peak
            more = [open_training(browser, url, steps)[1] for _ in range(sessions - 1)]
            train_until_done(more, watch, timeout_s)
            figures["all_sessions_mb"] = settle(watch)
            figures["all_sessions_peak_mb"] = watch.peak
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    figures["sessions"] = sessions
    figures["per_extra_session_mb"] = (figures["all_sessions_mb"] - figures["one_session_mb"]) / max(1, sessions - 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="training steps per run (default: the page's)")
    parser.add_argument("--sessions", type=int, default=3, help="sessions in the second phase (default 3)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for a phase's runs")
    parser.add_argument("--json", action="store_true", help="also print every figure as JSON")
    args = parser.parse_args()
    if args.sessions < 2:
        parser.error("--sessions must be at least 2")
    f = measure(args.steps, args.sessions, args.timeout)
    print(f"server after start and one visit of the home page: {f['idle_mb']:.0f} MB")
    print(f"one session with a default training run: {f['one_session_mb']:.0f} MB "
          f"(peak {f['one_session_peak_mb']:.0f} MB; target < {TARGET_ONE_MB} MB); "
          f"each further session: +{f['per_extra_session_mb']:.0f} MB "
          f"({args.sessions} sessions: {f['all_sessions_mb']:.0f} MB, peak {f['all_sessions_peak_mb']:.0f} MB; "
          f"target < {TARGET_EXTRA_MB} MB each)")
    if args.json:
        print(json.dumps({k: round(v, 1) for k, v in f.items()}))


if __name__ == "__main__":
    main()
