"""Reading values back from a run store, the same way in every store: sizes first, then the codec, then one
exception.

Both stores (:class:`~explorer.runs.store.MemoryStore`, :class:`~explorer.runs.redis_store.RedisStore`) keep the
codec's bytes and read them back through these functions. A store checks a value's size before reading it (the
limits are in :mod:`explorer.runs.updates`); a value that is too large or fails to decode is *damaged*:

- a channel's update raises :class:`~explorer.runs.updates.DamagedValue` (a
  :class:`~explorer.runs.updates.StoreUnavailable`, so a watch page says so and goes on);
- a recording, the offered model files or an ended channel's note is deleted and reads as missing, so the next
  Start trains for real (and may record a good recording) instead of failing on the same value again.
"""

from __future__ import annotations

from collections.abc import Sequence

from explorer.i18n import N_
from explorer.i18n.message import Message, Num
from explorer.runs import codec as run_codec
from explorer.runs.updates import READ_BYTES, UPDATE_BYTES, DamagedValue, Recording, RunUpdate, StoreUnavailable

__all__ = ["check_cursor", "decoded_recording", "decoded_updates", "encoded_update", "page_length", "too_large"]

TOO_LARGE = N_(
    "This run's news is {size} MB at once, more than the {limit} MB a shared run may send; sharing stops, "
    "training goes on."
)


def encoded_update(update: RunUpdate, limit: int = UPDATE_BYTES) -> bytes:
    """``update`` as the bytes a store keeps; :class:`StoreUnavailable` when it is over ``limit`` bytes, as no
    watcher would read it."""
    value = run_codec.encode_update(update)
    if len(value) > limit:
        raise StoreUnavailable(Message(TOO_LARGE, {"size": Num(len(value) / 2**20, 0), "limit": Num(limit / 2**20, 0)}))
    return value


def check_cursor(cursor: int) -> int:
    """``cursor`` when it is a whole number ≥ 0 (how many updates a watcher has read); else ``ValueError``."""
    if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
        raise ValueError(f"a channel's cursor is a whole number ≥ 0, not {cursor!r:.40}")
    return cursor


def page_length(sizes: Sequence[int], update_bytes: int = UPDATE_BYTES, read_bytes: int = READ_BYTES) -> int:
    """How many of the next updates, of ``sizes`` bytes, one read returns: while their total stays within
    ``read_bytes`` (one at least), stopping before one over ``update_bytes``, which raises :class:`DamagedValue`
    (:func:`too_large`) when it comes first."""
    total = 0
    for count, size in enumerate(sizes):
        if size > update_bytes:
            if count == 0:
                raise too_large(size, update_bytes)
            return count
        total += size
        if total > read_bytes and count > 0:
            return count
    return len(sizes)


def too_large(size: int, limit: int) -> DamagedValue:
    """The exception for a channel update of ``size`` bytes, over ``limit``, left unread."""
    return DamagedValue.because(ValueError(f"an update of {size:,} bytes, over the {limit:,} allowed, left unread"))


def decoded_updates(values: Sequence[bytes], cursor: int, length: int) -> tuple[list[RunUpdate], int]:
    """The updates in ``values`` (a page read at ``cursor`` of a channel of ``length`` updates) and the cursor
    after them; :class:`DamagedValue` when one cannot be read."""
    try:
        updates = [run_codec.decode_update(value) for value in values]
    except ValueError as err:
        raise DamagedValue.because(err) from err
    return updates, min(cursor, length) + len(updates)


def decoded_recording(value: bytes, key: str, limit: int) -> Recording | None:
    """The recording in ``value``, stored under ``key``, or ``None`` when it is damaged (over ``limit`` bytes,
    unreadable, or kept under another key): the caller then deletes it."""
    if len(value) > limit:
        return None  # left unread
    try:
        recording = run_codec.decode_recording(value, limit=limit)
    except ValueError:
        return None
    return recording if recording.key == key else None
