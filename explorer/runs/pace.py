"""How often a run trains, reports and publishes, and when a silent page counts as gone: the services' clocks.

The page's clocks (how often a page redraws, a watcher reads, a waiting page asks for a place) are in
:mod:`ui.common.pace`; the two modules together hold every timing constant of a run's way from its trainer to a
watcher's screen. How they combine, along that way:

1. A trainer process trains :data:`TRAINER_SLICE_S` at a time and then sends what is new down its pipe (a waiting
   command ends a slice after the step in progress, so Pause lands within a step).
2. The owner's page loop reads that news for ``ui.common.pace.OWNER_TICK_S`` (a run trained on the page's own
   thread trains for that long instead) and redraws; a shared run is published to its watch channel after each
   tick, at most every :data:`PUBLISH_INTERVAL_S` while it trains (so never more often than the owner redraws).
3. A watcher's page reads the channel every ``ui.common.pace.WATCH_TICK_S`` and redraws what changed.

So a step reaches a watcher's screen at most about TRAINER_SLICE_S + OWNER_TICK_S + WATCH_TICK_S (0.85 s) after
it was trained. The "gone" limits are several ticks long, so a busy server's late tick never counts as a closed
page: a running run no page advanced for :data:`UNDRIVEN_S` is paused, a line ticket not renewed (every
``ui.common.pace.LINE_POLL_S``) for :data:`TICKET_STALE_S` leaves the line, and a watcher who has not read for
:data:`WATCHER_TTL_S` no longer counts. ``tests/app/test_ticker.py`` holds them to these relations.
"""

from __future__ import annotations

__all__ = ["PUBLISH_INTERVAL_S", "REPLAY_WAIT_S", "TICKET_STALE_S", "TRAINER_SLICE_S", "UNDRIVEN_S",
           "WATCHER_TTL_S"]

TRAINER_SLICE_S = 0.1  # a trainer process trains this long between two looks at its pipe, and then sends news
PUBLISH_INTERVAL_S = 0.25  # a running shared run is published at most this often (its owner redraws as often)
REPLAY_WAIT_S = 0.05  # a replay waits for its recorded pace in steps this long, so a click ends its slice at once
UNDRIVEN_S = 20.0  # a "running" run no page loop advanced for this long has lost its page: it is paused
TICKET_STALE_S = 6.0  # a line ticket nobody renewed for this long has gone (its tab closed)
WATCHER_TTL_S = 10.0  # a watcher who has not read for this long no longer counts
