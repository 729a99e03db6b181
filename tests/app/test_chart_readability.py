"""Shared chart helpers are readable in a classroom: percentages in cells, labelled grids, whole titles."""

from __future__ import annotations

import numpy as np
import pytest
import streamlit as st

from explorer.i18n import using_language
from explorer.render import heatmap as hm
from ui.common import charts, state


@pytest.fixture
def projector_mode():
    st.session_state[state.PRESENTATION] = True
    yield
    del st.session_state[state.PRESENTATION]


@pytest.mark.parametrize(("weight", "text"), [(2.38e-07, "<1%"), (0.0, "0%"), (0.004, "<1%"), (0.005, "0%"),
                                               (0.314, "31%"), (0.996, "100%"), (1.0, "100%"), (np.nan, "")])
def test_weights_print_as_rounded_percentages(weight, text):
    assert charts.percent_text(weight) == text


def test_heatmap_cells_show_percentages_for_weights_only():
    weights = np.array([[1.0, 0.0], [2.38e-07, 1 - 2.38e-07]])
    assert charts.heatmap(weights, zmin=0.0, zmax=1.0).data[0].text.tolist() == [["100%", "0%"], ["<1%", "100%"]]
    mask = charts.heatmap(np.eye(2), zmin=0.0, zmax=1.0, decimals=0).data[0].text.tolist()
    assert mask == [["1", "0"], ["0", "1"]]  # a 0/1 mask keeps its digits
    scores = charts.heatmap(np.array([[-1.25, 0.5]]), diverging=True).data[0].text.tolist()
    assert scores == [["-1.25", "0.50"]]  # scores are not weights: no percent
    with using_language("de"):  # the decimal sign of the colour bar and of every other number on the page
        assert charts.heatmap(np.array([[-1.25, 0.5]]), diverging=True).data[0].text.tolist() == [["-1,25", "0,50"]]


def test_cell_text_grows_in_projector_mode(projector_mode):
    fig = charts.heatmap(np.eye(3), zmin=0.0, zmax=1.0)
    assert fig.layout.font.size == charts.font_size() == 18
    assert fig.data[0].textfont.size is None  # Plotly's "auto": the chart's size, smaller only in narrow cells
    # Larger numbers need wider cells: a 5 x 16 matrix keeps its numbers on hover only.
    assert charts.heatmap(np.zeros((5, 16)), diverging=True).data[0].text is None
    assert charts.heatmap(np.zeros((5, 10)), diverging=True).data[0].text is not None


def _shown(fig, axis: str) -> dict[str, bool]:
    """Axis name -> whether its tick labels show, for the x or y axes of every panel."""
    return {name: bool(fig.layout[name].showticklabels) for name in fig.layout if name.startswith(axis)}


def test_grid_puts_token_labels_on_the_outer_row_and_column():
    tokens = ["the", "cat", "sat"]
    grid = [[np.full((3, 3), 1 / 3)] * 4 for _ in range(2)]  # 2 layers x 4 heads
    fig = charts.heatmap_grid(grid, col_titles=[f"head {h}" for h in range(1, 5)], x=tokens, y=tokens,
                              row_titles=["layer 1", "layer 2"])
    x_shown = sorted(name for name, shown in _shown(fig, "xaxis").items() if shown)
    y_shown = sorted(name for name, shown in _shown(fig, "yaxis").items() if shown)
    assert x_shown == ["xaxis5", "xaxis6", "xaxis7", "xaxis8"]  # the bottom row (layer 2)
    assert y_shown == ["yaxis", "yaxis5"]  # the first column (head 1 of each layer)
    assert list(fig.data[0].x) == tokens and list(fig.data[0].y) == tokens


@pytest.mark.parametrize(("tokens", "labelled"), [(["a", "cat", "sat"], ["yaxis", "yaxis2", "yaxis3", "yaxis4"]),
                                                  (["internationalization", "is", "long"], ["yaxis", "yaxis3"]),
                                                  (["日本", "a", "b"], ["yaxis", "yaxis3"])])
def test_a_small_grid_labels_every_panels_rows_only_where_the_labels_fit_between_them(tokens, labelled):
    fig = charts.heatmap_grid([[np.full((3, 3), 1 / 3)] * 2 for _ in range(2)], col_titles=["head 1", "head 2"],
                              x=tokens, y=tokens, row_titles=["layer 1", "layer 2"])
    assert sorted(name for name, shown in _shown(fig, "yaxis").items() if shown) == labelled


def test_on_a_phone_a_small_grid_labels_the_first_columns_rows_only(monkeypatch):
    monkeypatch.setattr(charts, "phone", lambda: True)  # a map a third as wide: even "cat" ran over its neighbour
    fig = charts.heatmap_grid([[np.full((3, 3), 1 / 3)] * 2 for _ in range(2)], col_titles=["head 1", "head 2"],
                              x=["a", "cat", "sat"], y=["a", "cat", "sat"], row_titles=["layer 1", "layer 2"])
    assert sorted(name for name, shown in _shown(fig, "yaxis").items() if shown) == ["yaxis", "yaxis3"]


