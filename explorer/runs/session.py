"""One browser session's run and every rule of its life, in plain Python: :class:`RunSession`.

A session shows at most one run. Its page calls the methods named for its buttons — :meth:`~RunSession.start`,
:meth:`~RunSession.pause`, :meth:`~RunSession.resume`, :meth:`~RunSession.step`, :meth:`~RunSession.stop`,
:meth:`~RunSession.reset` — and for what happens to the page: :meth:`~RunSession.leave` (another page opened),
:meth:`~RunSession.park` (its connection ended), :meth:`~RunSession.take_back` (a reload). The rules:

- A new run replaces the old one whole: the old run's training memory is freed (and with it its place), its
  watch channel ends, its ticket leaves the line and its reload token is dropped.
- A run starts when a place is free and nobody waits before it (:mod:`explorer.runs.slots`), else it waits in
  line (:meth:`~RunSession.poll_line`). One client holds at most ``per_client`` places and line entries.
- Settings that were recorded before are replayed (:meth:`~RunSession.replay`): a replay trains nothing and takes
  no place. A run that went its whole way is recorded (:meth:`~RunSession.finish`) unless it trains on a user's
  own data: such a run is never kept in, nor replayed from, the recordings all sessions share.
- A run that trains is entered in the registry under a reload token; only the same browser takes it back. A
  page whose connection ends parks its run, paused, for that reload (the registry parks a paused run whose tab
  closed, and has it give its trainer back to the run store; Resume after the reload starts from there).
- What counts against the client's quota and the server's caps is what holds training state
  (:func:`~explorer.runs.load.holds_training_state`): before refusing, the client's own paused runs, then the
  server's oldest, give their trainers back (:meth:`RunSession.give_back`).
- Sharing live follows the session's runs, but a run on the user's own data is sent without its samples unless
  its owner agreed, for that run, to show them (:meth:`~RunSession.show_samples`); the next run asks again.

The page's coming and going is :class:`~explorer.runs.page_life.PageLife`, sharing live
:class:`~explorer.runs.sharing.SessionSharing`: a session is both. Where the run trains is the
:class:`~explorer.runs.place.TrainingPlace` given (this thread unless told; the served app gives a trainer process
per run). The registry, the line, the store and the limit on runs training at once are given too, so tests build
a session from fakes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from explorer.i18n import N_
from explorer.i18n.message import localized
from explorer.runs.channel import WatchChannel
from explorer.runs.classes import ClassLink
from explorer.runs.clients import Client
from explorer.runs.line import LINE, RunLine
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.load import track
from explorer.runs.page_life import PageLife
from explorer.runs.place import ThisThread, TrainingPlace
from explorer.runs.recording import ReplayRun, find_replay, keep
from explorer.runs.registry import REGISTRY, RunRegistry
from explorer.runs.sharing import SessionSharing
from explorer.runs.slots import PER_CLIENT, QuotaExceeded, take_place
from explorer.runs.store import RunStore, StoreUnavailable, run_store
from transformer_core.tasks.base import Task

__all__ = ["Notice", "RunSession"]

Notice = tuple[str, str]  # (level, text) for the page to show once: level "info", "success" or "error"
LOG = logging.getLogger(__name__)


class RunSession(PageLife, SessionSharing):
    """A browser session's run, its place in line, its reload token, its watch channel and its recordings.

    Args:
        client: who the session is (its session, browser and client ids).
        max_running: how many runs this server trains at once (asked each time: limits may change).
        registry, line, store: the server's run registry, line and run store (a callable: the store is made on
            first use).
        place: where runs train.
        hand_over: called with the run whenever its model should reach the session's other pages.
        per_client: places and line entries one client may hold.
    """

    def __init__(
        self,
        client: Client,
        *,
        max_running: Callable[[], int],
        registry: RunRegistry = REGISTRY,
        line: RunLine = LINE,
        store: Callable[[], RunStore] = run_store,
        place: TrainingPlace | None = None,
        hand_over: Callable[[LiveRun], None] | None = None,
        per_client: int = PER_CLIENT,
    ) -> None:
        self.client = client
        self.max_running, self.registry, self.line, self.store = max_running, registry, line, store
        self.place = place if place is not None else ThisThread()
        self.hand_over = hand_over if hand_over is not None else (lambda run: None)
        self.per_client = per_client
        self.run: LiveRun | None = None
        self.signature: Any = None  # the settings the run was built from
        self.token: str | None = None  # the run's reload token in the registry
        self.dropped: tuple[str, ...] = ()  # tokens this session let go of itself (its address may still name one)
        self.waiting = False  # the run waits in line for a place
        self.moved = False  # another tab of this browser took the run over
        self.real: Any = None  # settings the user chose to train for real rather than replay
        self.replay_speed = 1.0  # how many times faster than recorded a replay plays
        self.notice: Notice | None = None
        self.channel: WatchChannel | None = None  # the run's watch channel while it is shared
        self.sharing = False  # the owner shares the session's runs live
        self.class_link: ClassLink | None = None  # the one link that follows the shared runs (see classes.py)
        self.downloads = False  # watchers may download the model
        self.samples_shown_for: LiveRun | None = None  # the one run on private data whose samples its owner shares
        self.share_query: dict[str, str] | None = None  # the run's settings as a link's query (None: private data)

    # The run and its buttons.

    def prepare(self, task: Task, specs: Sequence[RunSpec], signature: Any, *, force: bool = False) -> LiveRun:
        """Make sure the run matches the settings (``signature``) and return it.

        A run that has not started follows the settings; one that has trained keeps its own until Reset or Start
        after its end (both ``force`` a new run). ``ValueError`` when the settings make no valid model.
        """
        stale = self.run is None or self.signature != signature
        if force or (stale and (self.run is None or self.run.status == "ready")):
            self._replace(self.place.new_run(task, specs, shared=self.sharing), signature)
        return self.run

    def adopt(self, run: LiveRun, signature: Any) -> None:
        """Show ``run``, built elsewhere (a checkpoint's weights loaded into it), as the session's new run."""
        self._replace(run, signature)

    def start(self, task: Task, specs: Sequence[RunSpec], signature: Any) -> None:
        """Start: a new run after a finished one, replayed when recorded, started or put in line."""
        self.prepare(task, specs, signature, force=self.run is not None and self.run.finished)
        self.replay()
        self._run_if_free()

    def train_for_real(self, task: Task, specs: Sequence[RunSpec], signature: Any) -> None:
        """Train the settings now, even though a recording of them could be replayed."""
        self.real = signature
        self.prepare(task, specs, signature, force=True)
        self._run_if_free()

    def pause(self) -> None:
        """Pause the run; a run trained by a remote trainer (``TE_TRAINER=redis``) gives it back at once, its state
        kept in the run store: remote trainers are few and serve every server's runs."""
        if self.run is not None:
            self.run.pause()
            self.hand_over(self.run)
            if getattr(self.place, "remote", False):
                self.give_back(self.run)

    def resume(self) -> None:
        if self.run is not None:
            self._run_if_free()

    def step(self) -> None:
        """One step of a run that is not running (a replay jumps to its next recorded step). A run that now holds
        a trainer counts as a started one does, and is entered in the registry (its tab may close)."""
        if self.run is not None:
            self.run.step_once()
            self.hand_over(self.run)
            if self.run.holds_trainer:
                track(self.run, self.client.key)
                self._register()
            self.finish()

    def stop(self) -> None:
        if self.run is not None:
            self.run.release("stopped by the user")
            self.hand_over(self.run)

    def reset(self, task: Task, specs: Sequence[RunSpec], signature: Any) -> None:
        """Fresh weights from the seed: a new run of the current settings, ready."""
        self.prepare(task, specs, signature, force=True)

    def replay(self) -> bool:
        """Show a recording of the ready run's settings instead of training them, when the store keeps one (and
        the user did not ask to train them for real); returns whether the run is now a replay."""
        run = self.run
        if run is None or isinstance(run, ReplayRun) or run.status != "ready" or self.real == self.signature:
            return False
        try:
            played = find_replay(run, self.store(), speed=self.replay_speed)
        except StoreUnavailable as err:
            LOG.warning("no replay: %s", err)
            return False
        if played is None:
            return False
        self.run = played  # the run built for these settings never trained: nothing to free
        return True

    def finish(self) -> None:
        """A run over its whole way is recorded for replays (if it may be) and frees its training memory."""
        run = self.run
        if run is None or not run.finished:
            return
        try:
            recording = keep(run, self.store())  # None for a replay, a stopped run or a user's own data
        except StoreUnavailable as err:
            LOG.warning("run not recorded: %s", err)
            recording = None
        if recording is not None:
            LOG.info("run recorded for replays (%d steps, %.1f MB)", run.step, recording.nbytes() / 2**20)
        if run.training_state_bytes:
            run.release("finished")

    # Places and the line.

    def poll_line(self) -> int | None:
        """While the run waits: renew its ticket and start it when its turn comes; returns its place in line, or
        ``None`` once it started (or no longer waits)."""
        if not self.waiting or self.run is None:
            return None
        self._run_if_free()
        return self.line.place(self.client.session) if self.waiting else None

    def leave_line(self) -> None:
        """Give up the place in line (the page was left, or the user chose to)."""
        if self.waiting:
            self.waiting = False
            self.line.leave(self.client.session)

    def _run_if_free(self) -> bool:
        """Start or resume the run when a place is free, else wait in line (a replay needs no place)."""
        run = self.run
        if isinstance(run, ReplayRun):
            run.start()
            return True
        try:
            place = take_place(
                run,
                self.max_running(),
                self.client.session,
                self.client.key,
                line=self.line,
                per_client=self.per_client,
                give_back=self.give_back,
            )
        except QuotaExceeded as err:
            self.waiting = False
            self.notice = ("error", localized(err))
            return False
        self.waiting = place is not None
        if place is None:
            self._register()
        return place is None

    def give_back(self, run: LiveRun) -> bool:
        """Have a paused ``run`` (this session's or another's) give its trainer back to make room; its state waits
        in the run store as long as a run may wait unseen and parked. Returns whether it did."""
        with run.lock:
            try:
                return run.give_back(self.store(), self.registry.state_ttl_s)
            except StoreUnavailable as err:
                LOG.warning("a paused run keeps its trainer: %s", err)
                return False

    def _replace(self, new: LiveRun, signature: Any) -> None:
        old = self.run
        if old is not None and old.training_state_bytes:
            old.release("replaced by a new run")  # frees its place among the runs training and its memory
        self.end_channel(N_("Its owner started a new run."))
        self.leave_line()
        self._forget_token()
        self.run, self.signature, self.token, self.moved = new, signature, None, False

    # The live loop.

    def train_slice(self, budget_s: float, interrupted: Callable[[], bool] | None = None) -> str | None:
        """Train for about ``budget_s`` seconds; returns why the live loop must end — "moved" (another tab took the
        run), or the run's status once it no longer runs — else ``None``."""
        if not self.still_mine():
            return "moved"
        if self.run is None or self.run.status != "running":
            return self.run.status if self.run is not None else "gone"
        self.run.advance(budget_s, interrupted=interrupted)
        return None

    def write_samples(
        self,
        sampling: dict[str, Any],
        caption: str,
        count: int,
        seed: int,
        interrupted: Callable[[], bool] | None = None,
    ) -> bool:
        """The sample predictions of each lane after a new evaluation (``sampling``: the task's options)."""
        if self.run is None:
            return False
        return self.run.update_samples(sampling, caption, count, seed, interrupted=interrupted)

    def loop_ended(self, why: str) -> None:
        """The live loop stopped (``why``: what :meth:`train_slice` said, "error", ...): hand the model over,
        record a finished run, and let go of a run another tab took over."""
        run = self.run
        if run is not None:
            self.hand_over(run)
            self.finish()
        self.broadcast(force=True)
        if why == "moved":
            self.moved, self.run, self.token = True, None, None
