"""What the browser spends on the Live Training page while it trains: Chromium's CPU and its main thread's busy time.

Starts the app, opens the page in headless Chromium, presses Start and, after a few seconds, measures over a window:
refreshes per second (changes of the Step metric), training steps per second, the CPU that Chromium's processes
and the server used (share of one core), Chromium's CPU per refresh, and the share of the time the page's main
thread was busy (Chrome's own ``TaskDuration``), and how much of that was script.

Usage::

    python benchmarks/live_renderer.py                                        # the default reverse run
    python benchmarks/live_renderer.py --query "task=char_lm&steps=5000&compare=true" --seconds 20

Run it on an otherwise idle machine, or say how busy it was: the browser and the server share its cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.live_refresh import CHROMIUM_ARGS, OBSERVER_JS, QUERY, start_server, step_of, warm_up  # noqa: E402
from benchmarks.processes import browser_pids, cpu_of  # noqa: E402
from tests.e2e.browser import find_chromium  # noqa: E402

BUSY = ("TaskDuration", "ScriptDuration")  # Chrome's cumulative main-thread seconds: all tasks, and script


def measure(page, server_pid: int, seconds: float) -> dict:
    """The figures over the next ``seconds`` while the page trains."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")

    def busy() -> dict[str, float]:
        return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] in BUSY}

    pids = browser_pids()
    cpu0, server0, busy0 = cpu_of(pids), cpu_of([server_pid]), busy()
    t0, start = page.evaluate("performance.now()"), time.perf_counter()
    time.sleep(seconds)
    spent = time.perf_counter() - start
    cpu1, server1, busy1, t1 = cpu_of(pids), cpu_of([server_pid]), busy(), page.evaluate("performance.now()")
    changes = [(t, step_of(s)) for t, s in page.evaluate("window.__live.changes") if t0 <= t <= t1]
    span = (changes[-1][0] - changes[0][0]) / 1000 if len(changes) > 1 else float("nan")
    hz = (len(changes) - 1) / span
    return {"refresh_hz": round(hz, 2), "steps_per_s": round((changes[-1][1] - changes[0][1]) / span, 1),
            "browser_cpu_percent": round(100 * (cpu1 - cpu0) / spent),
            "server_cpu_percent": round(100 * (server1 - server0) / spent),
            "browser_cpu_ms_per_refresh": round(1000 * (cpu1 - cpu0) / spent / hz),
            "main_thread_busy_percent": round(100 * (busy1["TaskDuration"] - busy0["TaskDuration"]) / spent),
            "script_percent": round(100 * (busy1["ScriptDuration"] - busy0["ScriptDuration"]) / spent)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--query", default=QUERY, help="the Live Training page's settings, as in its address")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the measured window")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    url, server = start_server()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            warm_up(browser.new_context(viewport={"width": 1400, "height": 1000}), url)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(f"{url}/training?{args.query}")
            page.get_by_role("button", name="Start", exact=True).wait_for()
            page.wait_for_timeout(1500)
            page.evaluate(OBSERVER_JS)
            page.get_by_role("button", name="Start", exact=True).click()
            page.get_by_role("button", name="Pause", exact=True).wait_for()
            page.wait_for_timeout(3000)
            for key, value in measure(page, server.pid, args.seconds).items():
                print(f"{key}: {value}")
            page.get_by_role("button", name="Pause", exact=True).click()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
