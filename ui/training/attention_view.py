"""Live Training page: the live view's attention — heatmaps, the chosen head, head scores and their numbers.

:class:`AttentionView` is the part of :class:`ui.training.views.LiveView` that draws the attention at the view's
shown step: every lane's layer × head heatmaps (a picture while following training, a chart otherwise, the ViT's
own view for images), the compact first screen's one large head, and the head scores. Under the heatmaps, a layer
and head picker with a "Numbers" button gives the shown attention as a table: the heatmaps' numeric alternative,
drawn once per script run (a redrawn popover would close while being read). ``LiveView`` lays out the places
these methods fill and sends each drawing through its ``_put``, so an unchanged one is not sent again.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import _
from explorer.runs.frame import RunFrame
from transformer_core.families import family
from transformer_core.training import Snapshot
from ui.common import state
from ui.common.chart_style import vega_locale
from ui.common.charts import chart_config, layer_head_picker
from ui.common.exports import numbers_popover
from ui.training import charts, first_screen, head_scores, heatmaps
from ui.training.status import snapshot_at
from ui.training.task_labels import shown_label


class AttentionView:
    """Draws the attention of :class:`~ui.training.views.LiveView`, which it is mixed into."""

    run: RunFrame  # the frame being drawn
    kind: str  # the attention kind shown
    shown_step: int | None  # the one step that every chart and label shows
    head_choice: Any  # the first screen's chosen head (or the best-matching one)
    follows_training: bool  # whether the heatmaps follow training as it goes
    frame_label: Any  # while following training: the time-lapse line, drawn with the heatmaps
    heads: list[Any]  # the compact first screen's (heading, heatmap) of one head, per lane
    heat_titles: list[Any]  # per lane: the heatmaps' title
    heatmaps: list[Any]  # per lane: every layer × head
    scores: list[Any]  # per lane: the head scores (None: not shown)
    numbers: Any  # the Numbers tables' container (None: not shown)
    _sent: dict[str, Any]  # place -> what was last drawn there
    _shared: str | None  # the watch channel whose drawings are shared, if any
    _draws: int  # refreshes so far: part of every chart's key

    def draw_attention(self) -> None:
        """Every lane's heatmaps and head scores at :attr:`shown_step`, and the time-lapse line that names it."""
        if self.frame_label is not None and self.shown_step is not None:
            self.frame_label.markdown(
                "🎞️ "
                + _(
                    "**Time-lapse: attention at step {step}** · follows training; pause to scrub through the snapshots."
                ).format(step=self.shown_step)
            )
        for i, lane in enumerate(self.run.lanes):
            snap = snapshot_at(lane.snapshots, self.shown_step)
            if snap is None or self.kind not in snap.attention:
                continue
            if self.heads:
                self.draw_head(i, snap)
            if not self.heatmaps:
                continue
            self._put(
                f"title{i}",
                ("title", i, snap.step, self.kind),
                lambda i=i, snap=snap: heatmaps.attention_title(self.run, i, snap, self.kind),
                self.heat_titles[i].markdown,
            )
            key = f"live.attn{i}.{self._draws}"
            if family(self.run.task.family).reads_images:
                self._put(
                    f"attn{i}",
                    ("vit", i, snap.step),
                    lambda i=i, snap=snap: self._vit_figure(i, snap),
                    lambda fig, i=i, key=key: self.heatmaps[i].plotly_chart(
                        fig, width="stretch", config=chart_config(), key=key
                    ),
                )
            elif self.follows_training:  # a picture: far cheaper for the browser than a chart to redraw
                self._put(
                    f"attn{i}",
                    ("picture", i, snap.step, self.kind),
                    lambda i=i, snap=snap: heatmaps.attention_picture(self.run, i, snap, self.kind)[0],
                    self.heatmaps[i].html,
                )
            else:
                self._put(
                    f"attn{i}",
                    ("chart", i, snap.step, self.kind),
                    lambda i=i, snap=snap: heatmaps.attention_chart(self.run, i, snap, self.kind),
                    lambda chart, i=i, key=key: self.heatmaps[i].vega_lite_chart(
                        chart[0], vega_locale(chart[1]), key=key
                    ),
                )
            self.draw_scores(i, snap)

    def draw_head(self, lane: int, snap: Snapshot) -> None:
        """Lane ``lane``'s chosen head at ``snap``, large, with the line that names it (the compact first screen)."""
        heading, place = self.heads[lane]
        chosen = first_screen.chosen_head(snap, self.kind, self.head_choice)
        if chosen is None:
            self._sent.pop(f"head{lane}", None)
            heading.empty()
            place.caption(_("{config} has no such layer and head.").format(config=shown_label(self.run.labels[lane])))
            return
        layer, head, note = chosen
        self._put(
            f"headline{lane}",
            ("headline", lane, snap.step, layer, head, note),
            lambda: first_screen.head_heading(self.run, lane, snap, note),
            heading.markdown,
        )
        lanes = len(self.heads)
        smaller = first_screen.SMALLER_LABELS_PX if lanes > 1 else 0
        self._put(
            f"head{lane}",
            ("head", lane, snap.step, self.kind, layer, head),
            lambda: heatmaps.head_picture(
                self.run,
                snap,
                self.kind,
                layer,
                head,
                width_px=first_screen.heat_width(lanes),
                height_px=first_screen.HEAT_HEIGHT_PX,
                smaller=smaller,
            ),
            place.html,
        )

    def _vit_figure(self, lane: int, snap: Snapshot) -> go.Figure:
        """The ViT's picture view; shared, a copy: the session's own figure is updated in place by its next draw."""
        fig = charts.vit_attention_figure(self.run, lane, snap)
        return go.Figure(fig) if self._shared is not None else fig

    def draw_scores(self, lane: int, snap: Snapshot) -> None:
        """The head scores of the shown attention kind, or a line saying which kind the task's pattern lives in."""
        if self.scores[lane] is None:  # a lesson's compact view shows none
            return
        scored = head_scores.scores_of_kind(snap, self.kind)
        if scored is not None:
            short = charts.short_kind_title(self.kind, self.run.task.family)  # fits half a page
            live = self.follows_training
            self._put(
                f"scores{lane}",
                ("scores", lane, snap.step, self.kind, live),
                lambda: head_scores.scores_chart(snap, scored, short, live=live),
                lambda chart: self.scores[lane].vega_lite_chart(
                    chart[0],
                    vega_locale(chart[1]),
                    width="stretch",
                    height=head_scores.scores_height(snap, chart[1]),
                    key=f"live.scores{lane}.{self._draws}",
                ),
            )
            return
        self._sent.pop(f"scores{lane}", None)
        if snap.scores and lane == 0:
            key = next(iter(snap.scores))
            where = charts.kind_name(key.split(":")[0], self.run.task.family)
            self.scores[lane].caption(
                _(
                    "Head scores rate how {pattern} each head is in the {kind}, where this "
                    "task's pattern lives: choose it above to see them."
                ).format(pattern=charts.pattern_title(key), kind=where)
            )
        else:
            self.scores[lane].empty()

    def draw_numbers(self) -> None:
        """Layer and head pickers and, per configuration, a "Numbers" table of that map at the shown step."""
        snaps = [snapshot_at(lane.snapshots, self.shown_step) for lane in self.run.lanes]
        if self.numbers is None or any(s is None or self.kind not in s.attention for s in snaps):
            return
        shapes = [s.attention[self.kind].shape for s in snaps]  # (layers, heads, queries, keys) per lane
        rows, cols = self.run.task.attention_example().get("labels", {}).get(self.kind, (None, None))
        with self.numbers:
            # A Numbers button per configuration, wide enough for "Numbers · A" whole beside a second one
            # (and for "Numbers" whole in a 1024-pixel page with the sidebar open)
            widths = [1, 1, 1.4, 2.6] if len(snaps) == 1 else [1, 1, 1.6, 1.6, 2.2]
            c_layer, c_head, *c_nums = st.columns(widths, vertical_alignment="bottom")
            layer, head = (
                i + 1
                for i in layer_head_picker(
                    max(s[0] for s in shapes),
                    max(s[1] for s in shapes),
                    columns=(c_layer, c_head),
                    radio_max=0,
                    keys=(state.LIVE_NUMBERS_LAYER, state.LIVE_NUMBERS_HEAD),
                    helps=(
                        _("Which layer's attention the Numbers table shows."),
                        _("Which head's attention the Numbers table shows."),
                    ),
                )
            )
            for i, (snap, shape) in enumerate(zip(snaps, shapes, strict=True)):
                lane = charts.short_label(self.run, i)
                if layer > shape[0] or head > shape[1]:
                    c_nums[i].caption(
                        _("{config} has no layer {layer}, head {head}.").format(
                            config=lane.strip(" ·") or _("This model"), layer=layer, head=head
                        )
                    )
                    continue
                z = snap.attention[self.kind][layer - 1, head - 1].astype(float)
                fits = rows is not None and cols is not None and (len(rows), len(cols)) == z.shape
                labels = (rows, cols) if fits else (None, None)
                with c_nums[i]:
                    numbers_popover(
                        z,
                        *labels,
                        name=f"{self.run.task.name}-{self.kind}-step{snap.step}-layer{layer}-"
                        f"head{head}{lane.replace(' · ', '-')}",
                        key=f"live.numbers{i}",
                        label=_("Numbers{config}").format(config=lane),
                    )
            if self.run.status != "running":  # drawn empty: a watcher's page, which never ends, kept the old note
                c_nums[-1].empty()
            else:
                c_nums[-1].caption(
                    _(
                        "The table shows step {step}, the latest snapshot when the page was drawn; pause "
                        "to read the newest."
                    ).format(step=snaps[0].step)
                    if self._shared is None
                    else _(  # a watcher has no Pause: the owner's next pause redraws it
                        "The table shows step {step}, the latest snapshot when the page was drawn; it follows "
                        "when the run pauses."
                    ).format(step=snaps[0].step)
                )
