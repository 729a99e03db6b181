"""Tables in the page's language: ``st.dataframe`` with its numbers written as the page writes them.

Streamlit writes a table's numbers with a point whatever the page's language, so a German page read "0.5403" in its
tables beside "0,5403" in its text. Where the page's language writes numbers otherwise, :func:`dataframe` hands
Streamlit the numbers as the language writes them, as display values (a pandas ``Styler``): the values underneath
stay numbers, so a column still sorts by value, and a table's CSV download is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from pandas.api.types import is_float_dtype

from explorer.i18n import num, separators

MAX_STYLED_CELLS = 2_000  # larger tables keep Streamlit's own numbers: Streamlit's styling costs ~30 µs a cell
MAX_DECIMALS = 4  # decimals a table shows at most (Streamlit's own default)


def dataframe(data: Any, **kwargs: Any) -> None:
    """``st.dataframe(data, **kwargs)`` with its numbers in the page's language (see the module's note)."""
    st.dataframe(localized(data), **kwargs)


def localized(data: Any) -> pd.DataFrame | Any:
    """``data`` as a frame whose decimal numbers display in the page's language: a ``Styler``
    where that language writes numbers otherwise than Streamlit, else the frame itself."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    if separators() == (".", ",") or frame.size > MAX_STYLED_CELLS:
        return frame
    formats: dict[Any, Callable[[Any], str]] = {}
    for i, column in enumerate(frame.columns):
        values = frame.iloc[:, i]
        if is_float_dtype(values):
            formats[column] = _writer(_decimals(values))
    if not formats or not frame.columns.is_unique:
        return frame
    return frame.style.format(formats)


def _writer(digits: int) -> Callable[[Any], str]:
    """A cell's text: the number with ``digits`` decimals in the page's separators (the ones active now: a table is
    written out later), empty for a missing one. Python's own format with the separators swapped: Babel's, per
    cell, cost a table of a few thousand numbers a tenth of a second."""
    decimal, group = separators()
    swap = str.maketrans({",": group, ".": decimal})

    def write(value: Any) -> str:
        if value is None or not np.isfinite(value):
            return "" if value is None or np.isnan(value) else num(float(value))
        return f"{value:,.{digits}f}".translate(swap)

    return write


def _decimals(values: pd.Series) -> int:
    """The decimals a float column needs to show its values as Streamlit would (at most :data:`MAX_DECIMALS`)."""
    finite = values[np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))]
    for digits in range(MAX_DECIMALS):
        if np.allclose(finite, np.round(finite, digits), rtol=0, atol=10 ** -(MAX_DECIMALS + 2)):
            return digits
    return MAX_DECIMALS
