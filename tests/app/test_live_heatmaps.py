"""Live heatmaps travel as small integer columns; Vega-Lite's transforms must give back the weights and labels."""

from __future__ import annotations

import dataclasses
import io
import json
import re

import numpy as np
import pyarrow as pa
import pytest

from explorer.runs.live import LiveRun, RunSpec
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config
from ui.training import heatmaps


def trained_run(task_name: str = "reverse", **options) -> LiveRun:
    task = get_task(task_name, **options)
    run = LiveRun(task, [RunSpec("A", task.default_model_config(), default_train_config(task, steps=4))])
    run.start()
    while run.status == "running":
        run.advance(1.0)
    return run


def apply(transform: list[dict[str, str]], row: dict) -> dict:
    """Evaluate the chart's two kinds of ``calculate``: ``datum.w / N`` and ``[labels...][datum.x]``."""
    out = dict(row)
    for step in transform:
        expr = step["calculate"]
        if m := re.fullmatch(r"datum\.(\w+) / (\d+)", expr):
            out[step["as"]] = out[m[1]] / int(m[2])
        else:
            m = re.fullmatch(r"(\[.*\])\[datum\.(\w+)\]", expr)
            out[step["as"]] = json.loads(m[1])[out[m[2]]]
    return out


def arrow_bytes(frame) -> int:
    sink = io.BytesIO()
    table = pa.Table.from_pandas(frame)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.tell()


def test_the_chart_gives_back_every_weight_and_token_label():
    run = trained_run("reverse", seq_len=5, eval_size=16)
    snap = run.trainers[0].snapshots[-1]
    for kind, maps in snap.attention.items():
        data, spec = heatmaps.attention_chart(run.frame(), 0, snap, kind)
        rows, cols = run.task.attention_example()["labels"][kind]
        for record in data.sample(40, random_state=0).to_dict("records"):
            cell = apply(spec["transform"], record)
            expected = maps[cell["layer"] - 1, cell["head"] - 1, cell["q"], cell["k"]]
            assert abs(cell["weight"] - expected) <= 0.0005
            assert (cell["query"], cell["key"]) == (rows[cell["q"]], cols[cell["k"]])
        assert {t["field"] for t in spec["spec"]["encoding"]["tooltip"]} >= {"query", "key", "weight"}


def test_a_frame_is_several_times_smaller_than_labelled_float_rows():
    run = trained_run("char_lm")
    snap = run.trainers[0].snapshots[-1]
    kind = next(iter(snap.attention))
    data, _ = heatmaps.attention_chart(run.frame(), 0, snap, kind)
    rows, cols = run.task.attention_example()["labels"][kind]
    wide = data.assign(weight=data["w"] / 1000.0, query=np.asarray(rows, dtype=object)[data["q"]],
                       key=np.asarray(cols, dtype=object)[data["k"]]).drop(columns="w")
    wide = wide.astype({"layer": "int64", "head": "int64", "q": "int64", "k": "int64"})
    assert arrow_bytes(data) * 3 < arrow_bytes(wide)


def test_the_running_grid_fits_one_configuration_or_two_side_by_side():
    task = get_task("char_lm")
    specs = [RunSpec(name, task.default_model_config(), default_train_config(task, steps=2)) for name in "AB"]
    for lanes in (specs[:1], specs):
        run = LiveRun(task, lanes)
        run.step_once()
        snap = run.trainers[0].snapshots[-1]
        html, width = heatmaps.attention_picture(run.frame(), 0, snap, "decoder")
        column = (heatmaps.COLUMN_PX - heatmaps.COLUMN_GAP_PX * (len(lanes) - 1)) // len(lanes)
        # about as wide as the chart shown on Pause (its colour bar beside it), never wider than its column
        assert column - 130 < width <= column and f"width:{width}px" in html
        layers, heads, t, s = snap.attention["decoder"].shape
        assert html.count('<img src="data:image/png') == layers * heads + 1  # the maps and the colour bar
        assert f"{layers} layers × {heads} heads" in html and f"{t} × {s}" in html and f"step {snap.step}" in html


def _grid_spec(layers: int, heads: int, lanes: int) -> dict:
    task = get_task("reverse")
    config = dataclasses.replace(task.default_model_config(), n_layers=layers, n_heads=heads, d_model=32, d_ff=64)
    run = LiveRun(task, [RunSpec(name, config, default_train_config(task, steps=2)) for name in "AB"[:lanes]])
    run.step_once()
    snap = run.trainers[0].snapshots[-1]
    return heatmaps.attention_chart(run.frame(), 0, snap, "cross")[1]


def test_a_grid_too_narrow_for_its_names_numbers_its_heads_under_one_title_and_drops_token_labels():
    small = _grid_spec(2, 4, 1)
    assert small["facet"]["column"]["title"] is None and "head" in small["facet"]["column"]["header"]["labelExpr"]
    assert small["spec"]["encoding"]["x"]["axis"].get("labels") is not False  # four wide maps: every token named
    big = _grid_spec(8, 16, 2)  # 16 heads in half the width: maps about 14 pixels wide
    column, row = big["facet"]["column"], big["facet"]["row"]
    assert column["title"] == "head" and row["title"] == "layer"
    assert "head" not in column["header"]["labelExpr"] and "layer" not in row["header"]["labelExpr"]
    assert "% 2 == 0" in column["header"]["labelExpr"]  # every second number: two digits would touch
    assert big["spec"]["encoding"]["x"]["axis"]["labels"] is False
    assert big["spec"]["encoding"]["y"]["axis"]["labels"] is False


@pytest.mark.parametrize(("heads", "lanes"), [(1, 1), (4, 1), (4, 2), (8, 2)])
def test_the_paused_grid_leaves_room_for_its_colour_bar(heads, lanes):
    spec = _grid_spec(2, heads, lanes)
    cell = spec["spec"]["width"]
    drawn = 60 + heads * cell + (heads - 1) * spec["spacing"] + heatmaps._legend_px()  # headers, maps, colour bar
    assert drawn <= heatmaps.MAIN_WIDTH_PX // lanes  # the colour bar's title stayed inside a 1400-pixel page
    assert cell == heatmaps.MAX_CELL_PX or drawn > heatmaps.MAIN_WIDTH_PX // lanes - heads * 12 - 12  # and fills it
