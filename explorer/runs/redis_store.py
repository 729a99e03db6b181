"""The run store in Redis, so that watch links and replays work across several app servers (``TE_REDIS_URL``).

:class:`RedisStore` answers every :class:`~explorer.runs.store.RunStore` method as
:class:`~explorer.runs.store.MemoryStore` does, with the same expiry rules. Its keys, all under one prefix
(``te:`` by default):

- ``te:ch:<run>`` a channel: the list of its encoded updates (RPUSH to publish, LRANGE from the cursor to read).
  Each publish renews its expiry (:data:`~explorer.runs.store.CHANNEL_TTL_S`) and that of the next two keys.
- ``te:ck:<run>`` the model files its owner offers; ``te:w:<run>`` its watchers, a sorted set of watcher id by the
  time they last read (wall clock, seconds).
- ``te:ptr:<name>`` what a name points to (a class link's channel, a class code's link), renewed by its owner.
- ``te:gone:<run>`` the note an ended channel leaves, as JSON, kept :data:`~explorer.runs.store.GONE_TTL_S`.
- ``te:park:<key>`` a paused run's training state (:mod:`explorer.runs.training_state`), kept for its parking
  time; one value is at most ``parked_bytes`` (Redis's own ``maxmemory`` bounds them all, with their expiry).
- ``te:rec:<key>`` a recording; ``te:rec-used`` (recording key by last use, from the counter ``te:rec-clock``) and
  ``te:rec-size`` (bytes per recording) let a save evict the least recently used until the total fits the budget.

Values are written by :mod:`explorer.runs.codec` (JSON and raw arrays, never pickles). Steps that read and write
several keys run as Lua scripts (:mod:`explorer.runs.redis_scripts`), which Redis runs atomically, so servers sharing
one Redis never interleave them.

Reading back (:mod:`explorer.runs.reading`): a value's size is checked inside Redis (``STRLEN``, or the length of
each list item in a script) before it is sent, against the limits in :mod:`explorer.runs.updates` (a recording's
is the store's ``recordings_bytes``), and a key of the wrong kind counts as damaged. A damaged recording, model
file or note is deleted (a recording with its size and use entries) and reads as missing; a damaged channel update
raises :class:`~explorer.runs.updates.DamagedValue`.

Failures: every method raises :class:`~explorer.runs.store.StoreUnavailable`, with a message a page can show (never
the address or its password: :mod:`explorer.runs.redis_url`), when Redis cannot be reached or refuses a command;
connecting and reading time out after a second or two, and after a connection failure the store answers at once
with the same exception for ``retry_after_s`` seconds, so a page never hangs on a Redis that is down. The client,
its timeouts and those messages are in :mod:`explorer.runs.redis_connection`, which imports the ``redis`` package
only when a :class:`RedisStore` is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from explorer.i18n.message import Message
from explorer.runs import codec as run_codec
from explorer.runs.reading import check_cursor, decoded_recording, decoded_updates, encoded_update, too_large
from explorer.runs.redis_connection import DOWN, REFUSED, RETRY_AFTER_S, redis_client
from explorer.runs.redis_scripts import DROP, GET_BOUNDED, IF_CHANNEL, LOAD, READ, SAVE
from explorer.runs.redis_url import key_prefix, redact
from explorer.runs.schema import ID_CHARS, check_pointer, check_watcher_id
from explorer.runs.updates import (
    CHANNEL_TTL_S,
    GONE_TTL_S,
    NOTE_BYTES,
    PARKED_BYTES,
    READ_LIMITS,
    RECORDINGS_BYTES,
    WATCHER_TTL_S,
    DamagedValue,
    ReadLimits,
    Recording,
    RunUpdate,
    StoreUnavailable,
)

__all__ = ["RedisStore"]


class RedisStore:
    """The run store in Redis at ``url`` (e.g. ``redis://redis:6379/0``); see the module docstring.

    Args:
        url: the Redis address, as ``redis-py`` reads it (``redis://``, ``rediss://`` or ``unix://``).
        prefix: what every key starts with (by default ``TE_REDIS_PREFIX``, see
            :func:`~explorer.runs.redis_url.key_prefix`); servers that share runs use the same one.
        recordings_bytes: the recordings' total size at most, in encoded bytes; the least recently used go first.
        channel_ttl_s: a channel nobody published to for this long expires.
        clock: wall-clock seconds, for the watchers' last reads (shared by every server, unlike a monotonic clock).
        retry_after_s: after a connection failure, how long calls fail at once before trying Redis again.
        limits: the largest values read back (a recording's is ``recordings_bytes``).
        parked_bytes: the largest training state of a paused run kept.

    Every method raises :class:`StoreUnavailable` when Redis does not answer or refuses, and, saying why, when the
    ``redis`` package is missing or ``url`` is not a Redis address: a misconfigured server still serves every page.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str | None = None,
        recordings_bytes: int = RECORDINGS_BYTES,
        channel_ttl_s: float = CHANNEL_TTL_S,
        clock: Callable[[], float] = time.time,
        retry_after_s: float = RETRY_AFTER_S,
        limits: ReadLimits = READ_LIMITS,
        parked_bytes: int = PARKED_BYTES,
    ) -> None:
        wrong_prefix = None
        if prefix is None:
            try:
                prefix = key_prefix()
            except ValueError as err:  # said by every call, as a wrong address is
                prefix, wrong_prefix = "te:", str(err)
        self.prefix, self.recordings_bytes, self.channel_ttl_s = prefix, recordings_bytes, channel_ttl_s
        self.parked_bytes = parked_bytes
        self.limits = limits
        self.retry_after_s = retry_after_s
        self._clock = clock
        self._down_until = 0.0
        self._broken: str | None = None  # why this store cannot work at all (its configuration), told by every call
        self._url = url  # only to take its secrets out of messages
        try:
            self._redis, self._down_errors, self._errors = redis_client(url)
        except StoreUnavailable as err:
            self._broken, self._redis = redact(str(err), url), None
            return
        if wrong_prefix is not None:
            self._broken, self._redis = wrong_prefix, None
            return
        self._save, self._load = self._redis.register_script(SAVE), self._redis.register_script(LOAD)
        self._if_channel = self._redis.register_script(IF_CHANNEL)
        self._drop, self._read = self._redis.register_script(DROP), self._redis.register_script(READ)
        self._get_bounded = self._redis.register_script(GET_BOUNDED)

    def publish(self, run_id: str, update: RunUpdate) -> None:
        value, ttl_ms = encoded_update(update, self.limits.update_bytes), self._ttl_ms()
        with self._reach():
            pipe = self._redis.pipeline(transaction=True)
            pipe.rpush(self._key("ch", run_id), value)
            for kind in ("ch", "ck", "w"):
                pipe.pexpire(self._key(kind, run_id), ttl_ms)
            pipe.execute()

    def read(self, run_id: str, cursor: int) -> tuple[list[RunUpdate], int] | None:
        with self._reach():
            length, size, values = self._read(
                keys=[self._key("ch", run_id)],
                args=[check_cursor(cursor), self.limits.update_bytes, self.limits.read_bytes],
            )
        if length == 0:
            return None
        if length < 0:
            raise DamagedValue.because(ValueError(f"channel {run_id[:40]!r} is not a list of updates"))
        if size:
            raise too_large(size, self.limits.update_bytes)
        return decoded_updates(values, cursor, length)

    def end(self, run_id: str, reason: str, recording: str | None = None) -> None:
        note = run_codec.encode_note(reason, recording)
        with self._reach():
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(*(self._key(kind, run_id) for kind in ("ch", "ck", "w")))
            pipe.set(self._key("gone", run_id), note, ex=int(GONE_TTL_S))
            pipe.execute()

    def gone(self, run_id: str) -> dict[str, Any] | None:
        return self._bounded(self._key("gone", run_id), NOTE_BYTES, run_codec.decode_note)

    def put_checkpoints(self, run_id: str, step: int, checkpoints: list[bytes]) -> None:
        value = run_codec.encode_checkpoints(step, checkpoints)
        with self._reach():
            self._if_channel(keys=[self._key("ch", run_id), self._key("ck", run_id)], args=["set", value])

    def checkpoints(self, run_id: str) -> tuple[int, list[bytes]] | None:
        limit = self.limits.checkpoints_bytes
        return self._bounded(self._key("ck", run_id), limit, lambda v: run_codec.decode_checkpoints(v, limit=limit))

    def touch_watcher(self, run_id: str, watcher_id: str) -> None:
        check_watcher_id(watcher_id)
        with self._reach():
            self._if_channel(
                keys=[self._key("ch", run_id), self._key("w", run_id)], args=["zadd", repr(self._clock()), watcher_id]
            )

    def watcher_count(self, run_id: str) -> int:
        watchers = self._key("w", run_id)
        with self._reach():
            pipe = self._redis.pipeline(transaction=True)
            pipe.exists(self._key("ch", run_id))
            pipe.zremrangebyscore(watchers, "-inf", repr(self._clock() - WATCHER_TTL_S))
            pipe.zcard(watchers)
            exists, _, count = pipe.execute()
        return int(count) if exists else 0

    def point(self, name: str, target: str) -> None:
        target = check_pointer(target)
        with self._reach():
            self._redis.set(self._key("ptr", name), target.encode(), px=self._ttl_ms())

    def pointer(self, name: str) -> str | None:
        def decode(value: bytes) -> str:
            try:
                return check_pointer(value.decode())
            except UnicodeDecodeError as err:
                raise ValueError(str(err)) from err

        return self._bounded(self._key("ptr", name), ID_CHARS * 4, decode)

    def drop_pointer(self, name: str) -> None:
        with self._reach():
            self._redis.delete(self._key("ptr", name))

    def put_parked(self, key: str, value: bytes, ttl_s: float) -> bool:
        if len(value) > self.parked_bytes:
            return False
        with self._reach():
            self._redis.set(self._key("park", key), value, px=max(1, int(ttl_s * 1000)))
        return True

    def parked(self, key: str) -> bytes | None:
        return self._bounded(self._key("park", key), self.parked_bytes, bytes)

    def drop_parked(self, key: str) -> None:
        with self._reach():
            self._redis.delete(self._key("park", key))

    def save_recording(self, recording: Recording) -> None:
        value = run_codec.encode_recording(recording)
        if len(value) > self.recordings_bytes:
            return  # larger than the whole budget: keeping it would evict everything else
        with self._reach():
            self._save(
                keys=self._recording_keys(recording.key),
                args=[recording.key, value, len(value), self.recordings_bytes, self._key("rec", "")],
            )

    def load_recording(self, key: str) -> Recording | None:
        with self._reach():
            value = self._load(keys=self._recording_keys(key), args=[key, self.recordings_bytes])
        if not isinstance(value, bytes):
            return None  # missing, or deleted unread (too large, or not a string)
        recording = decoded_recording(value, key, self.recordings_bytes)
        if recording is None:
            self.drop_recording(key)  # damaged, or written by another version: the run trains again
        return recording

    def has_recording(self, key: str) -> bool:
        with self._reach():
            return bool(self._redis.exists(self._key("rec", key)))

    def drop_recording(self, key: str) -> None:
        with self._reach():
            self._drop(keys=self._recording_keys(key)[:3], args=[key])

    def close(self) -> None:
        """Close the connections to Redis (a later call opens new ones)."""
        if self._redis is not None:
            self._redis.close()

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    def _recording_keys(self, key: str) -> list[str]:
        return [self._key("rec", key), f"{self.prefix}rec-used", f"{self.prefix}rec-size", f"{self.prefix}rec-clock"]

    def _ttl_ms(self) -> int:
        return max(1, int(self.channel_ttl_s * 1000))

    @contextmanager
    def _reach(self) -> Iterator[None]:
        """Run Redis commands; their failures become :class:`StoreUnavailable`."""
        if self._broken is not None:
            raise StoreUnavailable(self._broken)
        if time.monotonic() < self._down_until:
            raise StoreUnavailable(Message(DOWN))
        try:
            yield
        except self._down_errors as err:
            self._down_until = time.monotonic() + self.retry_after_s
            raise StoreUnavailable(Message(DOWN)) from err
        except self._errors as err:
            raise StoreUnavailable(Message(REFUSED, {"error": redact(str(err), self._url)})) from err

    def _bounded(self, key: str, limit: int, decode: Callable[[bytes], Any]) -> Any:
        """``decode`` of the string at ``key``, read only when at most ``limit`` bytes; ``None`` when it is missing
        or damaged (then deleted)."""
        with self._reach():
            value = self._get_bounded(keys=[key], args=[limit])
        if not isinstance(value, bytes):
            return None
        try:
            return decode(value)
        except ValueError:
            with self._reach():
                self._redis.delete(key)
            return None
