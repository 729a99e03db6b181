"""One student with a script against a class on a small host: the class keeps training and the server holds.

Starts the app on a free port under a small host's limits (Community Cloud's 2.7 GB and two cores, read from a
cgroup folder as in ``benchmarks/classroom.py``), behind a trusted proxy that passes on every client's address
(``TE_TRUSTED_PROXIES``): the whole class, the script included, arrives from one school address. For
``--seconds`` (default 300):

- **five honest students** each start a run on Live Training (``--steps`` steps of the sort task, a new seed each
  time), follow it to its end, look at it for twice as long as it trained, and start the next one; one of them
  closes the tab a third of the way into the first run, stays away until the run has given its trainer process
  back (``TE_TRAINER_RELEASE_S``, and the sweep's quarter of it, plus a margin), and reopens the tab's address to
  resume it;
- **one scripted client** with twenty tabs, each doing Start → Pause → close in a loop with a new cookie every
  time (a new browser as far as the server can tell), on the reverse task's default model.

Every client speaks Streamlit's websocket protocol (:class:`benchmarks.protocol_client.Client`): twenty-five
browsers cannot share two cores with the server they measure. A monitor samples the server's process tree every
half second. The targets, each printed with PASS or FAIL (the exit status is 1 when one fails):

1. **honest runs keep training**: every honest student trains (or is still waiting in line at the end), and no
   Start or Resume waits longer than one run's length for its first step (the longest an honest run took to train
   from its first step to its last, or would take at the speed it trained: on a loaded machine everything slows);
2. **memory inside the host's budget**: the tree's peak proportional set size (server, fork server, trainers;
   each shared page counted once, as the container's limit counts it) stays under the host's memory (2.7 GB);
   the peak of the resident sizes summed (shared pages counted in every process) is printed beside it;
3. **no trainer outlives its run by more than two minutes**: every trainer process seen is matched to a run of
   its own (one pressed Start or Resume before the trainer appeared and had not yet trained) that was still open,
   or had ended or closed at most two minutes before, when the trainer was last seen
   (:func:`benchmarks.abuse_clients.unmatched_trainers`); after the last tab closed every trainer is gone within
   two minutes;
4. **nothing is lost**: every honest run ends at its last step, with curves, its Step never going back and no
   exception shown; the run that was left comes back at the step it had, with its curves, and trains on.

Usage::

    python benchmarks/abuse.py                      # five minutes, the default
    python benchmarks/abuse.py --seconds 90 --tabs 8 --steps 150 --release 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable

from benchmarks.abuse_clients import Honest, Ledger, RunRecord, match_trainers, read_until, scripted_tab  # noqa: E402
from benchmarks.protocol_client import Client, ServerProcess  # noqa: E402
from explorer.host import ENV_CGROUP_ROOT, detect_host  # noqa: E402
from explorer.process_tree import children, tree, tree_pss_bytes  # noqa: E402

CLOUD_MEMORY_BYTES = 2700 * 1024**2  # Community Cloud: about 2.7 GB ...
CLOUD_CPU_MAX = "200000 100000"  # ... and two cores' worth of CPU time (cgroup v2 cpu.max: quota, period)
SCHOOL = "10.20.30.40"  # the one address the whole class arrives from (a school router)
OUTLIVE_S = 120.0  # a trainer may outlive its run by this much (the target)
GB = 1e9
OPEN_S = 180.0  # a page's first script run may take this long on a loaded machine


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def trainer_pids(server_pid: int) -> set[int]:
    """The trainer processes of the server: the children of its fork server."""
    forkservers = [c for c in children(server_pid) if "forkserver" in _cmdline(c)]
    return {t for f in forkservers for t in children(f)}


def rss_sum_bytes(server_pid: int) -> int:
    """The resident sizes of the server's process tree, summed (pages shared between them counted in each)."""
    total = 0
    for pid in tree(server_pid):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


@dataclass
class Monitor:
    """Samples the server's tree every ``every_s``: its memory, and which trainer processes are alive."""

    server_pid: int
    every_s: float = 0.5
    peak_pss: int = 0
    peak_rss_sum: int = 0
    peak_trainers: int = 0
    seen: dict[int, tuple[float, float]] = field(default_factory=dict)  # trainer pid -> (first, last seen)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="abuse-monitor", daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> set[int]:
        """Take one sample; returns the trainer processes alive."""
        now = time.perf_counter()
        alive = trainer_pids(self.server_pid)
        for pid in alive:
            self.seen[pid] = (self.seen.get(pid, (now, now))[0], now)
        self.peak_trainers = max(self.peak_trainers, len(alive))
        self.peak_pss = max(self.peak_pss, tree_pss_bytes(self.server_pid))
        self.peak_rss_sum = max(self.peak_rss_sum, rss_sum_bytes(self.server_pid))
        return alive

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()


