"""What sessions share about runs, as plain data: a channel's updates, recordings, and the stores' common limits.

:mod:`explorer.runs.store` keeps them (and re-exports every name here); :mod:`explorer.runs.codec` turns them into
bytes for a store outside this process (:mod:`explorer.runs.redis_store`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.i18n import N_
from explorer.i18n.message import Message
from explorer.runs.frame import SampleSet, thin_to
from explorer.runs.pace import WATCHER_TTL_S
from transformer_core.training import Snapshot

__all__ = [
    "CHANNEL_TTL_S",
    "CHECKPOINTS_BYTES",
    "GONE_TTL_S",
    "NOTE_BYTES",
    "PARKED_BYTES",
    "READ_BYTES",
    "READ_LIMITS",
    "RECORDINGS_BYTES",
    "UPDATE_BYTES",
    "WATCHER_TTL_S",
    "DamagedValue",
    "LaneUpdate",
    "ReadLimits",
    "Recording",
    "RunUpdate",
    "StoreUnavailable",
]

CHANNEL_TTL_S = 30 * 60.0  # a channel nobody published to for this long has expired
GONE_TTL_S = 24 * 3600.0  # how long an ended channel's note (why, and its recording) is kept
RECORDINGS_BYTES = 64 * 2**20  # recordings kept in memory at most (default; TE_RECORDINGS_MB changes it)
# Training states of paused runs that gave their trainer back, kept at once (one value at most, in Redis): weights
# always, optimiser state where it fits. A state that does not fit keeps its trainer instead; none is ever evicted.
PARKED_BYTES = 256 * 2**20

# The largest values a store reads back, in encoded bytes; each is checked before the value is read (a recording's
# limit is the store's recordings budget). A value over its limit counts as damaged.
UPDATE_BYTES = 128 * 2**20  # one channel update (sharing a finished run sends its whole history at once)
READ_BYTES = 128 * 2**20  # one read of a channel: later updates wait for the next read (one is always returned)
CHECKPOINTS_BYTES = 256 * 2**20  # the model files offered on a channel (two of the largest models a host allows)
NOTE_BYTES = 8 * 2**10  # an ended channel's note


@dataclass(frozen=True)
class ReadLimits:
    """The limits a store reads values back within (tests lower them)."""

    update_bytes: int = UPDATE_BYTES  # one channel update
    read_bytes: int = READ_BYTES  # one read of a channel
    checkpoints_bytes: int = CHECKPOINTS_BYTES  # a channel's model files


READ_LIMITS = ReadLimits()  # the stores' limits unless told otherwise


class StoreUnavailable(RuntimeError):
    """The shared store cannot be reached (e.g. Redis went away); the message says so in words for the page."""


class DamagedValue(StoreUnavailable):
    """A value in the shared store cannot be read: damaged, oversized, or written by another version of the app.

    Every way a stored value can be bad ends in this one exception (a page shows its message, as for any
    :class:`StoreUnavailable`); a store deletes a damaged recording, model file or note instead of raising.
    """

    @classmethod
    def because(cls, error: Exception) -> DamagedValue:
        """The exception for a value that failed to decode with ``error`` (the codec's ValueError)."""
        return cls(
            Message(
                N_(
                    "The shared run store holds data this server cannot read ({error}); every app server "
                    "should run the same version of the app."
                ),
                {"error": str(error)[:300]},
            )
        )


@dataclass
class LaneUpdate:
    """What is new in one lane since the previous update."""

    history: list[dict[str, float]] = field(default_factory=list)  # new metric rows
    snapshots: list[Snapshot] = field(default_factory=list)  # new attention snapshots
    samples: list[SampleSet] = field(default_factory=list)  # new sample predictions
    kept: list[int] | None = None  # when the owner thinned its snapshots: the steps it keeps

    def merge_into(
        self, history: list[dict[str, float]], snapshots: list[Snapshot], samples: list[SampleSet]
    ) -> list[Snapshot]:
        """Add this news to a lane's ``history`` and ``samples`` (in place) and return its snapshots after it.

        The one way a mirror takes a lane's news, the server's mirror of a trainer and a watcher's of a channel
        alike: rows are appended; snapshots are appended unless one of the same step is held, then thinned to
        :attr:`kept` when the owner thinned its own; a sample set is appended unless the last one held has the
        same step and caption (a mirror may have written that one itself before its trainer started).
        """
        history.extend(self.history)
        known = {s.step for s in snapshots}
        merged = [*snapshots, *(s for s in self.snapshots if s.step not in known)]
        if self.kept is not None:
            merged = thin_to(merged, self.kept)
        for sample_set in self.samples:
            if not samples or (samples[-1].step, samples[-1].caption) != (sample_set.step, sample_set.caption):
                samples.append(sample_set)
        return merged


@dataclass
class RunUpdate:
    """One publication of a channel: the news of every lane and the run's state now.

    ``meta`` comes with the first update only: ``{"task": name, "task_options": {...}, "labels": [...],
    "config": LiveRun.config_dict(), "recording": key or None}``. ``state`` is ``{"status", "message", "step",
    "steps_per_second", "eta_s", "lanes": [{"step", "steps", "done", "last_eval"}], "downloads": bool,
    "replay": bool}``.
    """

    state: dict[str, Any]
    lanes: list[LaneUpdate]
    meta: dict[str, Any] | None = None


@dataclass
class Recording:
    """A finished run kept whole: everything a replay shows, and the trained weights."""

    key: str  # everything that determines the run, hashed (see explorer.runs.recording.recording_key)
    meta: dict[str, Any]  # as in RunUpdate.meta
    state: dict[str, Any]  # the final state, as in RunUpdate.state
    lanes: list[LaneUpdate]  # each lane's whole history, kept snapshots and samples
    timeline: list[tuple[float, int]]  # (seconds of training, step): the recorded pace
    checkpoints: list[bytes]  # one safetensors checkpoint per lane, as the Downloads give it
    # per lane, (step, checkpoint) of the model at recorded evaluation steps, oldest first: a paused replay's model
    models: list[list[tuple[int, bytes]]] = field(default_factory=list)

    def nbytes(self) -> int:
        """Approximate bytes held (arrays, checkpoints and about 100 bytes a metric row)."""
        arrays = sum(
            a.nbytes for lane in self.lanes for s in lane.snapshots for a in (*s.attention.values(), *s.scores.values())
        )
        rows = sum(len(lane.history) for lane in self.lanes) * 100
        models = sum(len(c) for lane in self.models for _, c in lane)
        return arrays + rows + models + sum(len(c) for c in self.checkpoints)
