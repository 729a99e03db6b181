"""Every export, downloaded through the real browser and opened: PNG/GIF decode, CSV/JSON parse, NPY/NPZ and
safetensors load — and the numbers agree with each other and with independent formulas."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from PIL import Image
from playwright.sync_api import expect
from safetensors.numpy import load as load_safetensors

from tests.e2e.actions import click_radio_option, metric, open_expander, open_page
from tests.e2e.conftest import assert_no_exception, wait_for_app
from transformer_core.checkpoint import load_checkpoint

RUN_STEPS = 12  # a short training run: attention snapshots at step 0 and at the end


def download(page, button_name: str, scope=None) -> tuple[str, bytes]:
    """Click the download button ``button_name`` (inside ``scope`` if given); return (file name, bytes)."""
    where = scope if scope is not None else page
    with page.expect_download() as info:
        where.get_by_role("button", name=button_name, exact=True).first.click()
    return info.value.suggested_filename, Path(info.value.path()).read_bytes()


def _png(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def _csv_matrix(text: str) -> tuple[list[str], np.ndarray]:
    """A labelled matrix CSV (header of column labels, one labelled row per matrix row)."""
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0][1:], np.array([[float(v) for v in row[1:]] for row in rows[1:]])


def _svg_root(data: bytes) -> ET.Element:
    root = ET.fromstring(data.decode("utf-8"))
    assert root.tag.endswith("svg")
    return root


def test_attention_lab_exports(page):
    open_page(page, "/attention")
    click_radio_option(page, "One head")
    name, png = download(page, "PNG")
    assert name == "attention_L1_H1.png" and _png(png).format == "PNG" and _png(png).width > 100
    _, svg = download(page, "SVG")
    assert len(_svg_root(svg).findall(".//{http://www.w3.org/2000/svg}rect")) >= 36  # one per cell
    _, text = download(page, "CSV")
    labels, from_csv = _csv_matrix(text.decode())
    assert labels == ["the", "cat", "sat", "on", "the", "mat"]
    np.testing.assert_allclose(from_csv.sum(axis=1), 1.0, atol=1e-6)  # softmax rows
    _, npy = download(page, "NPY")
    np.testing.assert_allclose(np.load(io.BytesIO(npy), allow_pickle=False), from_csv, rtol=1e-6)

    click_radio_option(page, "All layers × heads")
    _, npy_all = download(page, "NPY (all)")
    weights = np.load(io.BytesIO(npy_all), allow_pickle=False)
    assert weights.shape == (2, 2, 6, 6)  # layer, head, query, key (default: 2 layers, 2 heads, 6 tokens)
    np.testing.assert_allclose(weights[0, 0], from_csv, rtol=1e-6)
    _, long_csv = download(page, "CSV (all)")
    rows = list(csv.DictReader(io.StringIO(long_csv.decode())))
    assert len(rows) == weights.size
    first = rows[0]
    assert (first["query_label"], first["key_label"]) == ("the", "the")
    assert float(first["weight"]) == float(weights[0, 0, 0, 0])
    assert_no_exception(page)


def test_positional_table_matches_the_paper_formula(page):
    open_page(page, "/positional")
    open_expander(page, "The numbers and downloads")
    name, npy = download(page, "NPY")
    table = np.load(io.BytesIO(npy), allow_pickle=False)
    assert name == "sinusoidal_64x32.npy" and table.shape == (64, 32)
    pos, i = np.arange(64)[:, None], np.arange(16)[None, :]
    angle = pos / 10000 ** (2 * i / 32)  # Vaswani et al. (2017), section 3.5
    np.testing.assert_allclose(table[:, 0::2], np.sin(angle), atol=1e-5)
    np.testing.assert_allclose(table[:, 1::2], np.cos(angle), atol=1e-5)
    _, text = download(page, "CSV")
    np.testing.assert_allclose(_csv_matrix(text.decode())[1], table, atol=1e-6)
    _, png = download(page, "PNG")
    assert _png(png).size[0] > 200


def test_vit_and_model_builder_exports(page):
    open_page(page, "/vit")
    open_expander(page, "Download layer 1")
    name, npy = download(page, "NPY (all)")
    attention = np.load(io.BytesIO(npy), allow_pickle=False)
    assert name == "vit_attention_layer1.npy" and attention.shape == (4, 65, 65)  # heads, CLS + 64 patches
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
    _, text = download(page, "CSV (all)")
    rows = list(csv.DictReader(io.StringIO(text.decode())))
    assert len(rows) == attention.size and float(rows[-1]["value"]) == float(attention[-1, -1, -1])

    open_page(page, "/builder")
    name, svg = download(page, "Download the diagram (SVG)")
    texts = " ".join(t.text or "" for t in _svg_root(svg).iter("{http://www.w3.org/2000/svg}text"))
    assert name.endswith(".svg") and "multi-head self-attention" in texts.lower(), texts[:300]
    assert_no_exception(page)


def _train_short_run(page) -> None:
    open_page(page, f"/training?steps={RUN_STEPS}")
    page.get_by_role("button", name="Start").click()
    expect(metric(page, "Step")).to_have_text(re.compile(rf"^{RUN_STEPS} / {RUN_STEPS}$"), timeout=180_000)
    wait_for_app(page)
    assert_no_exception(page)


def test_live_training_exports(page):
    _train_short_run(page)
    open_expander(page, "Downloads and checkpoints")
    _, text = download(page, "Metrics (CSV)")
    history = list(csv.DictReader(io.StringIO(text.decode())))
    assert [int(r["step"]) for r in history] == list(range(1, RUN_STEPS + 1))
    losses = [float(r["loss"]) for r in history]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]

    _, config_text = download(page, "Config (JSON)")
    config = json.loads(config_text)
    assert config["task"] == "reverse" and config["runs"][0]["training"]["steps"] == RUN_STEPS

    name, weights = download(page, "Checkpoint")
    assert name == "reverse.safetensors"
    tensors = load_safetensors(weights)
    assert all(np.isfinite(t).all() for t in tensors.values())
    loaded = load_checkpoint(weights, expected_task="reverse")
    assert loaded.config.d_model == config["runs"][0]["model"]["d_model"]
    assert loaded.extra["step"] == RUN_STEPS

    _, npz = download(page, "All kinds (NPZ)")
    archive = np.load(io.BytesIO(npz), allow_pickle=False)
    steps = archive["steps"]
    assert steps[0] == 0 and steps[-1] == RUN_STEPS
    assert set(archive.files) == {"steps", "encoder", "decoder", "cross"}
    maps = [archive[k] for k in archive.files if k != "steps"]
    assert all(m.shape[0] == len(steps) and m.ndim == 5 for m in maps)  # (N, L, H, T, S)
    np.testing.assert_allclose(maps[0].astype(np.float32).sum(-1), 1.0, atol=2e-2)  # float16 softmax rows

    name, npy = download(page, "Attention (NPY)")  # the kind on show: cross-attention for reverse
    assert name == "reverse-cross-attention.npy"
    np.testing.assert_array_equal(np.load(io.BytesIO(npy), allow_pickle=False), archive["cross"])

    _, gif = download(page, "GIF")
    animation = Image.open(io.BytesIO(gif))
    assert animation.format == "GIF" and animation.n_frames == len(steps)
    animation.seek(animation.n_frames - 1)
    animation.load()
    assert_no_exception(page)
