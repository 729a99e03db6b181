"""Streamlit's options read without its process-wide lock (ui.common.st_costs): the
same values as Streamlit's own reads, no wait while another thread holds the lock, and every change seen at once."""

from __future__ import annotations

import gc
import threading

import pyarrow as pa
import pytest
from streamlit import config, dataframe_util
from streamlit.testing.v1.util import patch_config_options

from ui.common import st_costs, st_internals

VERSION = f"Streamlit {st_internals.streamlit_version()} changed an internal that ui/common/st_costs.py reads"
NAMES = ("get_option", "get_options_for_section", "_set_option")
WRITE = "convert_arrow_table_to_arrow_bytes"  # Streamlit's writer of a chart's data
# Streamlit's own functions, taken when this module is imported (before any test's patch of them is in place)
GENUINE = {name: getattr(config, name) for name in NAMES}
PER_ELEMENT = "global.minCachedMessageSize"  # read for every element a page sends (forward_msg_cache)


@pytest.fixture
def genuine_config(monkeypatch):
    """Streamlit's own functions while the test runs (not the tests' patched ones), and afterwards everything as it
    was: the lock-free reads undone if the test installed them (the Arrow writer stays as it is)."""
    for name, function in GENUINE.items():
        monkeypatch.setattr(config, name, function)
    yield
    config._on_config_parsed.disconnect(st_costs._forget)
    for name in NAMES:
        st_costs._GENUINE.pop(name, None)
    st_costs._forget()


@pytest.fixture
def lock_free(genuine_config):
    """Lock-free reads installed, and the options the tests set put back afterwards."""
    saved = {name: config.get_option(name) for name in (PER_ELEMENT, "server.port")}
    assert st_costs.read_config_without_lock(), VERSION
    yield
    for name, value in saved.items():
        config.set_option(name, value)


def _every_section() -> set[str]:
    return {option.section for option in config.get_config_options().values()}


def _in_a_thread(read, timeout_s: float = 10.0):
    """``read()`` in another thread; what it returned, or ``"waited"`` if it did not return within ``timeout_s``."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(read()), daemon=True)
    thread.start()
    thread.join(timeout_s)
    return result[0] if result else "waited"


def test_the_reads_give_what_streamlits_own_give(genuine_config):
    before = {key: config.get_option(key) for key in config.get_config_options()}
    sections = {section: config.get_options_for_section(section) for section in _every_section()}
    assert st_costs.read_config_without_lock(), VERSION
    assert config.get_option is not GENUINE["get_option"]
    assert {key: config.get_option(key) for key in before} == before
    assert {section: config.get_options_for_section(section) for section in sections} == sections
    assert "theme" in st_costs._current().sections, VERSION  # every script run reads its theme sections
    assert st_costs.read_config_without_lock()  # twice is once


def test_no_read_waits_while_another_thread_holds_the_config_lock(lock_free):
    expected = config.get_option(PER_ELEMENT)  # the first read after a change makes the copy, under the lock
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with config._config_lock:
            held.set()
            release.wait()

    threading.Thread(target=hold, daemon=True).start()
    assert held.wait(10)
    try:
        assert _in_a_thread(lambda: config.get_option(PER_ELEMENT)) == expected
        assert isinstance(_in_a_thread(lambda: config.get_options_for_section("theme")), dict)
    finally:
        release.set()


def test_a_set_option_and_a_new_parse_are_seen_at_once(lock_free):
    config.set_option(PER_ELEMENT, 4321)
    assert config.get_option(PER_ELEMENT) == 4321
    config.set_option("theme.primaryColor", "#123456")
    assert config.get_options_for_section("theme")["primaryColor"] == "#123456"
    config.get_config_options(force_reparse=True)  # the files read again: what set_option set is gone
    assert config.get_option(PER_ELEMENT) == GENUINE["get_option"](PER_ELEMENT) != 4321
    assert config.get_options_for_section("theme")["primaryColor"] != "#123456"


def test_an_option_worked_out_on_each_read_is_still_worked_out(lock_free):
    assert not st_costs._stored(config.get_config_options()["browser.serverPort"]), VERSION
    config.set_option("server.port", 8765)
    assert config.get_option("browser.serverPort") == 8765  # Streamlit works it out from server.port


def test_nothing_is_replaced_while_a_test_patches_streamlits_options(genuine_config):
    with patch_config_options({PER_ELEMENT: 1}):
        assert not st_costs.read_config_without_lock()
        assert config.get_option(PER_ELEMENT) == 1
    assert config.get_option is GENUINE["get_option"]  # the patch put Streamlit's own back, as it found it


@pytest.fixture
def counted_writes(monkeypatch) -> list[int]:
    """Streamlit's own writer of Arrow bytes, counted (the number of rows of each table it writes)."""
    genuine = st_costs._GENUINE.get(WRITE, getattr(dataframe_util, WRITE))
    assert getattr(genuine, "__module__", "") == dataframe_util.__name__, VERSION
    writes: list[int] = []

    def write(table: pa.Table) -> bytes:
        writes.append(table.num_rows)
        return genuine(table)

    write.__module__, write.__name__ = genuine.__module__, genuine.__name__  # taken for Streamlit's own
    monkeypatch.setattr(dataframe_util, WRITE, write)
    monkeypatch.setitem(st_costs._GENUINE, WRITE, write)
    return writes


def _table(rows: int) -> pa.Table:
    return pa.table({"step": list(range(rows)), "loss": [1.0 / (i + 1) for i in range(rows)]})


def test_a_shared_table_is_written_once_for_every_chart_that_sends_it(counted_writes):
    table = st_costs.send_once(_table(300))
    first = dataframe_util.convert_anything_to_arrow_bytes(table)  # what vega_lite_chart sends as the data
    assert counted_writes == [300]
    assert dataframe_util.convert_anything_to_arrow_bytes(table) is first  # the same bytes, not written again
    assert counted_writes == [300]
    assert pa.ipc.open_stream(first).read_all().equals(table)
    other = _table(300)  # a table nobody marked is written at every send, as before
    assert dataframe_util.convert_anything_to_arrow_bytes(other) == first
    assert dataframe_util.convert_anything_to_arrow_bytes(other) == first
    assert counted_writes == [300, 300, 300]


def test_the_bytes_go_with_their_table(counted_writes):
    table = st_costs.send_once(_table(50))
    dataframe_util.convert_anything_to_arrow_bytes(table)
    kept = len(st_costs._ARROW)
    del table
    gc.collect()
    assert len(st_costs._ARROW) == kept - 1
    again = st_costs.send_once(_table(60))  # a new table, perhaps at the same address, gets its own bytes
    assert pa.ipc.open_stream(dataframe_util.convert_anything_to_arrow_bytes(again)).read_all().num_rows == 60
