"""Watch a run live from other devices: its owner publishes it to a channel, watchers mirror the channel.

The owner's page makes a :class:`Publisher` when the user shares the run and calls :meth:`Publisher.publish`
after each training slice: only what is new since the last publication is sent (rows, snapshots and samples),
with where training stands. A watcher's page keeps a :class:`WatchedRun`, which reads the updates it has not seen
yet (:meth:`WatchedRun.sync`) and gives a :class:`~explorer.runs.frame.RunFrame` that the live view draws exactly
as the owner's. Watchers only read: nothing in a channel lets them change, pause or download a run, and the
owner's model files reach the store only when the owner allows downloads.

Channel ids come from :func:`secrets.token_urlsafe` (128 bits): a link cannot be guessed, and the store has no
way to list channels. Watcher ids are random too (:func:`new_watcher_id`, one per browser session), never a
session's own id: whoever can read the store learns nothing that reaches a session.

What a watcher reads is data from elsewhere: the store checks each update (:mod:`explorer.runs.reading`), and
:class:`WatchedRun` checks that the updates agree with each other and that the task rebuilds from its options;
anything wrong raises :class:`~explorer.runs.updates.DamagedValue`, which a page shows as it shows a store that
cannot be reached.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from explorer.runs.frame import LaneFrame, RunFrame, SampleSet
from explorer.runs.pace import PUBLISH_INTERVAL_S
from explorer.runs.private_text import placeholder_task
from explorer.runs.store import CHANNEL_TTL_S, DamagedValue, LaneUpdate, RunStore, RunUpdate
from transformer_core.tasks import get_task
from transformer_core.tasks.base import Task
from transformer_core.training import Snapshot

__all__ = ["PUBLISH_INTERVAL_S", "Publisher", "WatchedRun", "new_channel_id", "new_watcher_id", "state_of"]


def new_channel_id() -> str:
    """An unguessable channel id (22 URL-safe characters)."""
    return secrets.token_urlsafe(16)


def new_watcher_id() -> str:
    """A random watcher id (22 URL-safe characters): keep one per browser session, never its session id."""
    return secrets.token_urlsafe(16)


def state_of(frame: RunFrame, **extra: Any) -> dict[str, Any]:
    """Where a run stands, as the plain data a channel carries (see :class:`~explorer.runs.store.RunUpdate`)."""
    lanes = [{"step": lane.step, "steps": lane.steps, "done": lane.done,
              "last_eval": dict(lane.last_eval) if lane.last_eval is not None else None} for lane in frame.lanes]
    return {"status": frame.status, "message": frame.message, "step": frame.step,
            "steps_per_second": frame.steps_per_second, "eta_s": frame.eta_s, "lanes": lanes, **extra}


class Publisher:
    """Sends a run's news to channel :attr:`run_id` of ``store``; one per shared run.

    A trainer process makes one without a store: it takes each :meth:`news` itself and sends it down its pipe.
    """

    def __init__(self, store: RunStore | None, run_id: str | None = None) -> None:
        self.store = store
        self.run_id = run_id or new_channel_id()
        self._sent: list[tuple[int, set[int], int, tuple[int, ...]]] | None = None  # per lane: rows, steps, samples
        self._last: tuple | None = None
        self._at = 0.0

    def publish(self, frame: RunFrame, meta: dict[str, Any], *, force: bool = False, **state: Any) -> bool:
        """Publish what changed in ``frame`` since the last call; returns whether anything was sent.

        ``meta`` goes with the first publication only. While the run trains, publications come at most every
        :data:`~explorer.runs.pace.PUBLISH_INTERVAL_S` seconds unless ``force``; ``state`` adds to the state
        (e.g. ``downloads``).
        """
        update = self.news(frame, meta, force=force, **state)
        if update is None:
            return False
        self.store.publish(self.run_id, update)
        return True

    def news(self, frame: RunFrame, meta: dict[str, Any] | None, *, force: bool = False,
             **state: Any) -> RunUpdate | None:
        """What changed in ``frame`` since the last call, as one update, or ``None`` when nothing is due (see
        :meth:`publish`); the caller sends it on."""
        now = time.monotonic()
        news = (frame.status, frame.step, frame.snapshot_count(), tuple(len(lane.samples) for lane in frame.lanes),
                tuple(sorted(state.items())))
        if not force and (news == self._last or (frame.status == "running" and now - self._at < PUBLISH_INTERVAL_S)):
            return None
        stale = self._sent is not None and self.store is not None and now - self._at > CHANNEL_TTL_S / 2
        if stale and self.store.read(self.run_id, 2**31) is None:
            self._sent = None  # the channel expired while the run stood still: start it again, whole
        first = self._sent is None
        if first:
            self._sent = [(0, set(), 0, ()) for _ in frame.lanes]
        lanes = [self._lane_news(i, lane) for i, lane in enumerate(frame.lanes)]
        self._last, self._at = news, now
        return RunUpdate(state_of(frame, **state), lanes, dict(meta) if first and meta is not None else None)

    def _lane_news(self, i: int, lane: LaneFrame) -> LaneUpdate:
        rows, steps, samples, held = self._sent[i]
        kept_steps = tuple(s.step for s in lane.snapshots)
        new_snaps = [s for s in lane.snapshots if s.step not in steps]
        thinned = any(step not in kept_steps for step in held)  # the trainer thinned its snapshots since
        update = LaneUpdate(history=[dict(r) for r in lane.history[rows:]], snapshots=new_snaps,
                            samples=list(lane.samples[samples:]), kept=list(kept_steps) if thinned else None)
        self._sent[i] = (len(lane.history), steps | {s.step for s in new_snaps}, len(lane.samples), kept_steps)
        return update

    def end(self, reason: str, recording: str | None = None) -> None:
        """Close the channel: its link now says ``reason`` and offers ``recording`` (a recording key)."""
        self.store.end(self.run_id, reason, recording)


class WatchedRun:
    """A watcher's mirror of channel ``run_id``: call :meth:`sync`, then draw :meth:`frame`.

    ``watcher_id`` counts this watcher among the channel's (:func:`new_watcher_id`; a new one when not given).
    """

    def __init__(self, store: RunStore, run_id: str, watcher_id: str | None = None) -> None:
        self.store, self.run_id, self.watcher_id = store, run_id, watcher_id or new_watcher_id()
        self.meta: dict[str, Any] | None = None
        self.state: dict[str, Any] = {}
        self.history: list[list[dict[str, float]]] = []
        self.snapshots: list[list[Snapshot]] = []
        self.samples: list[list[SampleSet]] = []
        self._cursor = 0
        self._task: Task | None = None
        self._placeholder = False  # whether _task is the placeholder-text one
        self._news_at = time.monotonic()  # when the last update arrived (see quiet_s)

    def sync(self) -> bool:
        """Read what is new; returns False when the channel has ended or expired (see :meth:`gone`)."""
        read = self.store.read(self.run_id, self._cursor)
        if read is None:
            return False
        updates, end = read
        for update in updates:
            self._apply(update)
            self._cursor += 1  # past what was applied only: a damaged update is read (and reported) again
            self._news_at = time.monotonic()
        self._cursor = end
        self.store.touch_watcher(self.run_id, self.watcher_id)
        return self.meta is not None

    def _apply(self, update: RunUpdate) -> None:
        """Add ``update``; :class:`DamagedValue` when it does not fit the channel (read and checked by the store)."""
        if update.meta is not None and self.meta is None:
            try:
                task = get_task(update.meta["task"], **update.meta["task_options"])
            except ValueError as err:  # options each in bounds, but not together (e.g. min_len > seq_len)
                raise DamagedValue.because(ValueError(f"shared run: its task cannot be rebuilt ({err})")) from err
            self.meta, self._task = update.meta, task
            lanes = len(update.lanes)
            self.history, self.snapshots, self.samples = ([[] for _ in range(lanes)] for _ in range(3))
        if self.meta is None:
            raise DamagedValue.because(ValueError("shared run: its first update does not describe the run"))
        if len(update.lanes) != len(self.history):
            raise DamagedValue.because(ValueError(f"shared run: an update of {len(update.lanes)} lanes in a run of "
                                                  f"{len(self.history)}"))
        self.state = update.state
        for i, lane in enumerate(update.lanes):
            self.snapshots[i] = lane.merge_into(self.history[i], self.snapshots[i], self.samples[i])

    def quiet_s(self) -> float:
        """Seconds since the channel last brought news (a run that trains sends some every fraction of a second)."""
        return time.monotonic() - self._news_at

    def gone(self) -> dict[str, Any] | None:
        """Why the channel ended and its recording key (``{"reason", "recording"}``), if its owner ended it."""
        return self.store.gone(self.run_id)

    @property
    def task(self) -> Task:
        """The watched run's task, rebuilt from its name and options (over a placeholder text while the run's
        owner keeps its own text private: see :mod:`explorer.runs.private_text`)."""
        private = bool(self.state.get("private_text"))
        if self._task is None or self._placeholder != private:
            rebuild = placeholder_task if private else (lambda name, options: get_task(name, **options))
            self._task, self._placeholder = rebuild(self.meta["task"], self.meta["task_options"]), private
        return self._task

    def watchers(self) -> int:
        """How many are watching this channel now."""
        return self.store.watcher_count(self.run_id)

    def frame(self) -> RunFrame:
        """The watched run as its owner's page shows it (as of the last :meth:`sync`)."""
        state = self.state
        lanes = tuple(LaneFrame(label, self.history[i], self.snapshots[i], self.samples[i], info["last_eval"],
                                info["step"], info["steps"], info["done"])
                      for i, (label, info) in enumerate(zip(self.meta["labels"], state["lanes"], strict=True)))
        return RunFrame(self.task, lanes, state["status"], state.get("message"), state.get("steps_per_second", 0.0),
                        state.get("eta_s"), extra={"replay": bool(state.get("replay")), "watched": True,
                                                   "private_text": bool(state.get("private_text"))})
