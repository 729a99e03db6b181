"""The clients of ``benchmarks/abuse.py``: honest students, the script's tabs, and the ledger of their runs.

Every Start or Resume a client presses becomes a :class:`RunRecord` in the :class:`Ledger`: when it was asked
for, when its first step came, when its run ended or its tab closed. The benchmark matches the trainer processes
it saw to these records (:func:`unmatched_trainers`) to tell whether any trainer outlived its run.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
import time
from dataclasses import dataclass, field

from benchmarks.protocol_client import Client

# The script's run: the reverse task's own settings, which a small host admits however loaded it is (a bigger model
# is refused by the guard's step-time limit when the machine is busy, and then holds nothing at all).
SCRIPT_QUERY = "task=reverse"
STUDENT_QUERY = "task=sort&steps={steps}&seed={seed}"
THINK_FACTOR = 2.0  # a student looks at a finished run for this many times as long as it trained
SCRIPT_WAIT_S = 20.0  # a script tab gives up on a Start that neither trains nor queues within this long
OPEN_S = 180.0  # a page's first script run may take this long on a loaded machine
WELCOME = re.compile(r"paused at step ([\d,]+)")


@dataclass
class RunRecord:
    """One Start or Resume of one tab, and what became of it (times from ``time.perf_counter``)."""

    who: str
    asked: float  # when Start or Resume was pressed
    from_step: int = 0  # the step the run was at when it was asked for
    last_step: int = 0  # the last step seen
    first_step: float | None = None  # when its first new step was seen
    closed: float | None = None  # when it ended or its tab closed
    ended: bool = False  # it trained to its last step
    queued: bool = False  # it waited in line
    refused: bool = False  # the server refused it (the client's quota)

    @property
    def wait_s(self) -> float | None:
        return None if self.first_step is None else self.first_step - self.asked

    @property
    def trained_s(self) -> float | None:
        return None if self.first_step is None or self.closed is None else self.closed - self.first_step

    def asked_for_s(self, now: float) -> float:
        """How long it has waited for a first step that never came."""
        return (self.closed if self.closed is not None else now) - self.asked


class Ledger:
    """Every record of the scenario (thread-safe: the clients add, the monitor reads)."""

    def __init__(self) -> None:
        self._records: list[RunRecord] = []
        self._lock = threading.Lock()

    def add(self, record: RunRecord) -> RunRecord:
        with self._lock:
            self._records.append(record)
        return record

    def records(self) -> list[RunRecord]:
        with self._lock:
            return list(self._records)


def unmatched_trainers(lives: dict[int, tuple[float, float]], records: list[RunRecord], outlive_s: float,
                       slack_s: float = 2.0) -> list[int]:
    """The trainer processes (``pid -> (first seen, last seen)``) that no run can account for (see
    :func:`match_trainers`)."""
    return match_trainers(lives, records, outlive_s, slack_s)[1]


def match_trainers(lives: dict[int, tuple[float, float]], records: list[RunRecord], outlive_s: float,
                   slack_s: float = 2.0) -> tuple[dict[int, RunRecord], list[int]]:
    """Each trainer process (``pid -> (first seen, last seen)``) that a run accounts for, with its run, and those
    that no run accounts for.

    A trainer belongs to a run asked for before it appeared (``slack_s`` for the sampling), that had not yet shown
    its first step (or closed) when it appeared, and that was still open, or ended at most ``outlive_s`` before, when
    the trainer was last seen; each run holds one trainer at a time (Resume after a give-back is a new record).
    A maximum bipartite matching (augmenting paths) finds whether every trainer has such a run of its own.
    """
    def fits(pid: int, record: RunRecord) -> bool:
        born, died = lives[pid]
        began = record.first_step if record.first_step is not None else record.closed
        return (record.asked - slack_s <= born <= (began if began is not None else born) + slack_s
                and (record.closed is None or died <= record.closed + outlive_s + slack_s))

    owner: dict[int, int] = {}  # record index -> trainer pid

    def claim(pid: int, tried: set[int]) -> bool:
        for index, record in enumerate(records):
            if index not in tried and fits(pid, record):
                tried.add(index)
                if index not in owner or claim(owner[index], tried):
                    owner[index] = pid
                    return True
        return False

    unmatched = [pid for pid in sorted(lives, key=lambda p: lives[p][0]) if not claim(pid, set())]
    return {pid: records[index] for index, pid in owner.items()}, unmatched


async def read_until(tab: Client, done, deadline: float) -> bool:
    """Read ``tab``'s messages until ``done()`` or ``deadline``; returns ``done()``."""
    while not done() and time.perf_counter() < deadline:
        await tab._receive(deadline)
    return done()


