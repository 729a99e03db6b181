"""Live Training page: the live view — status, curves, attention heatmaps, head scores, sample predictions.

:class:`LiveView` lays out ``st.empty`` placeholders once per script run and redraws them in place while the
run trains, so a refresh costs only what changed: the Step every tick, the status line's other figures and the
curves at most every second; the heatmaps and scores when a new snapshot arrives; the sample predictions after an
evaluation. Chart keys carry a draw counter, because a chart redrawn unchanged in one script run would otherwise
repeat an element id. The attention's drawings (heatmaps, head scores, their numbers) come from
:class:`ui.training.attention_view.AttentionView`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import streamlit as st

from explorer.i18n import _, language, num
from explorer.i18n.message import localized
from explorer.runs.frame import RunFrame, SampleSet
from transformer_core.families import family
from ui.common import pace, theme
from ui.common.chart_style import vega_locale
from ui.training import charts, curves, drawn, first_screen, text
from ui.training.attention_view import AttentionView
from ui.training.samples import samples_html
from ui.training.status import KIND, status_metrics, status_text

PIN = "live.pin"  # step chosen on the time-lapse slider; None follows the latest snapshot
SAMPLES_SHOWN = "live.samples"  # dict lane -> ((sample set id, step, language), html): sample tables already made


class LiveView(AttentionView):
    """The page's live part; create it where it should appear, then call :meth:`refresh` as often as needed.

    ``source`` gives the run's frame as it is now (the owner's run, a watched channel or a replay): every refresh
    draws a fresh one. ``shared`` names the watch channel the frame comes from, for a watcher: its drawings are then
    built once for every watcher of that view (:mod:`ui.training.drawn`). Either way, a drawing that has not changed
    since it was last put in its place is not sent again.
    """

    def __init__(
        self,
        source: Callable[[], RunFrame],
        *,
        projector: bool,
        kind: str,
        pinned_step: int | None,
        shared: str | None = None,
        compact: bool | None = None,
        pickers: bool = True,
        ready: str | None = None,
    ) -> None:
        """``compact`` (projector mode's by default) lays out :mod:`ui.training.first_screen`'s first screen;
        ``pickers`` there draws its attention and head drop-downs, and what follows it (without them: the
        task's pattern kind, the best-matching head, and nothing below, as in a lesson). ``ready``: what the
        status line says before the run starts, where that is not "Ready — press Start" (a lesson has no Start)."""
        self._source = source
        self.ready = ready
        self.compact = projector if compact is None else compact
        self.pickers = pickers
        self.head_choice: Any = first_screen.BEST
        self._shared = shared
        self._sent: dict[str, Hashable] = {}  # place -> what was last drawn there
        self._sent_at: dict[str, float] = {}  # place -> when it was last drawn (time.monotonic)
        self._metric_slots: list[Any] = []  # the status line's metrics, one placeholder each (laid out once)
        self.run, self.projector, self.kind, self.pinned_step = source(), projector, kind, pinned_step
        self._draws = 0
        self._drawn_snapshots: tuple | None = None
        self._attention_time = 0.0
        self._curves_time = 0.0
        self._drawn_evals: tuple | None = None
        self.shown_step = self.step_to_show()  # the one step that every chart and label shows
        self.frame_label: Any = None  # while following training: the time-lapse line, drawn with the heatmaps
        self.heads: list[Any] = []  # the compact first screen's heatmap of one head, per lane
        if self.compact:
            self._lay_out_first_screen(len(self.run.lanes))
        else:
            self._lay_out(len(self.run.lanes))

    def _lay_out(self, lanes: int) -> None:
        self.status, self.progress, self.message = st.empty(), st.empty(), st.empty()
        count = 3 if self.run.task.pattern_names else 2
        self.curves = [c.empty() for c in st.columns(count, gap="medium")]
        self.timelapse = st.container()
        self._lay_out_heatmaps(lanes)
        self.numbers = st.container()
        self.scores = [c.empty() for c in st.columns(lanes, gap="medium")]
        self.samples = [c.empty() for c in st.columns(lanes, gap="medium")]

    def _lay_out_heatmaps(self, lanes: int) -> None:
        # Compared configurations one under the other in a column narrower than both grids (1024 pixels with
        # the sidebar open), where side by side each scrolled its last heads out of sight
        columns = theme.wrapping_columns(lanes, "live-heatmaps", per_row=1, gap="medium")
        self.heat_titles = [c.empty() for c in columns]
        self.heatmaps = [c.empty() for c in columns]

    def _lay_out_first_screen(self, lanes: int) -> None:
        """The step line, then the chosen head's heatmap beside the loss and metric curves; below: the pattern
        curve and the head scores, the time-lapse, every layer × head and the samples, folded."""
        self.status, self.progress, self.message = st.empty(), None, st.empty()
        c_heat, c_curves = st.columns(first_screen.HEAT_SHARE[min(lanes, 2)], gap="medium")
        with c_heat.container(gap="xsmall"):  # small gaps: every pixel of height goes to the heatmap
            if self.pickers and self.kind:
                c_kind, c_head = st.columns(2, gap="small")
                with c_kind:
                    self.kind = first_screen.kind_select(self.run, list(self.run.lanes[0].snapshots[0].attention), KIND)
                with c_head:
                    self.head_choice = first_screen.head_select(self.run, self.kind, first_screen.HEAD)
            if lanes == 1:  # the line that names the step and score beside the heatmap, not above it
                c_map, c_line = st.columns(first_screen.MAP_SHARE, gap="small", vertical_alignment="center")
                self.heads = [(c_line.empty(), c_map.empty())]  # (heading, heatmap)
            else:
                self.heads = [(c.empty(), c.empty()) for c in st.columns(lanes, gap="small")]
        curves_column = c_curves.container(gap="xsmall")
        self.curves = [curves_column.empty(), curves_column.empty()]
        self.numbers, self.samples, self.heat_titles, self.heatmaps = None, [], [], []
        if not self.pickers:
            self.timelapse, self.scores = st.container(), [None] * lanes
            return
        c_pattern, c_scores = st.columns(2, gap="medium")
        if self.run.task.pattern_names:
            self.curves.append(c_pattern.empty())
        self.scores = [c_scores.empty()] if lanes == 1 else [c.empty() for c in st.columns(lanes, gap="medium")]
        self.timelapse = st.container()
        with st.expander("🔍 " + _("Every layer × head")):
            self._lay_out_heatmaps(lanes)
        with st.expander("📝 " + _("Sample predictions")):
            self.samples = [c.empty() for c in st.columns(lanes, gap="medium")]

    @property
    def follows_training(self) -> bool:
        """Whether the heatmaps follow training as it goes (running, no step chosen on the time-lapse)."""
        return self.pinned_step is None and self.run.status == "running"

    def step_to_show(self) -> int | None:
        """The chosen step, else the latest step that every lane has a snapshot of."""
        lasts = [lane.snapshots[-1].step for lane in self.run.lanes if lane.snapshots]
        if not lasts:
            return None
        return self.pinned_step if self.pinned_step is not None else min(lasts)

    def refresh(self) -> None:
        """Redraw what changed since the last call."""
        self._draws += 1
        self.run = self._source()
        self.draw_status()
        marks = self.run.snapshot_count()
        interval = pace.VIT_INTERVAL_S if family(self.run.task.family).reads_images else pace.HEATMAP_INTERVAL_S
        due = time.monotonic() - self._attention_time >= interval or self.run.status != "running"
        if self._drawn_snapshots is None or (self.pinned_step is None and marks != self._drawn_snapshots and due):
            self._drawn_snapshots = marks
            self._attention_time = time.monotonic()
            self.shown_step = self.step_to_show()
            self.draw_attention()
            self._curves_time = 0.0  # the curves' marker moves with the heatmaps
        if time.monotonic() - self._curves_time >= pace.CURVES_INTERVAL_S or self.run.status != "running":
            self._curves_time = time.monotonic()
            self.draw_curves()
        evals = tuple(len(lane.samples) for lane in self.run.lanes)
        if self.samples and evals != self._drawn_evals:
            self._drawn_evals = evals
            self.draw_samples()

    def _put(
        self, place: str, what: tuple[Hashable, ...], build: Callable[[], Any], draw: Callable[[Any], object]
    ) -> None:
        """Draw ``build()`` (the drawing named ``what``) at ``place``, unless that drawing is already there."""
        if self._sent.get(place) == what:
            return
        draw(self._built(what, build))
        self._sent[place] = what

    def _built(self, what: tuple[Hashable, ...], build: Callable[[], Any]) -> Any:
        """``build()``, the drawing named ``what``: made once for every watcher of the channel (see :mod:`drawn`)."""
        return drawn.shared(self._shared, what, build) if self._shared is not None else build()

    def _status_marks(self) -> tuple[Hashable, ...]:
        """What the status line's figures are made from: the run's status, step, speed and time left, every lane's
        rows (its losses and evaluations)."""
        run = self.run
        rows = tuple(self._lane_marks(i)[0] for i in range(len(run.lanes)))
        return run.status, run.step, run.total_steps, run.steps_per_second, run.eta_s, rows

    def _lane_marks(self, i: int) -> tuple[Hashable, ...]:
        """What lane ``i``'s drawings are made from: its rows, snapshot steps and sample sets so far."""
        lane = self.run.lanes[i]
        rows = (len(lane.history), lane.history[0]["step"], lane.history[-1]["step"]) if lane.history else (0,)
        return rows, tuple(s.step for s in lane.snapshots), len(lane.samples)

    def draw_status(self) -> None:
        """The step, speed, loss and metric line, the progress bar and any message: each part sent only when what
        it shows changed (a watcher's refresh used to send the whole block, a dozen elements, every tick)."""
        run = self.run
        if self.compact:  # one line, read from the back of the room
            said = self.ready if self.ready and run.status == "ready" else status_text(run)
            marks = ("status line", said, *self._status_marks())
            self._show("status", self._built(marks, lambda: first_screen.status_line(run, said)), self.status.markdown)
        else:
            metrics = self._built(("status", *self._status_marks()), lambda: tuple(status_metrics(run)))
            if len(self._metric_slots) != len(metrics):  # laid out once per script run (and per lane count)
                with self.status.container():
                    self._metric_slots = _metric_places(len(metrics))
                self._sent = {k: v for k, v in self._sent.items() if not k.startswith("metric")}
            for i, (slot, (label, value, help_text)) in enumerate(zip(self._metric_slots, metrics, strict=True)):
                self._show(
                    f"metric{i}",
                    (label, value, help_text),
                    lambda m, slot=slot: slot.metric(m[0], m[1], help=m[2]),
                    every=pace.FIGURES_INTERVAL_S if i else 0.0,  # the Step follows every redraw
                )
            eta = run.eta_s
            left = (
                " · " + _("about {seconds} s left").format(seconds=num(eta, 0))
                if eta is not None and run.status == "running"
                else ""
            )
            self._show(
                "progress",
                (run.progress, f"{status_text(run)}{left}"),
                lambda p: self.progress.progress(p[0], text=p[1]),
                every=pace.FIGURES_INTERVAL_S,
            )
        if run.message:
            self._show(
                "message",
                run.message,
                lambda m: self.message.error(_("Training stopped: {reason}.").format(reason=localized(m)), icon="⚠️"),
            )

    def _show(self, place: str, what: Hashable, draw: Callable[[Any], object], every: float = 0.0) -> None:
        """Draw ``what`` at ``place`` with ``draw``, unless it is already shown there; while the run trains, a place
        with ``every`` is redrawn at most that often (its figure moves smoothly: a redraw each tick shows nothing
        new to the eye, and costs the server a message per watcher and every browser a render)."""
        if self._sent.get(place) == what:
            return
        now = time.monotonic()
        if every and place in self._sent and self.run.status == "running" and now - self._sent_at[place] < every:
            return
        draw(what)
        self._sent[place], self._sent_at[place] = what, now

    def draw_curves(self) -> None:
        compact = partial(curves.loss_chart, compact=True), partial(curves.metric_chart, compact=True)
        builders = [*(compact if self.compact else (curves.loss_chart, curves.metric_chart)), curves.pattern_chart]
        marks = [self._lane_marks(i) for i in range(len(self.run.lanes))]
        for i, slot in enumerate(self.curves):
            made_from = tuple(m[1] if i == 2 else m[0] for m in marks)  # the pattern curve follows the snapshots
            what = ("curve", i, self.compact, self.shown_step, self.run.total_steps, made_from)
            self._put(
                f"curve{i}",
                what,
                lambda b=builders[i]: b(self.run, self.shown_step),
                lambda chart, i=i, slot=slot: self._draw_curve(i, slot, chart),
            )

    def _draw_curve(self, i: int, slot: Any, chart: curves.Chart) -> None:
        data, spec = chart
        height = first_screen.CURVE_HEIGHT if self.compact and i < 2 else curves.CURVE_HEIGHT
        if drawn.is_empty(data) and self.compact:  # the chart's frame stays on the first screen, titled
            data, spec = curves.waiting_chart(curves.WAITING[i], height)
        elif drawn.is_empty(data):  # nothing measured yet: an empty chart makes Vega warn about infinite extents
            with slot.container(height=curves.CURVE_HEIGHT, border=True):
                st.caption(_(curves.WAITING[i]))
            return
        slot.vega_lite_chart(
            data, vega_locale(spec), width="stretch", height=height, key=f"live.curve{i}.{self._draws}"
        )

    def draw_samples(self) -> None:
        """Each lane's latest sample predictions (made by the owner's run after its evaluations)."""
        shown = st.session_state.setdefault(SAMPLES_SHOWN, {})
        for i, lane in enumerate(self.run.lanes):
            if not lane.samples:
                continue
            latest = lane.samples[-1]
            self._put(
                f"samples{i}",
                ("samples", i, len(lane.samples), latest.step),
                lambda i=i, latest=latest: self._samples_table(shown, i, latest),
                self.samples[i].html,
            )

    def _samples_table(self, shown: dict, lane: int, latest: SampleSet) -> str:
        """Lane ``lane``'s sample table, made once per sample set in this session (see :data:`SAMPLES_SHOWN`)."""
        made_of = (id(latest), latest.step, language())  # a language switch makes it anew
        if shown.get(lane, (None, ""))[0] != made_of:
            caption = _("Sample predictions{config} · step {step}{sampling}").format(
                config=charts.short_label(self.run, lane),
                step=num(latest.step),
                sampling=text.caption_shown(latest.caption),
            )
            shown[lane] = (made_of, samples_html(latest.items, self.run.task.family, caption))
        return shown[lane][1]


def _metric_places(count: int) -> list[Any]:
    """A placeholder per status metric: one row of up to four; with more (two lanes: six), the step and the speed on
    a row of their own above each lane's loss and metric, so that "454 / 2,000" is not cut short at 1024 pixels."""
    if count <= 4:
        return [c.empty() for c in st.columns(count)]
    return [c.empty() for c in st.columns([2, 1, 1])[:2]] + [c.empty() for c in st.columns(count - 2)]