def test_panel_titles_are_large_dark_and_below_the_toolbar(projector_mode):
    fig = charts.heatmap_grid([[np.eye(2)] * 3], col_titles=["head 1", "head 2", "head 3"], title="A grid")
    for note in fig.layout.annotations:
        assert note.font.size > charts.font_size() and note.font.color == charts.LABEL_COLOURS["light"]
    # The chart title and the toolbar (about 30 px) share the top line; the panel titles start under both.
    assert fig.layout.margin.t - note.font.size >= 44


@pytest.mark.parametrize("title", ["Loss · train (thin) · held-out (dots)", "Accuracy (held-out) · target 95%",
                                   "Best head's anti-diagonal score", "x"])
def test_titles_wrap_between_words_and_lose_nothing(title, projector_mode):
    lines = charts.title_lines(title)
    assert " ".join(lines) == title
    assert all(len(line) <= charts.TITLE_CHARS[True] for line in lines)


def test_a_legend_gets_its_own_line_under_the_title():
    one = charts.line_chart({"loss": ([1, 2], [3, 2])}, title="Loss")
    two = charts.line_chart({"a": ([1, 2], [3, 2]), "b": ([1, 2], [2, 1])}, title="Loss")
    assert two.layout.margin.t > one.layout.margin.t


@pytest.mark.parametrize("where", ["below", "right"])
def test_a_moved_legend_leaves_no_empty_line_under_the_title(where):
    two = charts.line_chart({"a": ([1, 2], [3, 2]), "b": ([1, 2], [2, 1])}, title="Loss")
    one = charts.line_chart({"a": ([1, 2], [3, 2])}, title="Loss")
    moved = charts.move_legend(two, where)
    assert moved.layout.margin.t == one.layout.margin.t
    assert moved.layout.legend.orientation == ("h" if where == "below" else "v")


def test_a_log_axis_labels_a_few_round_ticks_in_full():
    fig = charts.line_chart({"a": ([1, 2, 3], [2.4, 0.3, 0.013]), "b": ([1, 2], [1.1, 0.02])}, log_y=True)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.tickformat == "~g"  # 0.05, never a bare 5
    assert list(fig.layout.yaxis.tickvals) == [0.03, 0.1, 0.3, 1.0]  # 1-2-5 would give seven, more than six


def test_a_long_token_is_cut_on_the_axis_and_kept_apart_from_its_look_alike():
    long = "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz"
    fig = charts.heatmap(np.eye(3), x=[long, long + "es", "kurz"], y=["a", "b", "c"], zmin=0.0, zmax=1.0)
    columns = list(fig.data[0].x)
    assert columns[0] == long[: hm.AXIS_LABEL_CHARS - 1] + "…"
    assert columns[2] == "kurz" and len(set(columns)) == 3  # the two cut alike stay two columns


def test_a_waiting_curve_breaks_its_title_to_the_width_the_browser_gives_it():
    import json
    import re

    from ui.training import curves

    _, spec = curves.waiting_chart(curves.WAITING[0])
    expr = spec["title"]["text"]["expr"]

    def lines(width: int) -> list[str]:
        """The title's lines where the chart is ``width`` pixels wide, as Vega evaluates the expression."""
        for need, shown in re.findall(r"width >= (\d+) \? (\[[^\]]*\])", expr):
            if width >= int(need):
                return json.loads(shown)
        return json.loads(expr.rsplit(" : ", 1)[1])

    size = spec["title"]["fontSize"]
    for width in (120, 180, 260, 400, 900):
        shown = lines(width)
        assert " ".join(shown) == "📉 The loss curve starts with the first training step."  # whole, never cut
        assert all(0.55 * size * len(line) <= width for line in shown) or len(shown) == len(lines(0))
    assert len(lines(900)) == 2 and len(lines(180)) > len(lines(400))  # fewer lines where there is room


def test_on_a_phone_a_row_of_maps_goes_one_under_the_other(monkeypatch):
    mats, titles = [np.eye(3)] * 3, ["Sinusoidal", "Learned", "Rotary"]
    wide = charts.heatmap_row(mats, titles, x_title="dimension")
    monkeypatch.setattr(charts, "phone", lambda: True)
    stacked = charts.heatmap_row(mats, titles, x_title="dimension")
    domains = [stacked.layout[f"yaxis{'' if k == 0 else k + 1}"].domain for k in range(3)]
    assert all(a[0] >= b[1] for a, b in zip(domains, domains[1:], strict=False))  # one under the other
    assert [a.text for a in stacked.layout.annotations] == titles and stacked.layout.height > wide.layout.height
    assert len({stacked.layout[f"xaxis{'' if k == 0 else k + 1}"].domain for k in range(3)}) == 1  # the full width


def test_on_a_phone_chart_titles_break_into_shorter_lines(monkeypatch):
    from ui.common import chart_style

    title = "Attention weights of a random decoder with a causal mask"
    assert max(len(line) for line in chart_style.title_lines(title)) > chart_style.PHONE_TITLE_CHARS
    monkeypatch.setattr(chart_style, "phone", lambda: True)
    lines = chart_style.title_lines(title)
    assert " ".join(lines) == title and all(len(line) <= chart_style.PHONE_TITLE_CHARS for line in lines)
