"""Heatmap exports: the hand-written Pillow/SVG renderer against vl-convert (Vega-Lite to PNG without a browser).

Both draw the same :class:`~explorer.render.heatmap.HeatmapSpec` (an attention map of 8 tokens and a 16 × 16 one). Each
renderer runs in a fresh Python process, so that its imports and memory are its own, and reports

- the time to import it and make the first PNG, and the median time of a PNG after that,
- the resident memory (VmRSS) the renderer adds to a process that has Streamlit loaded, as the app has, and the
  size of the installed package,
- fidelity: the largest difference (0–255, any channel) between a cell's pixel in the PNG and the colour that
  :func:`explorer.render.heatmap.colours` gives its value — the colour of the same cell in the chart on screen.

Usage::

    python benchmarks/exports.py                       # vl-convert measured if it can be imported
    python benchmarks/exports.py --vl-path /tmp/vlc    # vl-convert installed with pip --target elsewhere
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from explorer.render import heatmap as hm  # noqa: E402  (needs ROOT on the path)

CELL = 40  # pixels per cell in the fidelity check
RUNS = 20


def _specs() -> list[hm.HeatmapSpec]:
    rng = np.random.default_rng(0)
    out = []
    for n in (8, 16):
        logits = rng.normal(scale=2.0, size=(n, n))
        w = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        out.append(hm.attention_spec(w, [f"t{i}" for i in range(n)], [f"t{i}" for i in range(n)], title="A"))
    return out


def _rss_mb() -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def _pillow(spec: hm.HeatmapSpec) -> tuple[bytes, tuple[int, int]]:
    from explorer.render.heatmap_image import layout, spec_png

    lay = layout(spec, CELL)
    return spec_png(spec, cell_px=CELL), (lay.left, lay.top)


def _vega_screen(spec: hm.HeatmapSpec) -> bytes:
    """The chart the Attention Lab shows (cells, their text, axes, title), as PNG: what a PNG export would cost."""
    import vl_convert

    from ui.common.vega_heatmap import vega_heatmap

    data, chart = vega_heatmap(spec, height=spec.values.shape[0] * CELL)
    chart = chart | {"width": spec.values.shape[1] * CELL,
                     "data": {"values": data.to_pylist()}}
    return vl_convert.vegalite_to_png(chart, scale=1)


def _vega(spec: hm.HeatmapSpec) -> tuple[bytes, tuple[int, int]]:
    """The cells alone at known places (no axes), so their pixels can be checked."""
    import vl_convert

    rows, cols = spec.values.shape
    frame = [{"r": i, "c": j, "v": float(spec.values[i, j]), "t": str(spec.text[i, j])}
             for i in range(rows) for j in range(cols)]
    scale = {"domain": [spec.zmin, spec.zmax], "range": list(hm.stops(spec.scale)), "interpolate": "rgb"}
    axis = {"type": "quantitative", "axis": None, "scale": {"nice": False, "zero": False}}
    chart = {"data": {"values": frame}, "width": cols * CELL, "height": rows * CELL, "padding": 0,
             "autosize": "none", "config": {"view": {"stroke": None}},
             "transform": [{"calculate": "datum.c + 1", "as": "c1"}, {"calculate": "datum.r + 1", "as": "r1"}],
             "layer": [{"mark": "rect", "encoding": {
                 "x": {"field": "c", **axis, "scale": {"domain": [0, cols], "nice": False}}, "x2": {"field": "c1"},
                 "y": {"field": "r", **axis, "scale": {"domain": [rows, 0], "nice": False}}, "y2": {"field": "r1"},
                 "color": {"field": "v", "type": "quantitative", "scale": scale, "legend": None}}}]}
    return vl_convert.vegalite_to_png(chart, scale=1), (0, 0)


def worker(name: str) -> dict:
    """Run in a child process: time and check one renderer."""
    from PIL import Image

    import ui.common.vega_heatmap  # noqa: F401  (the app has Streamlit loaded already: count only the renderer)

    base = _rss_mb()
    draw = {"pillow": _pillow, "vl-convert": _vega}[name]
    timed = {"pillow": lambda s: _pillow(s)[0], "vl-convert": _vega_screen}[name]
    specs, start = _specs(), time.perf_counter()
    timed(specs[0])
    first = time.perf_counter() - start
    times, worst = [], 0
    for k in range(RUNS):
        spec = specs[k % 2]
        start = time.perf_counter()
        timed(spec)
        times.append(time.perf_counter() - start)
        png, (left, top) = draw(spec)
        img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        expected = spec.colours()
        for i, j in np.ndindex(spec.values.shape):  # a cell's corner, away from its printed number
            got = img[top + i * CELL + 3, left + j * CELL + 3].astype(int)
            worst = max(worst, int(np.abs(got - expected[i, j]).max()))
    return {"first_s": first, "png_s": statistics.median(times), "rss_mb": _rss_mb() - base, "max_diff": worst}


def _size_mb(module: str, extra: list[str]) -> float:
    code = f"import {module}, pathlib; print(pathlib.Path({module}.__file__).parent)"
    path = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": ":".join(extra)}).stdout.strip()
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--vl-path", default="", help="a folder holding vl_convert (pip install --target)")
    args = parser.parse_args()
    if args.worker:
        if args.vl_path:
            sys.path.insert(0, args.vl_path)
        print(json.dumps(worker(args.worker)))
        return
    results = {}
    for name in ("pillow", "vl-convert"):
        cmd = [sys.executable, __file__, "--worker", name] + (["--vl-path", args.vl_path] if args.vl_path else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            print(f"{name}: not measured ({done.stderr.strip().splitlines()[-1]})")
            continue
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    sizes = {"pillow": _size_mb("PIL", []), "vl-convert": _size_mb("vl_convert", [args.vl_path])
             if "vl-convert" in results else float("nan")}
    print(f"{'renderer':<11} {'first PNG s':>11} {'per PNG s':>9} {'+RSS MB':>7} {'package MB':>10} "
          f"{'max colour diff':>15}")
    for name, r in results.items():
        print(f"{name:<11} {r['first_s']:11.3f} {r['png_s']:9.4f} {r['rss_mb']:7.0f} {sizes[name]:10.1f} "
              f"{r['max_diff']:15d}")
    if len(results) == 2:
        p, v = results["pillow"], results["vl-convert"]
        print(f"\nvl-convert / pillow: first PNG {v['first_s'] / p['first_s']:.1f}x, per PNG "
              f"{v['png_s'] / p['png_s']:.1f}x, memory {v['rss_mb'] / max(p['rss_mb'], 1):.1f}x, "
              f"package {sizes['vl-convert'] / sizes['pillow']:.1f}x")
    print(f"Median of {RUNS} PNGs (8 x 8 and 16 x 16 attention maps) after the first; colour diff 0 = exact.")


if __name__ == "__main__":
    main()
