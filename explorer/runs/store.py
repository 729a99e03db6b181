"""One store for what sessions share about runs: live channels (watch links), model files and recordings.

A **channel** is a run shared live under an unguessable id: its owner publishes :class:`RunUpdate` s (what is new
since the last one, and where training stands), and watchers read the updates they have not seen yet. A channel
that is not published to for :data:`CHANNEL_TTL_S` expires; one its owner ended leaves a short note (:meth:`gone`)
so that its link can say what happened. A **recording** is a finished run kept whole, so that the same settings
replay it instead of training again (:mod:`explorer.runs.recording`); recordings are bounded in bytes and the least
recently used go first.

Two implementations, one interface (:class:`RunStore`): :class:`MemoryStore`, in this process (the default,
nothing to install), and ``explorer.runs.redis_store.RedisStore`` when ``TE_REDIS_URL`` is set, so that watch links
and replays work across several app servers. :func:`run_store` returns the process's store. What they keep, and
their limits, are defined in :mod:`explorer.runs.updates` and importable from here.

A **parked state** is the training state of a paused run that gave its trainer process back
(:mod:`explorer.runs.training_state`), kept under an unguessable key until the run resumes or its parking time
ends; the states kept at once are bounded in bytes, and a state that does not fit is refused, never another's
evicted.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from explorer.runs import codec as run_codec
from explorer.runs.reading import check_cursor, decoded_recording, decoded_updates, encoded_update, page_length
from explorer.runs.schema import check_pointer, check_watcher_id
from explorer.runs.updates import (
    CHANNEL_TTL_S,
    GONE_TTL_S,
    PARKED_BYTES,
    READ_LIMITS,
    RECORDINGS_BYTES,
    WATCHER_TTL_S,
    DamagedValue,
    LaneUpdate,
    ReadLimits,
    Recording,
    RunUpdate,
    StoreUnavailable,
)

__all__ = ["CHANNEL_TTL_S", "GONE_TTL_S", "DamagedValue", "LaneUpdate", "MemoryStore", "Recording", "RunStore",
           "RunUpdate", "StoreUnavailable", "run_store"]

REDIS_ENV = "TE_REDIS_URL"


class RunStore(Protocol):
    """What the app asks of a store; :class:`MemoryStore` and ``RedisStore`` answer the same way.

    A store that cannot be reached raises :class:`StoreUnavailable` from any method; pages show its message and
    go on without sharing.
    """

    def publish(self, run_id: str, update: RunUpdate) -> None:
        """Append ``update`` to channel ``run_id`` (the first one creates it) and renew its expiry."""

    def read(self, run_id: str, cursor: int) -> tuple[list[RunUpdate], int] | None:
        """The updates after the first ``cursor`` ones and the new cursor; ``None`` if there is no such channel.

        The first update read (cursor 0) carries the channel's ``meta``. One read returns at most
        :data:`~explorer.runs.updates.READ_BYTES` of updates (the rest come with the next); an update that cannot
        be read raises :class:`DamagedValue`.
        """

    def end(self, run_id: str, reason: str, recording: str | None = None) -> None:
        """Close channel ``run_id``: its link now says ``reason`` and offers ``recording`` (a recording key)."""

    def gone(self, run_id: str) -> dict[str, Any] | None:
        """``{"reason", "recording"}`` of a channel that was ended, or ``None``."""

    def put_checkpoints(self, run_id: str, step: int, checkpoints: list[bytes]) -> None:
        """Offer the owner's model files to the channel's watchers (the owner allowed downloads)."""

    def checkpoints(self, run_id: str) -> tuple[int, list[bytes]] | None:
        """(step, one checkpoint per lane) offered by the owner, or ``None``."""

    def touch_watcher(self, run_id: str, watcher_id: str) -> None:
        """Record that ``watcher_id`` is watching channel ``run_id`` now."""

    def watcher_count(self, run_id: str) -> int:
        """Watchers who read channel ``run_id`` within the last :data:`WATCHER_TTL_S` seconds."""

    def point(self, name: str, target: str) -> None:
        """Let ``name`` (e.g. a class link's id) name ``target`` (e.g. a channel id) for :data:`CHANNEL_TTL_S`."""

    def pointer(self, name: str) -> str | None:
        """What ``name`` names now, or ``None`` (never set, dropped or expired)."""

    def drop_pointer(self, name: str) -> None:
        """Forget ``name``."""

    def put_parked(self, key: str, value: bytes, ttl_s: float) -> bool:
        """Keep a paused run's training state for ``ttl_s`` seconds; False (nothing kept) when it does not fit the
        budget for parked states."""

    def parked(self, key: str) -> bytes | None:
        """The training state kept under ``key``, or ``None`` (never kept, taken back or expired)."""

    def drop_parked(self, key: str) -> None:
        """Forget the training state under ``key``."""

    def save_recording(self, recording: Recording) -> None:
        """Keep ``recording`` (the least recently used ones go when the store is full)."""

    def load_recording(self, key: str) -> Recording | None:
        """The recording with ``key``, or ``None``."""

    def has_recording(self, key: str) -> bool:
        """Whether a recording with ``key`` is kept (cheap; does not count as a use)."""

    def drop_recording(self, key: str) -> None:
        """Forget the recording with ``key`` (it does not fit the run it was kept for)."""


@dataclass
class _Channel:
    updates: list[bytes]  # each encoded by the codec, as Redis keeps them
    touched: float
    watchers: dict[str, float] = field(default_factory=dict)
    checkpoints: bytes | None = None


class MemoryStore:
    """The store in this process's memory: nothing to install; shared by every session of one server.

    It keeps values as the codec's bytes, as Redis does, so that every value read back is checked the same way
    (its size first, with ``len``) and no session holds another's objects.
    """

    def __init__(self, *, recordings_bytes: int = RECORDINGS_BYTES, clock: Callable[[], float] = time.monotonic,
                 channel_ttl_s: float = CHANNEL_TTL_S, limits: ReadLimits = READ_LIMITS,
                 parked_bytes: int = PARKED_BYTES) -> None:
        self.recordings_bytes, self.channel_ttl_s, self.limits = recordings_bytes, channel_ttl_s, limits
        self.parked_bytes = parked_bytes
        self._parked: dict[str, tuple[float, bytes]] = {}  # key -> (when it expires, the state)
        self._clock = clock
        self._channels: dict[str, _Channel] = {}
        self._gone: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._recordings: OrderedDict[str, bytes] = OrderedDict()
        self._pointers: dict[str, tuple[str, float]] = {}  # name -> (target, when set)
        self._lock = threading.Lock()

    def point(self, name: str, target: str) -> None:
        target = check_pointer(target)
        with self._lock:
            self._pointers[name] = (target, self._clock())

    def pointer(self, name: str) -> str | None:
        with self._lock:
            self._expire_locked()
            kept = self._pointers.get(name)
        return kept[0] if kept is not None else None

    def drop_pointer(self, name: str) -> None:
        with self._lock:
            self._pointers.pop(name, None)

    def publish(self, run_id: str, update: RunUpdate) -> None:
        value = encoded_update(update, self.limits.update_bytes)
        with self._lock:
            self._expire_locked()
            channel = self._channels.get(run_id)
            if channel is None:
                channel = self._channels[run_id] = _Channel([], self._clock())
            channel.updates.append(value)
            channel.touched = self._clock()

    def read(self, run_id: str, cursor: int) -> tuple[list[RunUpdate], int] | None:
        with self._lock:
            self._expire_locked()
            channel = self._channels.get(run_id)
            if channel is None:
                return None
            values = channel.updates[check_cursor(cursor):]
            length = len(channel.updates)
        sizes = [len(v) for v in values]  # sizes first: len() of the kept bytes
        values = values[:page_length(sizes, self.limits.update_bytes, self.limits.read_bytes)]
        return decoded_updates(values, cursor, length)

    def end(self, run_id: str, reason: str, recording: str | None = None) -> None:
        note = run_codec.encode_note(reason, recording)
        with self._lock:
            self._channels.pop(run_id, None)
            self._gone[run_id] = (self._clock(), note)
            while len(self._gone) > 10_000:
                self._gone.popitem(last=False)

    def gone(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            self._expire_locked()
            entry = self._gone.get(run_id)
        if entry is None:
            return None
        try:
            return run_codec.decode_note(entry[1])
        except ValueError:
            with self._lock:
                self._gone.pop(run_id, None)
            return None

    def put_checkpoints(self, run_id: str, step: int, checkpoints: list[bytes]) -> None:
        value = run_codec.encode_checkpoints(step, checkpoints)
        with self._lock:
            if (channel := self._channels.get(run_id)) is not None:
                channel.checkpoints = value

    def checkpoints(self, run_id: str) -> tuple[int, list[bytes]] | None:
        with self._lock:
            channel = self._channels.get(run_id)
            value = channel.checkpoints if channel is not None else None
        if value is None:
            return None
        try:
            return run_codec.decode_checkpoints(value, limit=self.limits.checkpoints_bytes)
        except ValueError:
            with self._lock:
                if channel.checkpoints is value:
                    channel.checkpoints = None
            return None

    def touch_watcher(self, run_id: str, watcher_id: str) -> None:
        check_watcher_id(watcher_id)
        with self._lock:
            if (channel := self._channels.get(run_id)) is not None:
                channel.watchers[watcher_id] = self._clock()

    def watcher_count(self, run_id: str) -> int:
        with self._lock:
            channel = self._channels.get(run_id)
            if channel is None:
                return 0
            now = self._clock()
            channel.watchers = {w: t for w, t in channel.watchers.items() if now - t < WATCHER_TTL_S}
            return len(channel.watchers)

    def put_parked(self, key: str, value: bytes, ttl_s: float) -> bool:
        with self._lock:
            self._expire_locked()
            held = sum(len(v) for k, (_, v) in self._parked.items() if k != key)
            if held + len(value) > self.parked_bytes:
                return False
            self._parked[key] = (self._clock() + ttl_s, value)
            return True

    def parked(self, key: str) -> bytes | None:
        with self._lock:
            self._expire_locked()
            kept = self._parked.get(key)
        return kept[1] if kept is not None else None

    def drop_parked(self, key: str) -> None:
        with self._lock:
            self._parked.pop(key, None)

    def save_recording(self, recording: Recording) -> None:
        value = run_codec.encode_recording(recording)
        if len(value) > self.recordings_bytes:
            return  # larger than the whole budget: keeping it would evict everything else
        with self._lock:
            self._recordings.pop(recording.key, None)
            self._recordings[recording.key] = value
            while sum(len(v) for v in self._recordings.values()) > self.recordings_bytes:
                self._recordings.popitem(last=False)

    def load_recording(self, key: str) -> Recording | None:
        with self._lock:
            value = self._recordings.get(key)
            if value is None:
                return None
            self._recordings.move_to_end(key)
        recording = decoded_recording(value, key, self.recordings_bytes)
        if recording is None:
            self.drop_recording(key)
        return recording

    def has_recording(self, key: str) -> bool:
        with self._lock:
            return key in self._recordings

    def drop_recording(self, key: str) -> None:
        with self._lock:
            self._recordings.pop(key, None)

    def _expire_locked(self) -> None:
        now = self._clock()
        for run_id in [r for r, c in self._channels.items() if now - c.touched > self.channel_ttl_s]:
            del self._channels[run_id]
        for name in [n for n, (_, at) in self._pointers.items() if now - at > self.channel_ttl_s]:
            del self._pointers[name]
        for key in [k for k, (until, _) in self._parked.items() if now > until]:
            del self._parked[key]
        while self._gone and now - next(iter(self._gone.values()))[0] > GONE_TTL_S:
            self._gone.popitem(last=False)


_STORE: RunStore | None = None
_STORE_LOCK = threading.Lock()


def run_store() -> RunStore:
    """The process's store: Redis at ``TE_REDIS_URL`` when set, else in memory (made on first use)."""
    global _STORE
    with _STORE_LOCK:
        if _STORE is None:
            url = os.environ.get(REDIS_ENV, "").strip()
            mb = os.environ.get("TE_RECORDINGS_MB", "").strip()
            budget = int(float(mb) * 2**20) if mb else RECORDINGS_BYTES
            if url:
                from explorer.runs.redis_store import RedisStore  # only a server configured for Redis needs it

                _STORE = RedisStore(url, recordings_bytes=budget)
            else:
                _STORE = MemoryStore(recordings_bytes=budget)
        return _STORE