async def warm_up(base: str, ledger: Ledger) -> None:
    """Train one run to its first step and stop it, so that the fork server trainers start from (it imports torch
    once) is up before the class arrives, as on a server that has trained before."""
    tab = Client(base, "training", "task=sort&steps=20&seed=999", name="warm-up")
    await tab.open(timeout_s=OPEN_S)
    if "Start" not in tab.buttons:
        raise RuntimeError(f"the Live Training page did not load within {OPEN_S:.0f} s")
    record = ledger.add(RunRecord("warm-up", time.perf_counter()))
    await tab.click("Start")
    await read_until(tab, lambda: tab.max_step > 0, time.perf_counter() + OPEN_S)
    record.first_step = time.perf_counter()
    await tab.click("Stop")
    await read_until(tab, lambda: tab._finished.is_set(), time.perf_counter() + OPEN_S)  # stopped, not parked
    await tab.close()
    record.closed = time.perf_counter()


async def scenario(base: str, seconds: float, tabs: int, steps: int, away_s: float,
                   ledger: Ledger) -> tuple[list[Honest], list[RunRecord]]:
    """The class and the script for ``seconds``; returns the honest students and the script's tab runs."""
    await warm_up(base, ledger)
    until = time.perf_counter() + seconds
    headers = {"X-Forwarded-For": SCHOOL}
    leave_by = time.perf_counter() + 0.3 * seconds  # the student who leaves does so by then, to be away long enough
    students = [Honest(base, i, steps, headers, ledger, leaves=(leave_by, away_s) if i == 0 else None)
                for i in range(5)]
    jobs = []
    for student in students:  # the class arrives first, a student every 0.4 s (within one address's new-id rate)
        jobs.append(asyncio.create_task(student.attend(until)))
        await asyncio.sleep(0.4)
    await asyncio.sleep(2.0)
    script_runs: list[RunRecord] = []
    jobs += [asyncio.create_task(scripted_tab(base, j, headers, ledger, until, script_runs)) for j in range(tabs)]
    await asyncio.gather(*jobs)
    return students, script_runs


def run(seconds: float, tabs: int, steps: int, release_s: float, *,
        wait_runs: float = 1.0, start_s: float = 0.0) -> list[tuple[str, bool, str]]:
    """Serve, load, measure; returns the targets as (name, met, figures). ``wait_runs``: the longest wait allowed,
    in runs' lengths (a test on a loaded machine allows two); ``start_s``: seconds allowed on top for a trainer to
    start (a test's runs are so short that a trainer's start, seconds on a loaded machine, would dominate)."""
    away_s = 1.25 * release_s + 15.0  # past the release and the sweep that notices it, with a margin
    with tempfile.TemporaryDirectory(prefix="cgroup-") as cgroup:
        Path(cgroup, "memory.max").write_text(f"{CLOUD_MEMORY_BYTES}\n")
        Path(cgroup, "cpu.max").write_text(f"{CLOUD_CPU_MAX}\n")
        env = {ENV_CGROUP_ROOT: cgroup, "TE_TRAINER": "process", "TE_TRUSTED_PROXIES": "127.0.0.1",
               "TE_TRAINER_RELEASE_S": f"{release_s:g}"}
        host = detect_host(environ=env)
        print(f"host profile: {host.memory_bytes / GB:.2f} GB, {host.cores} cores, small={host.small}; "
              f"{tabs} scripted tabs, 5 students, {seconds:.0f} s, runs of {steps} steps, trainers released "
              f"{release_s:g} s after their tab closed")
        ledger = Ledger()
        with ServerProcess(env) as server:
            monitor = Monitor(server.proc.pid).start()
            started = time.perf_counter()
            students, script_runs = asyncio.run(scenario(server.base, seconds, tabs, steps, away_s, ledger))
            last_close = time.perf_counter()
            monitor.stop()  # from here this thread samples, until every trainer is gone
            left = monitor.sample()
            while left and time.perf_counter() - last_close < OUTLIVE_S + 10:
                time.sleep(1.0)
                left = monitor.sample()
            drained_s = time.perf_counter() - last_close
            logged = server.logged_exceptions()
            elapsed = time.perf_counter() - started
    return targets(students, script_runs, ledger, monitor, host.memory_bytes, left, drained_s, logged, elapsed,
                   wait_runs, start_s)


