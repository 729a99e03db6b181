"""Tables in the page's language: a German page's tables write "0,5403", and their values stay numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from explorer.i18n import using_language
from tests.app.conftest import app_at, assert_no_exception
from ui.common import tables
from ui.positional import views as pv


def shown(styled) -> list[str]:
    """The texts a styled table's cells display, row by row."""
    return [styled._display_funcs[(r, c)](v) for r, row in enumerate(styled.data.itertuples(index=False))
            for c, v in enumerate(row)]


def test_a_german_table_writes_a_decimal_comma_with_the_decimals_its_column_needs():
    with using_language("de"):
        styled = tables.localized({"a": [0.12345, -1.5, None], "b": [0.5, 1234.25, 2.0], "word": ["x", "y", "z"]})
    assert isinstance(styled, pd.io.formats.style.Styler)
    cells = shown(styled)
    assert cells == ["0,1235", "0,50", "x", "-1,5000", "1.234,25", "y", "", "2,00", "z"]  # a missing one is empty
    assert styled.data["a"].dtype == float  # the values underneath stay numbers: a column sorts by value


@pytest.mark.parametrize("data", [{"a": [0.5, 0.25]}, np.zeros((300, 100))])
def test_an_english_table_or_a_large_one_is_left_to_streamlit(data):
    with using_language("en"):
        assert isinstance(tables.localized({"a": [0.5, 0.25]}), pd.DataFrame)
    with using_language("de"):
        assert isinstance(tables.localized(np.zeros((100, 100))), pd.DataFrame)  # 10,000 cells: 0.3 s to style


def test_the_positional_comparison_table_reads_in_german():
    with using_language("de"):
        at = app_at("pages/positional.py", query={"lang": "de"})
        at.radio(key=pv.SECTION).set_value("compare").run()
    assert_no_exception(at)
    styled = [f for f in at.dataframe if f.proto.arrow_data.styler.display_values]
    assert styled, "no table of the page was written in the page's language"
    texts = pa.ipc.open_stream(styled[0].proto.arrow_data.styler.display_values).read_all().to_pandas()
    numbers = [t for t in texts.to_numpy().ravel() if isinstance(t, str) and t[-1:].isdigit()]
    assert numbers and all("," in t and "." not in t for t in numbers), numbers  # "0,9521", never "0.9521"
    values = pa.ipc.open_stream(styled[0].proto.arrow_data.data).read_all().to_pandas()
    assert any(values[c].dtype == float for c in values.columns)  # and the values stay numbers
