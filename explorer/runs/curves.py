"""A run's curves made short enough to redraw: :func:`thin_series`.

The live view redraws a run's loss and metric curves several times a second, and a long run's history holds a
row per evaluation or step. Thinning keeps each redraw's data small while the curve keeps its shape; it is plain
numpy, so the services and their tests use it without Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["thin_series"]


def thin_series(xs: Sequence[float], ys: Sequence[float], max_points: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points of a curve: each point is the mean of an equal run of neighbours.

    Keeps redrawing a long loss curve cheap while preserving its shape (a plain stride would keep the noise).
    """
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    counts = np.diff(edges)
    return np.add.reduceat(x, edges[:-1]) / counts, np.add.reduceat(y, edges[:-1]) / counts