@dataclass
class Honest:
    """A student who trains run after run; ``leaves``, (by when, for how long): close the first run's tab a third of
    the way in (or by then, once it trained a step), stay away that long, then reopen its address and resume it."""

    base: str
    index: int
    steps: int
    headers: dict[str, str]
    ledger: Ledger
    leaves: tuple[float, float] | None = None
    runs: list[RunRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    comeback: str = ""  # what the student found on coming back
    total_steps: int = 0

    def __post_init__(self) -> None:
        self.cookie = secrets.token_hex(16)  # one browser for the whole lesson

    def tab(self, query: str) -> Client:
        return Client(self.base, "training", query, name=f"student {self.index}", cookie=self.cookie,
                      headers=self.headers)

    async def press(self, tab: Client, label: str, until: float) -> RunRecord:
        """Press Start or Resume and wait for the run's first new step (or the end of the lesson)."""
        record = self.ledger.add(RunRecord(f"student {self.index}", time.perf_counter(), from_step=tab.max_step))
        self.runs.append(record)
        await tab.click(label)
        if await read_until(tab, lambda: tab.max_step > record.from_step, until):
            record.first_step = next(t for t, s in tab.steps if s > record.from_step and t >= record.asked)
        record.queued = tab.waited
        return record

    async def attend(self, until: float) -> None:
        seed = 1000 * self.index
        while time.perf_counter() < until - 5:
            seed += 1  # a new run each time (the same settings would replay the recording)
            tab = self.tab(STUDENT_QUERY.format(steps=self.steps, seed=seed))
            await tab.open(timeout_s=OPEN_S)
            if "Start" not in tab.buttons:
                self.problems.append(f"the page did not load within {OPEN_S:.0f} s")
                break
            record = await self.press(tab, "Start", until)
            if self.leaves is not None and seed == 1000 * self.index + 1:
                tab, record = await self.leave_and_return(tab, record, until)
            await self.follow(tab, record, until)

    async def leave_and_return(self, tab: Client, record: RunRecord, until: float) -> tuple[Client, RunRecord]:
        """Close the tab a third of the way in, come back to its address after a while (:attr:`leaves`), resume."""
        leave_by, away_s = self.leaves

        def far_enough() -> bool:
            return tab.max_step >= self.steps // 3 or (tab.max_step > 0 and time.perf_counter() >= leave_by)

        await read_until(tab, far_enough, until)
        left_at, address = tab.max_step, tab.query_shown
        record.last_step = left_at
        if left_at == 0:  # the lesson ended before the run trained at all: nothing to leave behind
            self.comeback = "not measured: the run had not trained a step when the lesson ended"
            record.closed = time.perf_counter()
            return tab, record
        self.total_steps += left_at - record.from_step
        record.closed = time.perf_counter()
        await self._close(tab)
        await asyncio.sleep(max(0.0, min(away_s, until - time.perf_counter() - 10)))
        back = self.tab(address)
        await back.open(timeout_s=OPEN_S)
        parked = [int(m.group(1).replace(",", "")) for a in back.alerts if (m := WELCOME.search(a))]
        shown = back.max_step
        self.comeback = (f"left at step {left_at} (the last it saw), welcomed back at step "
                         f"{parked[0] if parked else 'none'}, its page showing step {shown} with {back.charts} "
                         f"charts")
        if not parked or shown != parked[0] or shown < left_at or back.charts == 0 or "run=" not in address:
            self.problems.append("the run left behind did not come back whole")
        if "Resume" not in back.buttons:  # nothing to resume: the student starts over
            self.problems.append(f"no Resume on coming back (the page said: {' | '.join(back.alerts)[:300]})")
            return back, await self.press(back, "Start", until)
        return back, await self.press(back, "Resume", until)

    async def follow(self, tab: Client, record: RunRecord, until: float) -> None:
        """Follow the run to its end, look at it, close the tab."""
        ended = await read_until(tab, lambda: tab.max_step >= self.steps, until)
        now = time.perf_counter()
        record.last_step = tab.max_step
        self.total_steps += tab.max_step - record.from_step
        if ended:
            record.ended, record.closed = True, now
            if tab.charts == 0:
                self.problems.append(f"run {len(self.runs)} ended without curves")
            think = THINK_FACTOR * (record.trained_s or 0.0)
            await read_until(tab, lambda: False, min(until, now + think))
        if tab.went_back or tab.exceptions:
            self.problems.append(f"run {len(self.runs)}: step went back or an exception was shown")
        if record.closed is None:
            record.closed = time.perf_counter()
        await self._close(tab)

    async def _close(self, tab: Client) -> None:
        if tab.exceptions:
            self.problems.append(f"{tab.exceptions} exceptions shown")
        await tab.close()

    def run_length_s(self) -> float:
        """How long one of this student's runs takes: the longest that ended, from its first step to its last, or
        (none ended) its steps at the fastest speed one of its runs trained; 0 when none trained."""
        ended = [r.trained_s for r in self.runs if r.ended]
        if ended:
            return max(ended)
        speeds = [(r.last_step - r.from_step) / ((r.closed or time.perf_counter()) - r.first_step)
                  for r in self.runs if r.first_step is not None and r.last_step > r.from_step]
        return self.steps / max(speeds) if speeds else 0.0

    def lost(self) -> list[str]:
        return list(self.problems)


async def scripted_tab(base: str, index: int, headers: dict[str, str], ledger: Ledger, until: float,
                       runs: list[RunRecord]) -> None:
    """One of the script's tabs: Start, Pause (once a step trained), close, with a new cookie every time."""
    while time.perf_counter() < until:
        tab = Client(base, "training", SCRIPT_QUERY, name=f"script {index}", headers=headers)  # a new cookie
        try:
            await tab.open(timeout_s=30)
        except (OSError, TimeoutError):
            await asyncio.sleep(1.0)
            continue
        if "Start" in tab.buttons:
            record = ledger.add(RunRecord(f"script {index}", time.perf_counter()))
            runs.append(record)
            await _start_pause(tab, record, until)
            record.closed = time.perf_counter()
        await tab.close()


async def _start_pause(tab: Client, record: RunRecord, until: float) -> None:
    """Start; once a step trained, Pause and wait for Resume; a place in line is kept for two seconds."""
    await tab.click("Start")

    def refused() -> bool:
        return any("already holds" in alert for alert in tab.alerts)

    await read_until(tab, lambda: tab.max_step > 0 or tab.waited or refused(), min(until, record.asked + SCRIPT_WAIT_S))
    record.queued, record.refused = tab.waited, refused()
    if tab.waited:
        await read_until(tab, lambda: tab.max_step > 0, time.perf_counter() + 2.0)
    if tab.max_step > 0:
        record.first_step = next(t for t, step in tab.steps if step > 0)
        if "Pause" in tab.buttons:
            await tab.click("Pause")
            await read_until(tab, lambda: "Resume" in tab.buttons, time.perf_counter() + 5.0)
