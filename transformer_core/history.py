"""A training run's history (one row per step) as a table: plain rows, CSV text or, optionally, a DataFrame.

Only evaluation steps carry ``eval_loss`` and the task's metrics, so rows differ in their keys; every export
here lines them up under one set of columns, leaving the evaluation columns empty between evaluations.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

Row = dict[str, float]
FIRST_COLUMNS = ("step", "loss", "lr", "seconds")  # every row has these; evaluation columns follow


def history_columns(history: Sequence[Row]) -> list[str]:
    """Column names: the per-step ones first, then every other key in order of first appearance."""
    columns = list(FIRST_COLUMNS)
    for row in history:
        columns.extend(k for k in row if k not in columns)
    return columns


def history_rows(history: Sequence[Row]) -> list[dict[str, float | None]]:
    """Rows with every column present: ``None`` where a step has no value (evaluation columns between evals)."""
    columns = history_columns(history)
    return [{c: row.get(c) for c in columns} for row in history]


def history_csv(history: Sequence[Row]) -> str:
    """The history as CSV text with a header line; missing values are empty fields."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=history_columns(history), lineterminator="\n")
    writer.writeheader()
    writer.writerows(history)
    return buffer.getvalue()


def history_frame(history: Sequence[Row]) -> Any:
    """The history as a pandas ``DataFrame``. pandas is optional (the library does not depend on it).

    Raises:
        ImportError: with a hint when pandas is not installed.
    """
    try:
        import pandas as pd
    except ImportError as err:
        raise ImportError("metrics_frame() needs pandas (pip install pandas); metrics_rows() and "
                          "metrics_csv() give the same table without it.") from err
    return pd.DataFrame(history_rows(history), columns=history_columns(history))
