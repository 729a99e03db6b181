"""A class on one server: the teacher's run with 30 watchers, then with the whole class, then 30 arriving.

Starts the app on a free port and measures, each phase for ``--seconds`` (default 120; 30 on a small host, where
the teacher's 1,000-step run would otherwise end first):

- **teacher alone**: a real headless Chromium on Live Training (the projector) trains the default reverse model
  for as many steps as the host allows, shared live; its steps per second read from the page before the 30
  watchers, between them and the class, and after the class (each loaded phase's share is of the mean of the alone
  runs either side of it: a shared 2-core machine's own speed drifts by 10-30% between minutes);
- **30 watchers only** on the teacher's watch link (target: the teacher keeps >= 85% of alone);
- **the whole class**: 20 watchers, 4 students who start their own runs (they wait in line when the server is
  full), 8 explorers rerunning the Attention Lab, Positional Encodings, ViT Patching and Model Builder every few
  seconds (targets: the teacher keeps >= 60% of alone; explorers respond at p95 <= 1.5 s; no run lost);
- in both, every watcher's refresh rate: new Step values it receives a second (target >= 1.5 each);
- the proportional set size of the server's whole process tree (shared pages counted once; peak <= 1.5 GB) and
  every exception shown or logged (target 0);
- then a **class arriving**: 30 new sessions open the watch link within 10 s; first heading p95 (target <= 3 s).

Each teacher phase trains a fresh run (another seed: the same settings would replay the recording). The whole
scenario runs under normal limits, then under a small host's, which the server finds from a cgroup folder with
Community Cloud's limits (2.7 GB, two cores: ``TE_CGROUP_ROOT``), as in a container (``--small`` runs only that).
The figures measured before watchers shared their drawings are printed beside (``EARLIER``); where a target is
missed, the report says by how much and where the server's threads spent their time.

Watchers, students and explorers are protocol-level clients (Streamlit's own websocket messages, see
:class:`Client`): twenty browsers cannot share two cores with the server they measure, and a client that only
receives costs the server exactly what a browser costs it (the same messages) without a browser's own CPU. The
teacher is a real browser because the projector is one.

Usage::

    python benchmarks/classroom.py                 # normal limits, then small-host limits
    python benchmarks/classroom.py --seconds 60 --small
    python benchmarks/classroom.py --trainer both  # runs on the server's threads (the old path), then in processes
    python benchmarks/classroom.py --normal --stall-dumps /tmp/stalls  # py-spy dumps of the server's threads
    python benchmarks/classroom.py --normal --profile /tmp/profiles      # py-spy record of each loaded phase
    python benchmarks/classroom.py --normal --event-loop both  # asyncio's own event loop, then uvloop's

``--stall-dumps DIR`` writes ``py-spy dump`` of the server's threads (``--nonblocking``: the server is not paused)
whenever an explorer's rerun has waited :data:`STALL_S` seconds, so a stall is caught while it lasts; it needs py-spy
(requirements-dev.txt). ``--profile DIR`` samples the server and its trainer processes with ``py-spy record``
(``--subprocesses``, collapsed stacks, one file per loaded phase) for a flame graph of where each phase's CPU went.
Every target is printed with PASS or FAIL beside its phase's figure, and each scenario ends
with the list of its targets and how many passed.

``--trainer`` picks where runs train (``TE_TRAINER``): ``process`` (the app's default: a trainer process per run),
``thread`` (the server's script threads, as before trainer processes) or ``both``, to compare them in one run.
``--event-loop`` picks the server's event loop: ``installed`` (uvloop, which requirements.txt installs and Streamlit
then uses), ``asyncio`` (Python's own loop, uvloop hidden from the server) or ``both``, to compare them in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

from benchmarks.processes import browser_pids, cpu_of, thread_cpu, tree_pss_bytes  # noqa: E402
from benchmarks.protocol_client import Client, ServerProcess  # noqa: E402
from explorer.host import ENV_CGROUP_ROOT, NORMAL_LIMITS, SMALL_LIMITS, detect_host  # noqa: E402
from tests.e2e.browser import find_chromium  # noqa: E402
from tests.e2e.conftest import CHROMIUM_ARGS  # noqa: E402

TEACHER = "task=reverse&steps={steps}&seed={seed}"  # the default reverse model, the host's longest run
STUDENT_RUNS = ("task=sort&steps=400", "task=copy&steps=400&seed=1", "task=reverse&steps=400&seed=2",
                "task=sort&steps=400&seed=3")
EXPLORER_PAGES = ("attention", "positional", "vit", "builder")
EXPLORE_EVERY_S = 4.0  # an explorer reruns its page this often
CLOUD_MEMORY_BYTES = 2700 * 1024**2  # Community Cloud: about 2.7 GB ...
CLOUD_CPU_MAX = "200000 100000"  # ... and two cores' worth of CPU time (cgroup v2 cpu.max: quota, period)
STALL_S = 3.0  # --stall-dumps: an explorer rerun waiting this long has the server's threads dumped
SMALL_PHASE_S = 30.0  # a small host's phases: its teacher run (1,000 steps) lasts about this long with a class
GB = 1e9
# Before watchers shared their drawings: docs/classroom.md, 60 s per phase, 2-core machine, load average 2.7
EARLIER = {
    "normal": {"teacher with the class": "1.9 of 41.6 steps/s (5%)", "teacher with 30 watchers": "not measured",
               "watchers": "min 0.85, median 0.89", "explorer response p95": "5.81 s",
               "memory": "0.67 GB (server RSS)", "runs lost": "0", "exceptions": "0", "arriving p95": "0.19 s"},
    "small": {"teacher with the class": "not measured (the run ended)", "teacher with 30 watchers": "not measured",
              "watchers": "not measured", "explorer response p95": "1.08 s",
              "memory": "0.57 GB (server RSS)", "runs lost": "0", "exceptions": "0", "arriving p95": "0.03 s"},
}


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values``, nearest rank; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


class Teacher:
    """The projector: a real Chromium page training and sharing the teacher's run."""

    def __init__(self, playwright, base: str, steps: int) -> None:
        executable = find_chromium()
        self.browser = playwright.chromium.launch(headless=True, executable_path=executable, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(120_000)
        self.base, self.steps, self.shown_exceptions = base, steps, 0

    def start(self, seed: int) -> str:
        """Open a fresh run (seed ``seed``), share it, start it; returns its class link."""
        self.page.goto(f"{self.base}/training?{TEACHER.format(steps=self.steps, seed=seed)}")
        self.page.locator("[data-testid=stMain] h1").first.wait_for()
        self._idle()
        self.page.get_by_text("📡 Share live").click()
        code = self.page.get_by_test_id("stCode").filter(has_text="class=").first
        code.wait_for()
        link = code.inner_text().strip()
        for _ in range(3):  # a click that lands while the page reruns can be lost: click again
            self._idle()
            self.page.get_by_role("button", name="Start", exact=True).click()
            try:
                self.page.get_by_text("Training…").first.wait_for(timeout=30_000)
                break
            except PlaywrightTimeout:
                continue
        else:
            raise RuntimeError(f"the teacher's run (seed {seed}) did not start")
        return link.split("?", 1)[1]

    def _idle(self) -> None:
        """Wait until the page's script run has finished."""
        self.page.wait_for_selector("[data-testid=stStatusWidgetRunningIcon]", state="detached", timeout=60_000)

    def stop(self) -> None:
        """Stop the run (its place is free for the next phase's run) and count the exceptions it showed."""
        self.shown_exceptions += self.page.get_by_test_id("stException").count()
        stop = self.page.get_by_role("button", name="Stop", exact=True)
        if stop.count() and stop.first.is_enabled():
            stop.first.click()
            self.page.wait_for_timeout(1000)

    def alone(self, seed: int) -> float:
        """Steps per second of a fresh run (seed ``seed``) with nobody else on the server, over 15 s after 3 s to
        settle; the run is stopped after. The machine's own speed drifts (other tenants, heat) by 10-30% within
        minutes, so each loaded phase is compared with the alone runs just before and just after it."""
        self.start(seed)
        self.rate(3.0)
        rate = self.rate(15.0)
        self.stop()
        return rate

    def step(self) -> int:
        text = self.page.get_by_test_id("stMetricValue").first.inner_text()
        return int(re.match(r"([\d,]+)", text).group(1).replace(",", ""))

    def rate(self, seconds: float) -> float:
        """Steps per second over the next ``seconds`` (reading the page's Step metric)."""
        start, t0 = self.step(), time.perf_counter()
        self.page.wait_for_timeout(seconds * 1000)
        return (self.step() - start) / (time.perf_counter() - t0)

    def close(self) -> None:
        self.browser.close()


class StallDumps:
    """``py-spy dump`` of the server's threads into ``folder`` while an explorer's rerun waits (see ``--stall-dumps``):
    at most one dump every two seconds, each named for the time and the page that waited."""

    def __init__(self, pid: int, folder: Path) -> None:
        self.pid, self.folder, self._last, self._lock = pid, folder, 0.0, threading.Lock()
        folder.mkdir(parents=True, exist_ok=True)
        self.written: list[Path] = []

    def dump(self, page: str) -> None:
        with self._lock:
            if time.perf_counter() - self._last < 2.0:
                return
            self._last = time.perf_counter()
        path = self.folder / f"{time.strftime('%H%M%S')}-{page}.txt"
        with path.open("w") as out:
            subprocess.run([py_spy(), "dump", "--nonblocking", "--pid", str(self.pid)],
                           stdout=out, stderr=subprocess.STDOUT, timeout=60, check=False)
        self.written.append(path)


async def _explore(base: str, page: str, until: float, stalls: StallDumps | None = None) -> Client:
    client = Client(base, page, "", name=f"explorer:{page}")
    await client.open()
    while time.perf_counter() < until:
        await asyncio.sleep(EXPLORE_EVERY_S)
        timer = threading.Timer(STALL_S, stalls.dump, (page,)) if stalls is not None else None
        if timer is not None:
            timer.start()
        await client.rerun_and_wait()
        if timer is not None:
            timer.cancel()
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


async def class_load(base: str, watch_query: str, seconds: float, *, watchers: int = 20, students: int = 4,
                     explorers: int = 8, stalls: StallDumps | None = None) -> dict[str, list[Client]]:
    until = time.perf_counter() + seconds
    jobs = [_watch(base, watch_query, until) for _ in range(watchers)]
    jobs += [_train(base, q, until) for q in STUDENT_RUNS[:students]]
    jobs += [_explore(base, EXPLORER_PAGES[i % len(EXPLORER_PAGES)], until, stalls) for i in range(explorers)]
    done = await asyncio.gather(*jobs)
    return {"watchers": done[:watchers], "students": done[watchers:watchers + students],
            "explorers": done[watchers + students:]}


async def class_arriving(base: str, watch_query: str, sessions: int = 30, within_s: float = 10.0) -> list[float]:
    async def arrive(i: int) -> float:
        await asyncio.sleep(i * within_s / sessions)
        client = Client(base, "training", watch_query, name="arriving", finishes=False)
        await client.open()
        await client.close()
        return client.first_heading_s

    return list(await asyncio.gather(*(arrive(i) for i in range(sessions))))


class Phase:
    """One load beside the teacher's run: the teacher's rate, the clients, and where the server's CPU went."""

    def __init__(self, name: str, rate: float, clients: dict[str, list[Client]], cpu: dict[str, float],
                 seconds: float) -> None:
        self.name, self.rate, self.clients, self.cpu, self.seconds = name, rate, clients, cpu, seconds


def py_spy() -> str:
    """The virtual environment's py-spy, else the one on PATH."""
    spy = Path(sys.executable).with_name("py-spy")
    return str(spy) if spy.exists() else "py-spy"


def record(pid: int, path: Path, seconds: float) -> subprocess.Popen:
    """Start ``py-spy record`` of process ``pid`` and its children for ``seconds``, collapsed stacks into ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([py_spy(), "record", "--nonblocking", "--subprocesses", "--format", "raw", "--rate", "50",
                             "--duration", str(max(1, round(seconds))), "--pid", str(pid), "--output", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def under_load(teacher: Teacher, server: ServerProcess, name: str, seed: int, seconds: float,
               memory: list[int], stalls: StallDumps | None = None, spied: Path | None = None,
               **load: int) -> tuple[Phase, str]:
    """Run ``load`` (see :func:`class_load`) on a fresh teacher run for ``seconds``; the phase and its link (with
    ``spied``, a folder: the phase's ``py-spy record`` in it)."""
    link = teacher.start(seed)
    teacher.page.wait_for_timeout(2000)  # settle
    result: dict = {}
    # The clients run in their own thread with their own event loop: Playwright's sync API owns this one.
    thread = threading.Thread(target=lambda: result.update(clients=asyncio.run(
        class_load(server.base, link, seconds, stalls=stalls, **load))))
    cpu_before = thread_cpu(server.proc.pid)
    outside_before = _outside_cpu()
    samples = [(time.perf_counter(), teacher.step())]
    thread.start()
    spy = record(server.proc.pid, spied / (re.sub(r"\W+", "-", name) + ".txt"), seconds) if spied else None
    while thread.is_alive():
        teacher.page.wait_for_timeout(2000)
        samples.append((time.perf_counter(), teacher.step()))
        memory.append(tree_pss_bytes(server.proc.pid))
    if spy is not None:
        spy.wait()
    cpu_after = thread_cpu(server.proc.pid)
    cpu = {k: v - cpu_before.get(k, 0.0) for k, v in cpu_after.items()}
    cpu.update({k: v - outside_before[k] for k, v in _outside_cpu().items()})
    return Phase(name, _rate(samples), result["clients"], cpu, seconds), link


def _outside_cpu() -> dict[str, float]:
    """CPU seconds used so far outside the server: the teacher's Chromium, and this process (the protocol clients
    that stand in for the class's browsers, which in a classroom run on the students' own machines)."""
    return {"outside:teacher's Chromium": cpu_of(browser_pids()),
            "outside:the clients (this process)": time.process_time()}


def scenario(small: bool, seconds: float, trainer: str = "process", dumps: Path | None = None,
             spied: Path | None = None, event_loop: str = "installed") -> None:
    from playwright.sync_api import sync_playwright

    limits = SMALL_LIMITS if small else NORMAL_LIMITS
    with tempfile.TemporaryDirectory(prefix="cgroup-") as cgroup:
        env = {"TE_SMALL_HOST": "0", "TE_TRAINER": trainer}
        if small:  # a container's own limits, read as the app reads /sys/fs/cgroup
            Path(cgroup, "memory.max").write_text(f"{CLOUD_MEMORY_BYTES}\n")
            Path(cgroup, "cpu.max").write_text(f"{CLOUD_CPU_MAX}\n")
            env = {ENV_CGROUP_ROOT: cgroup, "TE_TRAINER": trainer}
            seconds = min(seconds, SMALL_PHASE_S)
        host = detect_host(environ=env)
        title = (f"small-host limits (found from a cgroup folder: {host.memory_bytes / GB:.1f} GB, {host.cores} "
                 f"cores, small={host.small})" if small else "normal limits") + f", runs train in {trainer}"
        title += ", asyncio's own event loop (uvloop hidden)" if event_loop == "asyncio" else ""
        with ServerProcess(env, event_loop) as server, sync_playwright() as playwright:
            teacher = Teacher(playwright, server.base, limits.max_steps)
            memory: list[int] = []
            alone = teacher.alone(seed=1)
            memory.append(tree_pss_bytes(server.proc.pid))
            # each scenario's own folder of dumps and profiles
            run_name = f"{'small' if small else 'normal'}-{trainer}" + ("-asyncio" if event_loop == "asyncio" else "")
            profiles = spied / run_name if spied is not None else None
            watchers, _ = under_load(teacher, server, "30 watchers only", 2, seconds, memory, spied=profiles,
                                     watchers=30, students=0, explorers=0)
            teacher.stop()
            between = teacher.alone(seed=5)  # each loaded phase is judged against the alone runs either side
            folder = dumps / run_name if dumps is not None else None
            stalls = StallDumps(server.proc.pid, folder) if folder is not None else None
            full, link = under_load(teacher, server, "the whole class", 3, seconds, memory, stalls=stalls,
                                    spied=profiles)
            result: dict = {}
            arriving = threading.Thread(target=lambda: result.update(arrivals=asyncio.run(
                class_arriving(server.base, link))))
            arriving.start()
            while arriving.is_alive():
                teacher.page.wait_for_timeout(500)
                memory.append(tree_pss_bytes(server.proc.pid))
            teacher.stop()
            after = teacher.alone(seed=4)
            report(title, "small" if small else "normal", (alone, between, after), [watchers, full],
                   result["arrivals"],
                   max(memory), server.logged_exceptions(), teacher.shown_exceptions)
            _exceptions_said([c for phase in (watchers, full) for group in phase.clients.values() for c in group],
                             server.tracebacks())
            if stalls is not None:
                print(f"stall dumps (an explorer rerun waiting {STALL_S:.0f} s): {len(stalls.written)} in "
                      f"{stalls.folder}")
            teacher.close()


def _exceptions_said(clients: list[Client], logged: list[str]) -> None:
    """What the exceptions were, each kind once with how often: those the clients' pages showed, those logged."""
    for where, texts in (("shown on the clients' pages", [t for c in clients for t in c.exception_texts]),
                         ("in the server's log", logged)):
        for text, times in Counter(texts).most_common(5):
            print(f"  exception {where} ({times}×): {text[:300]}")


def _rate(samples: list[tuple[float, int]]) -> float:
    """Steps per second while the run trained (a run that ended stops counting where it ended)."""
    moving = [(t, s) for (t, s), (_, nxt) in zip(samples, samples[1:], strict=False) if nxt > s]
    if not moving:
        return 0.0
    end = next((t, s) for t, s in samples if s >= moving[-1][1] and t > moving[-1][0])
    return (end[1] - moving[0][1]) / (end[0] - moving[0][0])


def verdict(value: float, target: float, *, at_least: bool, unit: str = "") -> str:
    """"PASS (by X)" or "FAIL (short by X)" for ``value`` against ``target``; "FAIL (not measured)" for NaN."""
    margin = value - target if at_least else target - value
    if margin != margin:  # NaN: nothing measured
        return "FAIL (not measured)"
    return f"PASS (by {margin:.2f}{unit})" if margin >= 0 else f"FAIL (short by {-margin:.2f}{unit})"


def profile(phase: Phase) -> str:
    """Where the tree's CPU went in ``phase``: per process, its total and its busiest threads, in cores."""
    totals = {key: used / phase.seconds for key, used in phase.cpu.items() if "/" not in key and ":" not in key}
    threads: dict[str, list[float]] = {}
    for key, used in phase.cpu.items():
        if "/" in key:
            threads.setdefault(key.split("/", 1)[0], []).append(used / phase.seconds)
    lines = []
    for process, total in sorted(totals.items(), key=lambda kv: -kv[1])[:4]:
        alive = sorted(threads.get(process, []), reverse=True)
        busiest = ", ".join(f"{t:.2f}" for t in alive[:3])
        lines.append(f"    {process}: {total:.2f} cores; its {len(alive)} threads alive at the end used "
                     f"{sum(alive):.2f} (busiest {busiest}); the rest went to threads that ended (script runs)")
    lines.append(f"    the server's whole process tree: {sum(totals.values()):.2f} cores")
    for key, used in phase.cpu.items():
        if key.startswith("outside:"):
            lines.append(f"    {key.split(':', 1)[1]}: {used / phase.seconds:.2f} cores")
    return "\n".join(lines)


def report(title: str, kind: str, alones: tuple[float, float, float], phases: list[Phase], arrivals: list[float],
           peak_pss: int, logged: int, teacher_exceptions: int) -> None:
    """Print the figures of one scenario, phase by phase, each target with PASS or FAIL, then the targets together;
    ``alones``: the teacher's speed alone before the 30 watchers, between them and the class, and after the class
    (each loaded phase's share is of the mean of the two alone runs either side of it)."""
    earlier = EARLIER[kind]
    watchers, full = phases
    clients = full.clients
    targets: list[tuple[str, str]] = []  # (target, "PASS (...)" / "FAIL (...)")

    def judged(name: str, value: float, target: float, *, at_least: bool, unit: str = "") -> str:
        said = verdict(value, target, at_least=at_least, unit=unit)
        targets.append((name, said))
        return said

    print(f"\n== A class on one server, {title}, {full.seconds:.0f} s per phase (2-core machine, server, Chromium "
          f"and clients on the same cores; load average {os.getloadavg()[0]:.1f} now) ==")
    print(f"teacher alone: {alones[0]:.1f} steps/s before the watchers, {alones[1]:.1f} between the watchers and "
          f"the class, {alones[2]:.1f} after the class")
    for i, (phase, target, key) in enumerate(((watchers, 0.85, "teacher with 30 watchers"),
                                               (full, 0.60, "teacher with the class"))):
        alone = statistics.mean(alones[i:i + 2])
        share = phase.rate / alone if alone else float("nan")
        said = judged(f"teacher with {phase.name} >= {target:.0%} of alone ({share:.0%})", 100 * share, 100 * target,
                      at_least=True, unit=" points")
        print(f"[{phase.name}] teacher: {phase.rate:.1f} steps/s = {share:.0%} of alone (target >= {target:.0%}: "
              f"{said}); earlier: {earlier[key]}")
    for phase in phases:
        rates = [c.refresh_rate() for c in phase.clients["watchers"]]
        said = judged(f"every watcher >= 1.5 refreshes/s with {phase.name} (min {min(rates):.2f})", min(rates), 1.5,
                      at_least=True)
        print(f"[{phase.name}] watchers' refreshes/s ({len(rates)}): min {min(rates):.2f}, median "
              f"{statistics.median(rates):.2f} (target >= 1.5 each: {said}); earlier: {earlier['watchers']}")
    responses = [t for c in clients["explorers"] for t in c.rerun_times]
    p95 = percentile(responses, 95)
    said = judged(f"explorer response p95 <= 1.5 s ({p95:.2f} s)", p95, 1.5, at_least=False, unit=" s")
    print(f"[{full.name}] explorer response: p50 {percentile(responses, 50):.2f} s, p95 {p95:.2f} s, max "
          f"{max(responses, default=float('nan')):.2f} s over {len(responses)} reruns (target p95 <= 1.5 s: {said}); "
          f"earlier: {earlier['explorer response p95']}")
    slowest = sorted(((t, c.page) for c in clients["explorers"] for t in c.rerun_times), reverse=True)[:4]
    print(f"[{full.name}] slowest explorer reruns: " + ", ".join(f"{page} {t:.2f} s" for t, page in slowest))
    opened = [c.open_s for group in clients.values() for c in group]
    print(f"[{full.name}] {len(opened)} pages opening together as the class arrives: p50 "
          f"{percentile(opened, 50):.2f} s, p95 {percentile(opened, 95):.2f} s, max "
          f"{max(opened, default=float('nan')):.2f} s (explorers: to the end of their first script run; "
          f"watchers: to their first heading)")
    lost = [c.name for c in clients["students"] if c.lost()]
    waited = sum(c.waited for c in clients["students"])
    started = sum(c.max_step > 0 for c in clients["students"])
    said = judged(f"no student's run lost ({len(lost)} lost)", -len(lost), 0, at_least=True)
    print(f"[{full.name}] students: {started} of {len(clients['students'])} runs started ({waited} waited in line), "
          f"runs lost: {len(lost)} {lost if lost else ''}(target 0: {said}); earlier: {earlier['runs lost']}")
    said = judged(f"process tree memory <= 1.5 GB ({peak_pss / GB:.2f} GB)", peak_pss / GB, 1.5, at_least=False,
                  unit=" GB")
    print(f"[all phases] process tree memory (PSS), peak: {peak_pss / GB:.2f} GB (target <= 1.5 GB: {said}); "
          f"earlier: {earlier['memory']}")
    shown = sum(c.exceptions for p in phases for group in p.clients.values() for c in group) + teacher_exceptions
    said = judged(f"no exception ({shown} shown, {logged} logged)", -(shown + logged), 0, at_least=True)
    print(f"[all phases] exceptions: {shown} shown, {logged} logged (target 0: {said}); "
          f"earlier: {earlier['exceptions']}")
    p95 = percentile(arrivals, 95)
    said = judged(f"30 arriving: first heading p95 <= 3 s ({p95:.2f} s)", p95, 3.0, at_least=False, unit=" s")
    print(f"[class arriving] 30 sessions within 10 s: first heading p50 {percentile(arrivals, 50):.2f} s, p95 "
          f"{p95:.2f} s, max {max(arrivals):.2f} s (target p95 <= 3 s: {said}); earlier: {earlier['arriving p95']}")
    for phase in phases:
        print(f"[{phase.name}] where the CPU went (cores, averaged over the phase):\n{profile(phase)}")
    print(f"targets, {title}:")
    for name, said in targets:
        print(f"  {said.split()[0]}  {name}")
    passed = sum(said.startswith("PASS") for _, said in targets)
    print(f"  {passed} of {len(targets)} targets PASS" + ("" if passed == len(targets) else
                                                         f"; FAIL: {len(targets) - passed}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="length of each loaded phase")
    parser.add_argument("--small", action="store_true", help="only the small-host limits")
    parser.add_argument("--normal", action="store_true", help="only the normal limits")
    parser.add_argument("--trainer", choices=("process", "thread", "both"), default="process",
                        help="where runs train: trainer processes (the default), the server's threads, or both")
    parser.add_argument("--event-loop", choices=("installed", "asyncio", "both"), default="installed",
                        help="the server's event loop: uvloop when installed (as the app runs), asyncio's own, or both")
    parser.add_argument("--stall-dumps", type=Path, metavar="DIR",
                        help=f"py-spy dumps of the server's threads whenever an explorer rerun waits {STALL_S:.0f} s")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="py-spy record of the server and its trainers during each loaded phase (collapsed stacks)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    trainers = ("thread", "process") if args.trainer == "both" else (args.trainer,)
    loops = ("asyncio", "installed") if args.event_loop == "both" else (args.event_loop,)
    for small in ((True,) if args.small else (False,) if args.normal else (False, True)):
        for trainer in trainers:
            for loop in loops:
                scenario(small, args.seconds, trainer, args.stall_dumps, args.profile, loop)
                print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
