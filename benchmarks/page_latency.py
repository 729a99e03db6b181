"""Time the four explorer pages headlessly: first render and typical interactions, with a 2-second target.

For the Attention Lab, Positional Encodings, ViT Patching and Model Builder pages this script measures, with
Streamlit's ``AppTest`` (the script runner without a server or browser), how long the page's script takes

- to render for a new session (the app is opened on its home page first, untimed, then the page is switched to),
- to rerun after 2-3 typical interactions at the default sizes (each repeat uses a new value where the page caches
  its results, so the work is really done).

Every figure is the median of ``--runs`` repeats. The times cover the Python side only: sending the result to a
browser and drawing it there (plotly charts, images) come on top and are not measured here. The first render of
the first page also pays for imports and cold caches; it is reported separately.

Usage::

    python benchmarks/page_latency.py             # 3 runs per figure
    python benchmarks/page_latency.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere: the app imports ui and transformer_core from the repository

from streamlit.testing.v1 import AppTest  # noqa: E402  (after the path is set)

APP = str(ROOT / "app.py")
TARGET_S = 2.0  # a page should answer within this many seconds
TIMEOUT_S = 120  # one script run may take this long before AppTest gives up


@dataclass(frozen=True)
class Interaction:
    """One widget change: which widget, and the values the repeats set (one per repeat, cycled)."""

    label: str
    kind: str  # the AppTest collection: "selectbox", "radio", "slider", ...
    key: str
    values: tuple


PAGES: dict[str, tuple[str, list[Interaction]]] = {
    "Attention Lab": ("pages/attention.py", [
        Interaction("type a new sentence", "text_input", "attn.text",
                    ("a cat naps in the sun", "attention is all you need", "the quick brown fox jumps")),
        Interaction("change the heads", "selectbox", "attn.heads", (4, 8, 1)),
        Interaction("switch the view", "radio", "attn.view", ("grid", "lines", "head")),
    ]),
    "Positional Encodings": ("pages/positional.py", [
        Interaction("move max_len", "slider", "pe.max_len", (32, 128, 200)),
        Interaction("switch the section", "radio", "pe.section", ("relative", "compare", "shuffle")),
    ]),
    "ViT Patching": ("pages/vit.py", [
        Interaction("change the patch size", "select_slider", "vit.patch", (16, 4, 32)),
        Interaction("change the heads", "selectbox", "vit.heads", (2, 8, 1)),
        Interaction("pick another sample", "selectbox", "vit.sample", ("smiley", "digit", "shapes")),
    ]),
    "Model Builder": ("pages/builder.py", [
        Interaction("change d_model", "select_slider", "mb.d_model", (128, 256, 512)),
        Interaction("change the family", "radio", "mb.kind", ("encoder", "seq2seq", "vit")),
        Interaction("change the layers", "number_input", "mb.layers", (4, 12, 24)),
    ]),
}


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _check(at: AppTest, what: str) -> None:
    if at.exception:
        raise RuntimeError(f"{what}: the page raised {[e.message for e in at.exception]}")


def open_page(page: str) -> tuple[AppTest, float]:
    """A new session on the home page (untimed), then the switch to ``page``; returns it and the render time."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    at.run()
    at.switch_page(page)
    seconds = _timed(at.run)
    _check(at, page)
    return at, seconds


def measure(runs: int) -> list[tuple[str, str, list[float]]]:
    """(page, action, seconds of each repeat) for every page and interaction."""
    rows = []
    for title, (page, interactions) in PAGES.items():
        renders, sessions = [], []
        for _ in range(runs):
            at, seconds = open_page(page)
            renders.append(seconds)
            sessions.append(at)
        rows.append((title, "first render (new session)", renders))
        for step in interactions:
            times = []
            for i, at in enumerate(sessions):
                widget = getattr(at, step.kind)(key=step.key).set_value(step.values[i % len(step.values)])
                times.append(_timed(widget.run))
                _check(at, f"{title}: {step.label}")
            rows.append((title, step.label, times))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="repeats per figure; the median is shown")
    args = parser.parse_args()
    cold_at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    cold = _timed(cold_at.run)
    rows = measure(max(1, args.runs))
    width = max(len(f"{page} · {action}") for page, action, _ in rows)
    print(f"Cold start (imports, first run of the home page): {cold:.2f} s\n")
    print(f"{'page · action':<{width}}  median s   min s   max s  under {TARGET_S:g} s")
    print("-" * (width + 40))
    for page, action, times in rows:
        median = statistics.median(times)
        verdict = "yes" if median < TARGET_S else "NO"
        print(f"{f'{page} · {action}':<{width}}  {median:8.3f}  {min(times):6.3f}  {max(times):6.3f}  {verdict}")
    print(f"\nMedian of {max(1, args.runs)} runs each; AppTest script time only (no browser drawing).")


if __name__ == "__main__":
    main()
