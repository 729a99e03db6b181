"""A session's run shared live: its watch channel in the run store, and the model files offered to watchers.

A :class:`WatchChannel` belongs to one run: a new run of the session gets a new channel and the old one is ended,
so its link says why (and offers the run's recording when it has one). :meth:`WatchChannel.send` publishes what
changed since the last call (:class:`~explorer.runs.watch.Publisher`) and, when the owner allows downloads, the
model files whenever the run pauses or ends. A run on a user's own text is sent redacted
(:mod:`explorer.runs.private_text`) unless its owner agreed to show watchers its samples.
"""

from __future__ import annotations

from typing import Any

from explorer.runs.live import LiveRun
from explorer.runs.private_text import redact
from explorer.runs.recording import ReplayRun, checkpoint_bytes, recording_key, recording_meta
from explorer.runs.store import RunStore
from explorer.runs.watch import Publisher

__all__ = ["WatchChannel"]


class WatchChannel:
    """The channel of ``run`` in ``store`` (see the module docstring); every method may raise ``StoreUnavailable``."""

    def __init__(self, store: RunStore, run: LiveRun) -> None:
        self.run = run
        self.publisher = Publisher(store)
        self._offered: int | None = None  # the step whose model files watchers were offered last

    @property
    def run_id(self) -> str:
        """The channel's id: the ``?watch=`` of its link."""
        return self.publisher.run_id

    def send(self, *, query: dict[str, Any] | None, downloads: bool, private: bool = False,
             force: bool = False) -> None:
        """Publish the run's news; ``query`` lets watchers open the same settings, ``downloads`` offers its model,
        ``private`` keeps every sample (every line of the user's text) out of what is sent."""
        run = self.run
        key = recording_key(run) if run.recordable else None
        meta = {**recording_meta(run, key), "query": query}
        frame = redact(run.frame()) if private else run.frame()
        self.publisher.publish(frame, meta, force=force, downloads=downloads, replay=isinstance(run, ReplayRun),
                               private_text=private)
        if downloads and run.status != "running" and run.trainers[0].step and self._offered != run.step:
            files = [checkpoint_bytes(run, i) for i in range(len(run.trainers))]
            self.publisher.store.put_checkpoints(self.run_id, run.step, files)
            self._offered = run.step

    def watchers(self) -> int:
        """Devices that showed the channel in the last few seconds."""
        return self.publisher.store.watcher_count(self.run_id)

    def end(self, reason: str) -> None:
        """Close the channel: its link says ``reason`` and offers the run's recording when it was recorded."""
        run = self.run
        self.publisher.end(reason, recording_key(run) if run.recordable and run.finished else None)
