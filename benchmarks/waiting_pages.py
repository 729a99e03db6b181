"""What pages that only wait cost the server: a class following a link between two of the teacher's runs.

Starts the app on a free port; a headless Chromium (the projector) shares a short run and trains it to its end;
then ``--pages`` protocol clients (default 30) open the class link, and the server is measured for ``--seconds``
while they all wait for the teacher's next run (each page's loop ticks once a second, see
``ui.common.pace.WATCH_IDLE_TICK_S``). Printed: the server's CPU (cores) and its threads' context switches a
second, voluntary (a thread went to sleep) and involuntary (a thread was preempted), over the whole phase and per
waiting page. A waiting loop that polls for clicks wakes many times between two ticks; one that sleeps on the
script run's request signal (``ui.common.st_internals.request_signal``) wakes once a tick.

Usage::

    python benchmarks/waiting_pages.py               # 30 pages, 20 s
    python benchmarks/waiting_pages.py --pages 60 --seconds 30
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.classroom import Teacher  # noqa: E402
from benchmarks.processes import cpu_seconds  # noqa: E402
from benchmarks.protocol_client import Client, ServerProcess  # noqa: E402

RUN_STEPS = 30  # the teacher's run: short, so that it ends before the class arrives


def switches(pid: int) -> tuple[int, int]:
    """Voluntary and involuntary context switches so far, summed over ``pid``'s live threads."""
    voluntary = involuntary = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    involuntary += int(line.split()[1])
        except OSError:
            continue
    return voluntary, involuntary


async def waiting_class(base: str, link: str, pages: int, seconds: float, measure) -> list[Client]:
    """``pages`` clients on the class link; ``measure(seconds)`` runs while they all wait."""
    clients = [Client(base, "training", link, name="waiting", finishes=False) for _ in range(pages)]
    for client in clients:
        await client.open()
    await asyncio.sleep(2.0)  # every page reached its waiting loop
    listening = [asyncio.create_task(c.listen(time.perf_counter() + seconds + 1.0)) for c in clients]
    await asyncio.to_thread(measure, seconds)
    await asyncio.gather(*listening)
    for client in clients:
        await client.close()
    return clients


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=30, help="waiting pages (class members)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the measured phase")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    with ServerProcess({"TE_SMALL_HOST": "0"}) as server, sync_playwright() as playwright:
        teacher = Teacher(playwright, server.base, RUN_STEPS)
        link = teacher.start(seed=1)
        teacher.page.get_by_text("Finished").first.wait_for(timeout=120_000)
        figures: dict[str, float] = {}

        def measure(seconds: float) -> None:
            cpu0, (vol0, inv0), t0 = cpu_seconds(server.proc.pid), switches(server.proc.pid), time.perf_counter()
            time.sleep(seconds)
            elapsed = time.perf_counter() - t0
            vol1, inv1 = switches(server.proc.pid)
            figures.update(cores=(cpu_seconds(server.proc.pid) - cpu0) / elapsed,
                           voluntary=(vol1 - vol0) / elapsed, involuntary=(inv1 - inv0) / elapsed)

        # the clients run in their own thread with their own event loop: Playwright's sync API owns this one
        clients = threading.Thread(target=lambda: asyncio.run(
            waiting_class(server.base, link, args.pages, args.seconds, measure)))
        clients.start()
        clients.join()
        teacher.close()
    n = args.pages
    print(f"{n} pages waiting for the teacher's next run, {args.seconds:.0f} s:")
    print(f"  server CPU: {figures['cores']:.3f} cores ({1000 * figures['cores'] / n:.2f} ms a second per page)")
    print(f"  context switches a second: {figures['voluntary']:.0f} voluntary ({figures['voluntary'] / n:.1f} per "
          f"page), {figures['involuntary']:.0f} involuntary")


if __name__ == "__main__":
    main()
