"""How often the pages loop live: the owner's redraws, a watcher's reads, a waiting page, a lesson, the writing.

The services' clocks (how long a trainer process trains between two messages, how often a shared run is
published, when a silent page counts as gone) are in :mod:`explorer.runs.pace`; the two modules together hold
every timing constant of a run's way from its trainer to a watcher's screen. How they combine:

- The owner's page loop (:mod:`ui.training.run`) trains, or reads its trainer's news, for :data:`OWNER_TICK_S`,
  then redraws and publishes to the watch channel; a trainer process sends news every
  ``explorer.runs.pace.TRAINER_SLICE_S`` (0.1 s), so each tick brings two or three messages. Inside a redraw the
  heatmaps and the curves are drawn anew at most every :data:`HEATMAP_INTERVAL_S` / :data:`CURVES_INTERVAL_S`
  (the status line's Step follows every tick, its other figures and the progress bar at most every
  :data:`FIGURES_INTERVAL_S`: each redraw is a message to every watcher and a render in every browser, and a
  smoothed figure redrawn four times a second shows the eye nothing new), and the watcher count every
  :data:`WATCHER_COUNT_S`.
- A watcher's page (:mod:`ui.training.watch`) reads the channel every :data:`WATCH_TICK_S` while the run trains
  and every :data:`WATCH_IDLE_TICK_S` while it rests: a step reaches a watcher's screen at most about
  0.1 + 0.25 + 0.5 s after it was trained. Its reads keep it counted (``explorer.runs.pace.WATCHER_TTL_S``). A run
  that says it trains but sends nothing for :data:`WATCH_QUIET_S` has lost its owner's page (the server pauses such
  a run after ``explorer.runs.pace.UNDRIVEN_S``): the watcher is told, not left before a step that never moves.
- A page waiting in line renews its ticket every :data:`LINE_POLL_S`, well within
  ``explorer.runs.pace.TICKET_STALE_S``; a lesson's run redraws its progress every :data:`LESSON_TICK_S`; the
  Attention Lab's writing shows each token for at least :data:`WRITING_TICK_S`.
- Every one of these loops is a :func:`ui.common.ticker.ticks` loop: between two ticks it sleeps until its next
  tick or until Streamlit receives a click (Pause, Stop, any widget) or a closed tab, which it lets through at once;
  only outside a script run does it look every :data:`WAKE_S` instead.
- The browser-side watchdog (:mod:`ui.training.watchdog`) calls a page stalled after :data:`STALL_S` without any
  change — many times the slowest tick — and a run's page ended after :data:`ENDED_S` with the bar still
  saying "Training…" (longer than a rerun's gap).

``tests/app/test_ticker.py`` holds these relations.
"""

from __future__ import annotations

__all__ = ["CURVES_INTERVAL_S", "ENDED_S", "FIGURES_INTERVAL_S", "HEATMAP_INTERVAL_S", "LESSON_TICK_S", "LINE_POLL_S",
           "OWNER_TICK_S", "STALL_S", "VIT_INTERVAL_S", "WAKE_S", "WATCHER_COUNT_S", "WATCH_IDLE_TICK_S",
           "WATCH_QUIET_S", "WATCH_TICK_S", "WRITING_TICK_S"]

OWNER_TICK_S = 0.25  # the owner's page trains (or reads its trainer's news) this long between two redraws
WATCH_TICK_S = 0.5  # a watcher reads and redraws twice a second while the run trains (its drawings are shared)
WATCH_IDLE_TICK_S = 1.0  # ... and once a second while it is paused or over (its owner may go on)
WATCH_QUIET_S = 30.0  # a training run that sends nothing this long has lost its owner's page: its watchers are told
LINE_POLL_S = 0.5  # a page waiting in line renews its ticket and asks for a place this often
LESSON_TICK_S = 0.2  # a lesson's run trains (or reads its trainer's news) this long between two progress updates
WRITING_TICK_S = 0.1  # each written token stays on screen at least this long (a tiny model writes faster than eyes)
WAKE_S = 0.05  # a loop waiting for its next tick without a request signal looks this often for a click
HEATMAP_INTERVAL_S = 0.5  # while training, the live view's heatmaps are redrawn at most this often
CURVES_INTERVAL_S = 1.0  # ... and the curves (and with every redraw of the heatmaps: their step marker moves)
FIGURES_INTERVAL_S = 1.0  # ... and the status line's figures but the Step (speed, loss, metric, progress bar)
VIT_INTERVAL_S = 1.5  # ... and the ViT's picture overlays (Plotly: the browser draws them afresh each time)
WATCHER_COUNT_S = 2.0  # the owner's page redraws how many watch this often
STALL_S = 10  # seconds without any change on a live page before the watchdog's banner shows
ENDED_S = 4  # seconds the script may be finished while the bar still says "Training…" (a rerun's gap)
