"""Time switching heads off on the Live Training page in headless Chromium.

Against a fresh app server, this script trains the reverse task's default model (its tuned settings) for a few
hundred steps, pauses, and then measures in a real browser

- **switch off**: from the click on one head's pill until the page shows the held-out accuracy with that head
  off *and* the sample table titled with that head (target ≤ 0.5 s); every repeat switches another head off
  (the one before goes back on first, untimed), so nothing comes from a cache;
- **importance**: from the click on "Measure every head" until the importance map is drawn and its line under
  it names the most needed head (target ≤ 2 s); every repeat first trains one more step (Step once), so the map is
  measured afresh.

Every figure is the median of ``--runs`` repeats after one warm-up. The machine (cores, load average, torch
threads of the page) is printed with the figures.

Usage::

    python benchmarks/switch_off.py             # 5 repeats each
    python benchmarks/switch_off.py --runs 9
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.memory import start_server  # noqa: E402  (needs ROOT on the path)
from tests.e2e.browser import find_chromium  # noqa: E402
from tests.e2e.conftest import CHROMIUM_ARGS, wait_for_app  # noqa: E402

SWITCH_TARGET_S, MAP_TARGET_S = 0.5, 2.0
TRAIN_STEPS = 250  # trained before measuring: the default reverse model reverses nearly every sequence by then
URL = "/training?task=reverse&steps=5000"  # the task's default model; Pause stops it long before the end
HEADS = [(stack, layer, head) for stack in ("cross", "decoder", "encoder") for layer in (0, 1) for head in (0, 1, 2, 3)]
SWITCHED_JS = """([label]) => {
    const metrics = [...document.querySelectorAll('[data-testid=stMetric]')];
    const off = metrics.find(m => m.innerText.includes('Accuracy · 1 head off'));
    const value = off && off.querySelector('[data-testid=stMetricValue]').innerText.trim();
    const table = [...document.querySelectorAll('[data-testid=stHtml]')]
        .some(e => e.innerText.startsWith('1 off: ' + label + ' '));
    return Boolean(value && value !== '–' && table) && !document.querySelector('[data-stale=true]');
}"""
MAP_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.innerText.includes('Head importance'))
    && [...document.querySelectorAll('[data-testid=stCaptionContainer]')].some(c => /Most needed|No head alone/
    .test(c.innerText)) && !document.querySelector('[data-stale=true]')"""


def pill(page, ref: tuple[str, int, int]):
    """The pill of head ``ref`` in configuration A's switches."""
    stack, layer, head = ref
    row = page.locator(f".st-key-live-heads_off-{stack}-{layer}").first  # the widget key, "." written "-"
    return row.get_by_role("button", name=f"H{head + 1}", exact=True)


def trained_tab(browser, url: str):
    """A tab on the Live Training page with the default reverse model trained ``TRAIN_STEPS`` steps, paused."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(120_000)
    page.goto(url + URL)
    wait_for_app(page)
    page.get_by_role("button", name="Start", exact=True).click()
    first_metric = "(document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0').replace(/,/g, '')"
    page.wait_for_function(f"() => {first_metric}.split(' ')[0] * 1 >= {TRAIN_STEPS}")
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    return page


def time_switch(page, ref: tuple[str, int, int]) -> float:
    label = f"{ref[0]} L{ref[1] + 1} H{ref[2] + 1}"
    start = time.perf_counter()
    pill(page, ref).click()
    page.wait_for_function(SWITCHED_JS, arg=[label], polling="raf")
    elapsed = time.perf_counter() - start
    wait_for_app(page)
    pill(page, ref).click()  # back on, untimed
    wait_for_app(page)
    return elapsed


def time_map(page) -> float:
    page.get_by_role("button", name="Step once").first.click()  # a new step: the map is measured afresh
    wait_for_app(page)
    start = time.perf_counter()
    page.get_by_role("button", name="📊 Measure every head").click()
    page.wait_for_function(MAP_JS, polling="raf")
    return time.perf_counter() - start


def measure(runs: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    url, proc = start_server(ROOT)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(headless=True, executable_path=find_chromium(), args=CHROMIUM_ARGS)
            page = trained_tab(browser, url)
            switches = [time_switch(page, HEADS[i % len(HEADS)]) for i in range(runs + 1)][1:]
            maps = [time_map(page) for _ in range(runs + 1)][1:]
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    return switches, maps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="repeats of each measurement; the median is shown")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    switches, maps = measure(max(1, args.runs))
    print(f"Machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, load average (1 min) "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after; the page measures with 1 torch thread.")
    for name, values, target in (("switch one head off", switches, SWITCH_TARGET_S),
                                 ("importance map (24 heads)", maps, MAP_TARGET_S)):
        median = statistics.median(values)
        print(f"{name:<27} median {median:.3f} s  (min {min(values):.3f}, max {max(values):.3f})  "
              f"target {target:g} s: {'met' if median <= target else 'NOT met'}")
    print(f"Median of {max(1, args.runs)} repeats each after one warm-up, default reverse model after "
          f"{TRAIN_STEPS}+ steps.")


if __name__ == "__main__":
    main()
