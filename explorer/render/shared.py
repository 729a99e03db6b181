"""Drawings shared by every session that shows the same view: built once, kept in a small, bounded cache.

Twenty people watching one run see the same charts and pictures: the same curves at the same step, the same
attention grid of the same kind. A :class:`SharedRenders` builds each of them once, for the first session that
asks, and hands the very same object to every other session that asks for that key. Keys name everything a
drawing depends on — the channel, what the run had reached, the view (attention kind, layer, head, step shown)
and the look (colour scale, projector mode, theme) — and never a session, so nothing in the cache belongs to one
user. Values are treated as read-only: no caller may change what it gets.

It is thread-safe, and a key that is being built is built once: sessions that ask for it meanwhile wait for that
build instead of repeating it. Entries are evicted least recently used first when their weight (bytes, as the
caller's ``weigh`` counts them) passes ``max_bytes``; a value heavier than the whole bound is returned but not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["RenderStats", "SharedRenders"]

T = TypeVar("T")


@dataclass(frozen=True)
class RenderStats:
    """What a :class:`SharedRenders` did so far."""

    builds: int  # values built (each key once while it stays cached)
    hits: int  # values handed out without building (including waits for a build under way)
    evictions: int  # values dropped to keep within the byte bound
    entries: int  # values held now
    bytes: int  # their total weight


class _Building:
    """A build under way: the sessions that wait for it, and its outcome."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class SharedRenders:
    """A process-wide cache of read-only drawings, built once per key; see the module docstring.

    Args:
        max_bytes: the most the kept values may weigh together.
        weigh: a value's weight in bytes (an estimate is enough: it only bounds the cache).
    """

    def __init__(self, max_bytes: int, weigh: Callable[[Any], int]) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, not {max_bytes}")
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._building: dict[Hashable, _Building] = {}
        self._bytes = self._builds = self._hits = self._evictions = 0

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value kept under ``key``, built by ``build()`` first if nobody has (or is building it now).

        An exception raised by ``build`` reaches every session that waited for that build, and nothing is kept.
        """
        with self._lock:
            held = self._values.get(key)
            if held is not None:
                self._values.move_to_end(key)
                self._hits += 1
                return held[0]
            building = self._building.get(key)
            mine = building is None
            if mine:
                building = self._building[key] = _Building()
            else:
                self._hits += 1
        if not mine:
            building.done.wait()
            if building.error is not None:
                raise building.error
            return building.value
        try:
            value = build()
            weight = max(1, int(self._weigh(value)))
        except BaseException as err:
            building.error = err
            raise
        else:
            building.value = value
            self._keep(key, value, weight)
            return value
        finally:
            with self._lock:
                self._building.pop(key, None)
                self._builds += building.error is None
            building.done.set()

    def _keep(self, key: Hashable, value: Any, weight: int) -> None:
        if weight > self.max_bytes:
            return
        with self._lock:
            old = self._values.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._values[key] = (value, weight)
            self._bytes += weight
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._values.popitem(last=False)
                self._bytes -= dropped
                self._evictions += 1

    def stats(self) -> RenderStats:
        """Counts of builds, hits and evictions, and what is held now."""
        with self._lock:
            return RenderStats(self._builds, self._hits, self._evictions, len(self._values), self._bytes)

    def clear(self) -> None:
        """Drop every kept value (builds under way finish and are kept)."""
        with self._lock:
            self._values.clear()
            self._bytes = 0
