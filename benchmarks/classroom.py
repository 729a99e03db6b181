"""A class on one server: the teacher's run, 20 watchers, 4 students training, 8 exploring; then 30 arriving.

Starts the app on a free port and, for ``--seconds`` (default 120):

- **teacher**: a real headless Chromium on Live Training (the projector), sharing the default reverse run live;
  its steps per second are measured alone first, then with the class (target ≥ 60% of alone);
- **20 watchers** on the teacher's watch link; each one's refresh rate is the number of new Step values it
  receives a second (target ≥ 1);
- **4 students** who start their own runs (they wait in line when the server is full), checked for runs lost
  (a Step that goes backwards, an exception, or a run that never starts);
- **8 explorers** rerunning the Attention Lab, Positional Encodings, ViT Patching and Model Builder every few
  seconds; their response time is request to the end of the script run (target p95 ≤ 2 s);
- the server's memory (peak resident set, target ≤ 1.5 GB) and every exception shown or logged (target 0).

Then a **class arriving**: 30 new sessions open the watch link within 10 s; the time from request to the page's
first heading, p95 (target ≤ 3 s). The whole scenario runs again under the small-host limits (``--small`` only
runs that one).

Watchers, students and explorers are protocol-level clients (Streamlit's own websocket messages, see
:class:`Client`): twenty browsers cannot share two cores with the server they measure, and a client that only
receives costs the server exactly what a browser costs it (the same messages) without a browser's own CPU. The
teacher is a real browser because the projector is one.

Usage::

    python benchmarks/classroom.py                 # normal limits, then small-host limits
    python benchmarks/classroom.py --seconds 60 --small
    python benchmarks/classroom.py --trainer both  # runs on the server's thread (the old path), then in processes

``--trainer`` picks where runs train (``TE_TRAINER``): ``process`` (the app's default: a trainer process per run),
``thread`` (the server's script threads, as before trainer processes) or ``both``, to compare them in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.protocol_client import Client, ServerProcess  # noqa: E402
from tests.e2e.browser import find_chromium  # noqa: E402
from tests.e2e.conftest import CHROMIUM_ARGS  # noqa: E402

TEACHER = "task=reverse&steps=100000"  # the default reverse model, long enough for every phase
STUDENT_RUNS = ("task=sort&steps=400", "task=copy&steps=400&seed=1", "task=reverse&steps=400&seed=2",
                "task=sort&steps=400&seed=3")
EXPLORER_PAGES = ("attention", "positional", "vit", "builder")
EXPLORE_EVERY_S = 4.0  # an explorer reruns its page this often


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values``, nearest rank; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


class Teacher:
    """The projector: a real Chromium page sharing the teacher's run."""

    def __init__(self, playwright, base: str) -> None:
        executable = find_chromium()
        self.browser = playwright.chromium.launch(headless=True, executable_path=executable, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(120_000)
        self.page.goto(f"{base}/training?{TEACHER}")
        self.page.locator("[data-testid=stMain] h1").first.wait_for()
        self.page.get_by_text("📡 Share live").click()
        code = self.page.get_by_test_id("stCode").filter(has_text="watch=").first
        code.wait_for()
        self.link = code.inner_text().strip()
        self.page.get_by_role("button", name="Start", exact=True).click()
        self.page.get_by_text("Training…").first.wait_for()

    def step(self) -> int:
        text = self.page.get_by_test_id("stMetricValue").first.inner_text()
        return int(re.match(r"([\d,]+)", text).group(1).replace(",", ""))

    def rate(self, seconds: float) -> float:
        """Steps per second over the next ``seconds`` (reading the page's Step metric)."""
        start, t0 = self.step(), time.perf_counter()
        self.page.wait_for_timeout(seconds * 1000)
        return (self.step() - start) / (time.perf_counter() - t0)

    def exceptions(self) -> int:
        return self.page.get_by_test_id("stException").count()

    def close(self) -> None:
        self.browser.close()


async def _explore(base: str, page: str, until: float) -> Client:
    client = Client(base, page, "", name=f"explorer:{page}")
    await client.open()
    while time.perf_counter() < until:
        await asyncio.sleep(EXPLORE_EVERY_S)
        await client.rerun_and_wait()
    await client.close()
    return client


async def _train(base: str, query: str, until: float) -> Client:
    client = Client(base, "training", query, name=f"student:{query}")
    await client.open()
    await client.click("Start")
    await client.listen(until)
    await client.close()
    return client


async def _watch(base: str, query: str, until: float) -> Client:
    client = Client(base, "training", query, name="watcher", finishes=False)
    await client.open()
    await client.listen(until)
    await client.close()
    return client


async def class_load(base: str, watch_query: str, seconds: float) -> dict[str, list[Client]]:
    until = time.perf_counter() + seconds
    watchers = [_watch(base, watch_query, until) for _ in range(20)]
    students = [_train(base, q, until) for q in STUDENT_RUNS]
    explorers = [_explore(base, EXPLORER_PAGES[i % len(EXPLORER_PAGES)], until) for i in range(8)]
    done = await asyncio.gather(*watchers, *students, *explorers)
    return {"watchers": done[:20], "students": done[20:24], "explorers": done[24:]}


async def class_arriving(base: str, watch_query: str, sessions: int = 30, within_s: float = 10.0) -> list[float]:
    async def arrive(i: int) -> float:
        await asyncio.sleep(i * within_s / sessions)
        client = Client(base, "training", watch_query, name="arriving", finishes=False)
        await client.open()
        await client.close()
        return client.first_heading_s

    return list(await asyncio.gather(*(arrive(i) for i in range(sessions))))


def scenario(small: bool, seconds: float, trainer: str = "process") -> None:
    from playwright.sync_api import sync_playwright

    env = {"TE_SMALL_HOST": "1" if small else "0", "TE_TRAINER": trainer}
    title = f"{'small-host limits' if small else 'normal limits'}, runs train in {trainer}"
    with ServerProcess(env) as server, sync_playwright() as playwright:
        teacher = Teacher(playwright, server.base)
        watch_query = teacher.link.split("?", 1)[1]
        teacher.rate(5.0)  # settle
        alone = teacher.rate(20.0)
        result: dict = {}
        # The clients run in their own thread with their own event loop: Playwright's sync API owns this one.
        load = threading.Thread(target=lambda: result.update(clients=asyncio.run(
            class_load(server.base, watch_query, seconds))))
        samples = [(time.perf_counter(), teacher.step())]
        load.start()
        while load.is_alive():
            teacher.page.wait_for_timeout(2000)
            samples.append((time.perf_counter(), teacher.step()))
            server.sample_memory()
        with_class = _rate(samples)
        arriving = threading.Thread(target=lambda: result.update(arrivals=asyncio.run(
            class_arriving(server.base, watch_query))))
        arriving.start()
        while arriving.is_alive():
            teacher.page.wait_for_timeout(500)
        arrivals = result["arrivals"]
        server.sample_memory()
        report(title, seconds, alone, with_class, result["clients"], arrivals, server, teacher.exceptions())
        teacher.close()


def _rate(samples: list[tuple[float, int]]) -> float:
    """Steps per second while the run trained (a run that ended stops counting where it ended)."""
    moving = [(t, s) for (t, s), (_, nxt) in zip(samples, samples[1:], strict=False) if nxt > s]
    if not moving:
        return 0.0
    end = next((t, s) for t, s in samples if s >= moving[-1][1] and t > moving[-1][0])
    return (end[1] - moving[0][1]) / (end[0] - moving[0][0])


def report(title: str, seconds: float, alone: float, with_class: float, clients: dict, arrivals: list[float],
           server: ServerProcess, teacher_exceptions: int) -> None:
    watch_rates = [c.refresh_rate() for c in clients["watchers"]]
    responses = [t for c in clients["explorers"] for t in c.rerun_times]
    lost = [c.name for c in clients["students"] if c.lost()]
    exceptions = sum(c.exceptions for group in clients.values() for c in group) + teacher_exceptions
    logged = server.logged_exceptions()
    print(f"\n== A class on one server, {title}, {seconds:.0f} s (2-core machine, server, Chromium and clients "
          "on the same cores) ==")
    print(f"teacher steps/s: alone {alone:.1f}, with the class {with_class:.1f} "
          f"({with_class / alone:.0%} of alone; target >= 60%)")
    print(f"watchers' refreshes/s: min {min(watch_rates):.2f}, median {statistics.median(watch_rates):.2f} "
          f"(target >= 1 each)")
    print(f"explorer response: p50 {percentile(responses, 50):.2f} s, p95 {percentile(responses, 95):.2f} s over "
          f"{len(responses)} reruns (target p95 <= 2 s)")
    waited = sum(c.waited for c in clients["students"])
    started = sum(c.max_step > 0 for c in clients["students"])
    print(f"students: {started} of {len(clients['students'])} runs started ({waited} waited in line), "
          f"runs lost: {len(lost)} {lost if lost else ''}")
    print(f"memory: peak {getattr(server, 'peak_tree', 0) / 2**30:.2f} GB for the server and its trainers (PSS, "
          f"target <= 1.5 GB); the server alone peaked at {server.peak_rss / 2**30:.2f} GB resident")
    print(f"exceptions: {exceptions} shown, {logged} logged (target 0)")
    print(f"class arriving (30 sessions within 10 s): first heading p50 {percentile(arrivals, 50):.2f} s, "
          f"p95 {percentile(arrivals, 95):.2f} s, max {max(arrivals):.2f} s (target p95 <= 3 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="length of the class phase")
    parser.add_argument("--small", action="store_true", help="only the small-host limits")
    parser.add_argument("--normal", action="store_true", help="only the normal limits")
    parser.add_argument("--trainer", choices=("process", "thread", "both"), default="process",
                        help="where runs train: trainer processes (the default), the server's threads, or both")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    trainers = ("thread", "process") if args.trainer == "both" else (args.trainer,)
    for small in ((True,) if args.small else (False,) if args.normal else (False, True)):
        for trainer in trainers:
            scenario(small, args.seconds, trainer)
            print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