def targets(students: list[Honest], script_runs: list[RunRecord], ledger: Ledger, monitor: Monitor, budget: int,
            left: set[int], drained_s: float, logged: int, elapsed: float,
            wait_runs: float = 1.0, start_s: float = 0.0) -> list[tuple[str, bool, str]]:
    """The four targets as (name, met, figures); see the module docstring."""
    now = time.perf_counter()
    runs = [r for s in students for r in s.runs]
    length = max(s.run_length_s() for s in students)
    waits = [r.wait_s for r in runs if r.wait_s is not None]
    never = [r.asked_for_s(now) for r in runs if r.wait_s is None]  # asked for a place, never trained (yet)
    worst = max(waits + never, default=float("nan"))
    trains = all(s.total_steps > 0 or (s.runs and s.runs[-1].first_step is None) for s in students)  # or is in line
    keep = worst <= wait_runs * length + start_s and trains
    unmatched = match_trainers(monitor.seen, ledger.records(), OUTLIVE_S)[1]
    drained = (f"after the last tab closed all were gone within {drained_s:.1f} s" if not left else
               f"{len(left)} still alive {drained_s:.0f} s after the last tab closed")
    lost = [f"student {s.index}: {', '.join(s.lost())}" for s in students if s.lost()]
    for pid in sorted(set(unmatched) | left):  # where to look: the runs asked for just before each appeared
        born, last = monitor.seen[pid]
        near = [f"{r.who} (asked {r.asked - born:+.1f} s, closed {_ago(r.closed, born)})"
                for r in ledger.records() if r.asked - 2.0 <= born <= (r.first_step or r.closed or now) + 2.0]
        print(f"trainer {pid}: seen for {last - born:.0f} s; runs it may belong to: {', '.join(near) or 'none'}")
    trained = sum(r.first_step is not None for r in script_runs)
    queued, refused = sum(r.queued for r in script_runs), sum(r.refused for r in script_runs)
    print(f"the script: {len(script_runs)} tabs opened with new cookies; {trained} trained a step and were paused "
          f"and closed, {queued} waited in line, {refused} were refused (one place per client); {elapsed:.0f} s "
          "in all")
    return [
        ("honest runs keep training", keep,
         f"steps trained per student: {', '.join(str(s.total_steps) for s in students)}; "
         f"{sum(r.ended for r in runs)} runs ended of {len(runs)} started or resumed; longest wait for a first "
         f"step {worst:.1f} s (median {_median(waits):.1f} s; {len(never)} still waiting at the end) against "
         f"{wait_runs:g} × one run's length {length:.1f} s{f' + {start_s:g} s to start' if start_s else ''} (the "
         "longest an honest run took, or would take at the "
         "speed it trained)"),
        ("memory inside the host's budget", monitor.peak_pss <= budget,
         f"tree PSS peak {monitor.peak_pss / GB:.2f} GB of {budget / GB:.2f} GB (resident sizes summed, shared "
         f"pages counted in each process: peak {monitor.peak_rss_sum / GB:.2f} GB); trainer processes at once: "
         f"peak {monitor.peak_trainers}"),
        ("no trainer outlives its run by more than two minutes", not unmatched and not left,
         f"{len(monitor.seen)} trainer processes seen, {len(unmatched)} not accounted for by a run open or ended "
         f"within two minutes{_lives(unmatched, monitor)}; {drained}"),
        ("nothing is lost", not lost and logged == 0,
         f"{'; '.join(lost) or 'every honest run ended at its last step with its curves, or trained on'}; the run "
         f"left behind: {students[0].comeback or 'not measured'}; {logged} tracebacks in the server's log"),
    ]


def _ago(when: float | None, since: float) -> str:
    return "never" if when is None else f"{when - since:+.1f} s"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def _lives(pids: list[int], monitor: Monitor) -> str:
    if not pids:
        return ""
    lives = ", ".join(f"{pid} ({monitor.seen[pid][1] - monitor.seen[pid][0]:.0f} s)" for pid in pids[:5])
    return f" (pids and how long each lived: {lives})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="how long the class and the script run")
    parser.add_argument("--tabs", type=int, default=20, help="the script's tabs")
    parser.add_argument("--steps", type=int, default=300, help="steps of each honest run (the small host's default)")
    parser.add_argument("--release", type=float, default=60.0,
                        help="TE_TRAINER_RELEASE_S: seconds before a closed tab's run gives its trainer back")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    results = run(args.seconds, args.tabs, args.steps, args.release)
    for name, met, figures in results:
        print(f"{'PASS' if met else 'FAIL'}  {name}: {figures}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    sys.exit(0 if all(met for _, met, _ in results) else 1)


if __name__ == "__main__":
    main()
