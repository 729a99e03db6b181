"""Soak the Live Training page in headless Chromium: every task, with and without Compare, Pause/Resume at random.

For each of the 14 configurations in turn (together about ``--minutes``), the page trains its task with the
task's tuned model, and a seeded random schedule clicks Pause and, a moment later, Resume. A MutationObserver in
the page records every change of the Step metric. Printed per configuration and in total:

- refreshes per second while training;
- the longest gap between two refreshes while training (pauses excluded), and the stalls: gaps over 2 s;
- Pause latency: click to the Resume button (the page has stopped training and redrawn);
- whether the page ever showed its "stopped updating" banner, an exception, or lost its run.

Usage::

    python benchmarks/soak.py                  # 10 minutes, starts the app on a free port
    python benchmarks/soak.py --minutes 2 --busy   # shorter, with one more core kept busy meanwhile

Run it on an otherwise idle machine, or say how busy it was: the browser and the server share its cores.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.live_refresh import BURN, CHROMIUM_ARGS, OBSERVER_JS, start_server  # noqa: E402
from tests.e2e.browser import find_chromium  # noqa: E402
from transformer_core.tasks import TASK_NAMES  # noqa: E402
from ui.training.watchdog import BANNER_ID  # noqa: E402

STALL_S = 2.0  # a gap between refreshes longer than this, while training, is a stall


@dataclass
class Result:
    name: str
    refreshes: int = 0
    training_s: float = 0.0
    gaps: list[float] = field(default_factory=list)
    pauses: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.refreshes / self.training_s if self.training_s else 0.0


def changes(page) -> list[float]:
    """Seconds (page clock) of every Step change so far."""
    return [t / 1000 for t, _ in page.evaluate("() => window.__live.changes")]


def soak_one(page, url: str, task: str, compare: bool, seconds: float, rng: random.Random) -> Result:
    result = Result(f"{task}{' + Compare' if compare else ''}")
    page.goto(f"{url}/training?task={task}&steps=5000{'&compare=true' if compare else ''}")
    page.get_by_role("button", name="Start", exact=True).wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    page.evaluate(OBSERVER_JS)
    page.get_by_role("button", name="Start", exact=True).click()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        segment_start = page.evaluate("() => performance.now()") / 1000
        page.wait_for_timeout(int(1000 * rng.uniform(3, 9)))  # train for a while, then Pause
        clicked = time.monotonic()
        page.get_by_role("button", name="Pause", exact=True).click()
        page.get_by_role("button", name="Resume", exact=True).wait_for(timeout=60_000)
        result.pauses.append(time.monotonic() - clicked)
        paused_at = page.evaluate("() => performance.now()") / 1000
        marks = [t for t in changes(page) if segment_start <= t <= paused_at]
        result.refreshes += max(0, len(marks) - 1)
        result.training_s += paused_at - segment_start
        points = [segment_start, *marks]
        result.gaps += [b - a for a, b in zip(points, points[1:], strict=False)]
        if page.locator(f"#{BANNER_ID}").count():
            result.problems.append("stalled banner")
        if page.locator("[data-testid=stException]").count():
            result.problems.append("exception")
        page.wait_for_timeout(int(1000 * rng.uniform(0.3, 2.0)))
        page.get_by_role("button", name="Resume", exact=True).click()
        page.get_by_role("button", name="Pause", exact=True).wait_for(timeout=60_000)
        if page.get_by_text("no longer on the server").count():
            result.problems.append("run lost")
    page.get_by_role("button", name="Pause", exact=True).click()
    return result


def soak_or_report(page, url: str, task: str, compare: bool, seconds: float, rng: random.Random) -> Result:
    """:func:`soak_one`, but a page that stops answering is a finding, not a crash: it is reported with a
    screenshot and what the page said, and the soak goes on with the next configuration."""
    try:
        return soak_one(page, url, task, compare, seconds, rng)
    except Exception as err:  # Playwright's TimeoutError and anything else the page does
        name = f"{task}{' + Compare' if compare else ''}"
        shot = Path(tempfile.gettempdir()) / f"soak-{task}-{int(compare)}.png"
        page.screenshot(path=str(shot), full_page=True)
        status = page.get_by_test_id("stMain").inner_text()[:400].replace("\n", " | ")
        result = Result(name)
        result.problems.append(f"page stuck ({type(err).__name__}); screenshot {shot}; page said: {status}")
        return result


def report(results: list[Result]) -> None:
    print(f"{'configuration':<24}{'refresh/s':>10}{'longest gap':>13}{'stalls>2s':>11}{'pause med':>11}"
          f"{'pause max':>11}  problems")
    for r in results:
        print(f"{r.name:<24}{r.rate:>10.2f}{max(r.gaps, default=0):>12.2f}s{sum(g > STALL_S for g in r.gaps):>11}"
              f"{statistics.median(r.pauses or [0]):>10.2f}s{max(r.pauses, default=0):>10.2f}s  "
              f"{', '.join(sorted(set(r.problems))) or '-'}")
    gaps = [g for r in results for g in r.gaps]
    pauses = [p for r in results for p in r.pauses]
    refreshes, seconds = sum(r.refreshes for r in results), sum(r.training_s for r in results)
    print(f"\nall: {refreshes / seconds:.2f} refreshes/s over {seconds:.0f} s of training; longest gap "
          f"{max(gaps):.2f} s; stalls over {STALL_S:g} s: {sum(g > STALL_S for g in gaps)} (target 0); "
          f"Pause median {statistics.median(pauses):.2f} s, worst {max(pauses):.2f} s over {len(pauses)} pauses; "
          f"problems: {sum(len(r.problems) for r in results)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="total soak time")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Pause/Resume schedule")
    parser.add_argument("--busy", action="store_true", help="keep one more core busy while soaking")
    parser.add_argument("--width", type=int, default=1400, help="browser window width")
    parser.add_argument("--tasks", nargs="+", choices=TASK_NAMES, default=list(TASK_NAMES),
                        help="tasks to soak (default: every task)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    url, server = start_server()
    burner = subprocess.Popen([sys.executable, "-c", BURN]) if args.busy else None
    configs = [(task, compare) for task in args.tasks for compare in (False, True)]
    seconds = 60 * args.minutes / len(configs)
    rng = random.Random(args.seed)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": args.width, "height": 1000})
            page.set_default_timeout(60_000)
            results = []
            for task, compare in configs:
                results.append(soak_or_report(page, url, task, compare, seconds, rng))
                print(f"  {results[-1].name}: done {', '.join(results[-1].problems)}", flush=True)
            browser.close()
        report(results)
    finally:
        if burner is not None:
            burner.kill()
        server.kill()


if __name__ == "__main__":
    main()
