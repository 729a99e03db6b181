"""Live runs by token, process-wide, so that a page whose connection ended can take its run back.

A browser session keeps its :class:`~explorer.runs.live.LiveRun` in its own state. When the page's
connection ends while the run trains (the tab was reloaded or closed, or the server dropped a browser that
could not keep up), the page *parks* the run here: paused, with its model and optimiser state intact. The
tab's address carries the run's token, so a reload finds the run again with :meth:`RunRegistry.claim`, and
Resume continues exactly where it stopped. Nobody else can: a token is honoured only for the browser that
started the run (its ``browser`` id, a secret the browser's cookie carries and no address shows), so an address
read off a projector and opened elsewhere finds nothing, and the owner keeps training. Runs cannot be listed.

Memory stays bounded, and one client cannot take it all: a parked run nobody claims within ``park_ttl_s`` is
released (gradients and optimiser state freed) and forgotten; a client (a browser, or an address) keeps at most
``max_parked_per_client`` parked runs, its oldest going first; when more than ``max_parked`` wait in all, the
oldest run of the client holding the most goes, but never that of a client older than the one whose run was just
parked unless it holds more than that one: a brand-new client (a rotated cookie) gives way itself instead of
pushing out the parked runs of those who came before it. Ties go against the youngest client. A background
thread checks while runs are parked, even when no page is visited.

A run whose last tab closes is parked whatever its state: besides the live loop, which parks a training run when
its connection ends, the background thread asks ``alive`` (whether a session still has its connection; the app
passes Streamlit's answer) and parks the paused runs of sessions that are gone. A parked run that still holds a
trainer process gives it back after ``release_s`` (:meth:`~explorer.runs.live.LiveRun.give_back`): its training
state goes to the run store for ``state_ttl_s``, and Resume after a reload starts a new trainer from it, at the
same step, with the same curves. With the default one minute and a sweep every quarter of it, a closed tab's
trainer exits well within two minutes. Entries whose page has not shown them for ``stale_s`` are forgotten, unless
their run still holds training state: such a run is parked instead, so it gives its trainer back and is released
with its entry.

Releasing a run tells its trainer to stop and waits for it to exit, so it happens after the registry's lock is let
go (:meth:`RunRegistry._locked`): every training page's loop asks the registry whether it still shows its run,
and none of them waits for another run's trainer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from explorer.runs.live import LiveRun
from explorer.runs.store import RunStore, StoreUnavailable, run_store

__all__ = ["Claim", "RunRegistry", "REGISTRY"]

# A parked run waits this long for its page to come back (TE_PARK_MINUTES sets it, e.g. for benchmarks).
PARK_TTL_S = 60 * float(os.environ.get("TE_PARK_MINUTES", "15"))
STALE_S = 60 * 60.0  # an entry not shown for this long is forgotten
MAX_PARKED = 12  # parked runs kept at once per server (each holds its optimiser state)
MAX_PARKED_PER_CLIENT = 3  # ... and per client, so that one visitor's tabs cannot push everyone else's out
MAX_ENTRIES = 256  # entries of any kind; the least recently shown go first
LOG = logging.getLogger(__name__)
CLAIM_WAIT_S = 3.0  # a reload may arrive before the old page has parked its run: wait this long for it
# A parked run gives its trainer process back this long after its page went (TE_TRAINER_RELEASE_S sets it, e.g.
# for tests); the sweeper looks every quarter of it, so the trainer is gone within 1.25× this, plus its exit.
RELEASE_S = float(os.environ.get("TE_TRAINER_RELEASE_S", "60"))


@dataclass
class _Entry:
    run: LiveRun
    owner: str  # the browser session showing the run
    seen: float  # when that session last showed it
    browser: str | None  # the id of the browser that started it: only that browser may take it back
    client: str  # whom its parked place counts against (the browser, or its address)
    parked: float | None = None  # when its connection ended; None while a page shows it
    kept: Any = None  # what its page hands on to the page that takes it back (its live sharing), or None


@dataclass(frozen=True)
class Claim:
    """A run taken back by a page."""

    run: LiveRun
    moved: bool  # True when it came from another session (a reload, or another tab with the same address)
    parked: bool  # True when it was waiting, paused, after its connection ended
    kept: Any = None  # what the page that showed it handed on (see RunRegistry.keep)


class RunRegistry:
    """The table of live runs; see the module docstring. Thread-safe: every browser session calls it."""

    def __init__(self, *, park_ttl_s: float = PARK_TTL_S, stale_s: float = STALE_S, max_parked: int = MAX_PARKED,
                 max_parked_per_client: int = MAX_PARKED_PER_CLIENT, max_entries: int = MAX_ENTRIES,
                 release_s: float = RELEASE_S, store: Callable[[], RunStore] = run_store,
                 alive: Callable[[str], bool | None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.park_ttl_s, self.stale_s, self.release_s = park_ttl_s, stale_s, release_s
        self.max_parked, self.max_parked_per_client, self.max_entries = max_parked, max_parked_per_client, max_entries
        self.store = store
        # Whether a session still has its connection (None: unknown); the app sets Streamlit's answer.
        self.alive = alive
        self._clock, self._sleep = clock, sleep
        self._entries: dict[str, _Entry] = {}
        self._born: OrderedDict[str, float] = OrderedDict()  # client -> when it first registered a run (LRU)
        self._lock = threading.Lock()
        self._dropped: list[LiveRun] = []  # runs dropped under the lock, released once it is let go
        self._sweeper: threading.Thread | None = None

    def register(self, run: LiveRun, owner: str, *, browser: str | None = None, client: str | None = None) -> str:
        """Add ``run``, shown by session ``owner`` in ``browser``; returns its new token.

        Only ``browser`` can take the run back (:meth:`claim`); without a browser id only the session itself can.
        ``client`` is whom its parked place counts against (by default the browser, else the session).
        """
        token = secrets.token_urlsafe(16)
        with self._locked():
            entry = _Entry(run, owner, self._clock(), browser, client or browser or owner)
            self._entries[token] = entry
            self._born.setdefault(entry.client, entry.seen)
            self._born.move_to_end(entry.client)
            while len(self._born) > 4 * self.max_entries:  # the least recently active clients are forgotten
                self._born.popitem(last=False)
            self._evict_locked()
            self._start_sweeper_locked()
        return token

    def forget(self, token: str) -> None:
        """Drop the entry (its run is replaced by a new one); the run itself is left as it is."""
        with self._locked():
            self._entries.pop(token, None)

    def owns(self, token: str, owner: str) -> bool:
        """Whether ``owner`` still shows the run; also records that it does (a heartbeat)."""
        with self._locked():
            entry = self._entries.get(token)
            if entry is None or entry.owner != owner:
                return False
            entry.seen, entry.parked = self._clock(), None
            return True

    def keep(self, token: str, owner: str, kept: Any) -> None:
        """Session ``owner``, which shows the run, hands ``kept`` on to the page that takes it back after a reload
        (its live sharing: the class link then survives the teacher's reload)."""
        with self._locked():
            entry = self._entries.get(token)
            if entry is not None and entry.owner == owner:
                entry.kept = kept

    def park(self, token: str, owner: str) -> int | None:
        """The owner's connection ended: pause the run and keep it for a reload; returns its step."""
        with self._locked():
            entry = self._entries.get(token)
            if entry is None or entry.owner != owner:
                return None
            entry.parked = self._clock()
            self._evict_locked(entry.client)
            self._start_sweeper_locked()
        with entry.run.lock:
            entry.run.pause()
        return entry.run.step

    def claim(self, token: str, owner: str, browser: str | None = None) -> Claim | None:
        """Session ``owner`` of ``browser`` takes the run with ``token`` (paused), or ``None`` if there is no such
        run for it: a run started in another browser is left alone, training on for its owner.

        A run its old page still shows (a reload that arrived before the old page noticed) is waited for
        briefly, then taken over: it is paused under its lock, so the old page's loop stops after the step in
        progress and sees that it no longer owns the run.
        """
        deadline = self._clock() + CLAIM_WAIT_S
        while True:
            with self._locked():
                self._sweep_locked()
                entry = self._entries.get(token)
                if entry is None or not (entry.owner == owner or (browser is not None and entry.browser == browser)):
                    return None
                if entry.owner == owner:
                    entry.seen = self._clock()
                    return Claim(entry.run, moved=False, parked=entry.parked is not None, kept=entry.kept)
                if entry.parked is not None or self._clock() >= deadline:
                    break
            self._sleep(0.1)
        with entry.run.lock:
            entry.run.pause()
        with self._locked():
            was_parked = entry.parked is not None
            entry.owner, entry.seen, entry.parked = owner, self._clock(), None
        return Claim(entry.run, moved=True, parked=was_parked, kept=entry.kept)

    def latest_parked(self, browser: str | None) -> str | None:
        """The token of ``browser``'s most recently parked run (for a page whose address carries no token, as in
        projector mode), or ``None``."""
        if browser is None:
            return None
        with self._locked():
            self._sweep_locked()
            parked = [(e.parked, t) for t, e in self._entries.items() if e.parked is not None and e.browser == browser]
        return max(parked)[1] if parked else None

    def sweep(self) -> None:
        """Release parked runs nobody came back for, and forget stale entries."""
        with self._locked():
            self._sweep_locked()

    @property
    def state_ttl_s(self) -> float:
        """How long the run store keeps the training state of a run that gave its trainer back: as long as its
        entry may live unseen and then parked."""
        return self.stale_s + self.park_ttl_s

    def settle(self) -> None:
        """What the background thread does: :meth:`sweep`, park the runs whose session is gone, and give back the
        trainers of runs parked for ``release_s`` (outside the registry's lock: each asks its trainer)."""
        with self._locked():
            self._sweep_locked()
            now = self._clock()
            parked = [e for e in self._entries.values() if e.parked is not None]
            stray = [e.run for e in parked if e.run.status == "running" and not e.run.driven()]
            due = [e.run for e in parked if now - e.parked >= self.release_s and e.run.holds_trainer]
        for run in stray:  # "running" with no loop left to train it: it waits, paused, like any parked run
            with run.lock:
                run.pause()
        for run in due:
            with run.lock:
                run.pause()
                try:
                    gave = run.give_back(self.store(), self.state_ttl_s)
                except StoreUnavailable as err:
                    gave = False
                    LOG.warning("a parked run keeps its trainer: %s", err)
            LOG.info("parked run at step %d %s", run.step, "gave its trainer back" if gave else "kept its trainer")


    def __len__(self) -> int:
        return len(self._entries)

    def parked_count(self) -> int:
        """Runs waiting, paused, for their page to come back."""
        with self._locked():
            return sum(1 for e in self._entries.values() if e.parked is not None)

    def _start_sweeper_locked(self) -> None:
        """Settle in the background while any run is entered, so that a closed tab's run is parked, gives its
        trainer back and is released on time even when no page is visited."""
        if self._clock is not time.monotonic or (self._sweeper is not None and self._sweeper.is_alive()):
            return  # tests with a fake clock settle by hand

        def settle_while_entered() -> None:
            while True:
                time.sleep(max(0.25, min(30.0, self.release_s / 4, self.park_ttl_s / 4)))
                try:
                    self.settle()
                except Exception:  # noqa: BLE001 - the sweeper must outlive any one run's failure
                    LOG.exception("parked-run sweep failed")
                with self._locked():
                    if not self._entries:
                        self._sweeper = None
                        return

        self._sweeper = threading.Thread(target=settle_while_entered, name="parked-run-sweeper", daemon=True)
        self._sweeper.start()

    def _sweep_locked(self) -> None:
        """Park the runs whose page is gone (their session closed, or unseen for ``stale_s`` while they hold
        training state), release the parked ones past ``park_ttl_s``, forget the other stale entries."""
        now = self._clock()
        for token, entry in list(self._entries.items()):
            if entry.parked is None and self._page_gone(entry, now):
                entry.parked = now
                LOG.info("a run's page is gone; run parked at step %d (%s)", entry.run.step, entry.run.status)
            if entry.parked is not None and now - entry.parked > self.park_ttl_s:
                self._drop_locked(token, release=True)
            elif entry.parked is None and now - entry.seen > self.stale_s:
                self._drop_locked(token, release=False)

    def _page_gone(self, entry: _Entry, now: float) -> bool:
        """Whether an unparked entry's page is gone while its run holds something worth parking: its session
        closed (a training run only once no loop drives it: its own loop parks it), or it went unseen for
        ``stale_s``."""
        run = entry.run
        # The status first: a run that trains on a thread must not have its tensors read from this one.
        if run.finished or not (run.status in ("running", "paused") or run.holds_trainer
                                or run.training_state_bytes > 0):
            return False
        if now - entry.seen > self.stale_s:
            return True
        if run.status == "running" and run.driven():
            return False
        return self.alive is not None and self.alive(entry.owner) is False

    def _evict_locked(self, parker: str | None = None) -> None:
        """Keep the parked runs within their limits after ``parker``'s run was parked (see the module docstring)."""
        self._sweep_locked()
        by_client: dict[str, list[tuple[float, str]]] = {}
        for token, entry in self._entries.items():
            if entry.parked is not None:
                by_client.setdefault(entry.client, []).append((entry.parked, token))
        for parked in by_client.values():  # a client's own oldest go first ...
            parked.sort()
            while len(parked) > self.max_parked_per_client:
                self._drop_locked(parked.pop(0)[1], release=True)
        born = self._born.get
        while sum(len(p) for p in by_client.values()) > self.max_parked:  # ... then the biggest holder's oldest,
            held = len(by_client.get(parker, ())) if parker is not None else 0  # among those no older than the
            holders = [c for c, p in by_client.items() if p]  # parker, or holding more than it
            candidates = [c for c in holders if parker is None or born(c, 0.0) >= born(parker, 0.0)
                          or len(by_client[c]) > held] or holders
            loser = max(candidates, key=lambda c: (len(by_client[c]), born(c, 0.0)))
            self._drop_locked(by_client[loser].pop(0)[1], release=True)
        by_age = sorted((e.seen, t) for t, e in self._entries.items())
        for _, token in by_age[: max(0, len(by_age) - self.max_entries)]:
            self._drop_locked(token, release=self._entries[token].parked is not None)

    def _drop_locked(self, token: str, *, release: bool) -> None:
        entry = self._entries.pop(token)
        if release:  # after the lock is let go (see _locked)
            self._dropped.append(entry.run)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the registry's lock for the block; then, with the lock let go, release the runs it dropped (each
        tells its trainer to stop and waits for it to exit: no other session waits for that)."""
        try:
            with self._lock:
                yield
        finally:
            with self._lock:
                dropped, self._dropped = self._dropped, []
            for run in dropped:
                with run.lock:
                    run.release("its page was closed and did not come back in time")


REGISTRY = RunRegistry()  # the server's one registry: every browser session of this process shares it
