"""Time Attention Lab changes in headless Chromium: from a widget change to the new charts painted.

For each change (another head, another layer, a new sentence, another view) this script measures in a real
browser against a fresh app server

- the wall time from the change until the browser is idle again with every chart drawn (no element stale any
  more, two animation frames, then ``requestIdleCallback``),
- the time the browser's main thread was busy meanwhile (Chrome's ``TaskDuration``),
- the bytes and websocket frames the server sent for the change.

``--against DIR`` starts a second server from another checkout (e.g. the previous commit, ``git worktree add``)
and alternates the two apps change by change in one browser, so that a busy machine slows both alike; the
script then prints the ratios. Every figure is the median of ``--runs`` repeats after one warm-up change, each
repeat with a new value so that the work is really done. The machine's load average is printed too.

Usage::

    python benchmarks/lab_browser.py                            # this checkout, 5 runs per change
    python benchmarks/lab_browser.py --against /tmp/old --runs 7
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.memory import start_server  # noqa: E402  (needs ROOT on the path)
from tests.e2e.browser import find_chromium  # noqa: E402
from tests.e2e.conftest import CHROMIUM_ARGS, FINISHED, wait_for_app  # noqa: E402

TARGET_S = 1.0  # a Lab change should be painted within this many seconds
ACTIONS = ("head", "layer", "sentence", "view")
IDLE_JS = """async () => {
    while (document.querySelector('[data-stale=true]')) { await new Promise(r => setTimeout(r, 10)); }
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    await new Promise(r => requestIdleCallback(r, {timeout: 10000}));
}"""


@contextlib.contextmanager
def server(checkout: Path):
    """``streamlit run app.py`` in ``checkout`` on a free port; yields its base URL."""
    url, proc = start_server(checkout)
    try:
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


class Tab:
    """One browser tab on one app, with its websocket traffic and main-thread time."""

    def __init__(self, browser, url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.set_default_timeout(120_000)
        self.cdp = self.page.context.new_cdp_session(self.page)
        self.cdp.send("Performance.enable")
        self.frames = self.sent = 0
        self.page.on("websocket", lambda ws: ws.on("framereceived", self._add))
        self.page.goto(f"{url}/attention")
        wait_for_app(self.page)
        self.page.evaluate(IDLE_JS)

    def _add(self, payload: bytes | str) -> None:
        self.frames += 1
        self.sent += len(payload)

    def busy(self) -> float:
        metrics = self.cdp.send("Performance.getMetrics")["metrics"]
        return next(m["value"] for m in metrics if m["name"] == "TaskDuration")

    def change(self, action: str, i: int) -> tuple[float, float, int, int]:
        """Change number ``i`` of kind ``action``: (wall s, busy s, bytes, frames)."""
        self.page.bring_to_front()
        self.frames = self.sent = 0
        busy, start = self.busy(), time.perf_counter()
        _change(self.page, action, i)
        self.page.wait_for_selector("[data-testid=stApp][data-test-script-state=running]", timeout=10_000)
        self.page.wait_for_selector(FINISHED)
        self.page.evaluate(IDLE_JS)
        return time.perf_counter() - start, self.busy() - busy, self.sent, self.frames


def _change(page, action: str, i: int) -> None:
    """Make change number ``i`` of kind ``action`` (consecutive numbers give different values)."""
    if action in ("head", "layer"):
        group = page.get_by_test_id("stRadio").filter(has_text=action.capitalize()).first
        group.get_by_test_id("stRadioOption").nth(1 - i % 2).click()
    elif action == "sentence":
        box = page.get_by_test_id("stTextInput").locator("input").first
        box.fill(("a cat naps in the sun", "the quick brown fox jumps", "attention is all you need")[i % 3])
        box.press("Enter")
    else:  # the grid view, then back to the default one
        view = ("All layers × heads", "Step by step")[i % 2]
        page.get_by_test_id("stRadioOption").filter(has_text=view).first.click()


def measure(checkouts: list[Path], runs: int) -> dict[str, list[list[tuple]]]:
    """action -> per checkout, the figures of each repeat (the checkouts alternate change by change)."""
    from playwright.sync_api import sync_playwright

    with contextlib.ExitStack() as stack, sync_playwright() as playwright:
        urls = [stack.enter_context(server(c)) for c in checkouts]
        browser = playwright.chromium.launch(headless=True, executable_path=find_chromium(), args=CHROMIUM_ARGS)
        tabs = [Tab(browser, url) for url in urls]
        results = {}
        for action in ACTIONS:
            results[action] = [[] for _ in tabs]
            for i in range(runs + 1):
                for k, tab in enumerate(tabs):
                    figures = tab.change(action, i)
                    if i:  # the first change of each kind warms caches and lazily loaded code
                        results[action][k].append(figures)
        browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="repeats per change; the median is shown")
    parser.add_argument("--against", type=Path, help="another checkout to compare with, change by change")
    args = parser.parse_args()
    checkouts = [ROOT] + ([args.against.resolve()] if args.against else [])
    load = os.getloadavg()[0]
    results = measure(checkouts, max(1, args.runs))
    print(f"Load average (1 min) on {os.cpu_count()} cores: {load:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(f"{'change':<9} {'app':<6} {'painted s':>9} {'busy s':>7} {'kB sent':>8} {'frames':>7}  under {TARGET_S:g} s")
    for action, per_app in results.items():
        medians = [[statistics.median(r[k] for r in rows) for k in range(4)] for rows in per_app]
        for name, (wall, busy, sent, frames) in zip(("this", "other"), medians, strict=False):
            verdict = "yes" if wall < TARGET_S else "NO"
            print(f"{action:<9} {name:<6} {wall:9.3f} {busy:7.3f} {sent / 1000:8.1f} {frames:7.0f}  {verdict}")
        if len(medians) == 2:
            ratio = [a / b if b else float("nan") for a, b in zip(medians[0], medians[1], strict=True)]
            print(f"{action:<9} {'ratio':<6} {ratio[0]:9.2f} {ratio[1]:7.2f} {ratio[2]:8.2f} {ratio[3]:7.2f}")
    print(f"\nMedian of {max(1, args.runs)} changes each, after one warm-up change; ratio = this / other.")


if __name__ == "__main__":
    main()
