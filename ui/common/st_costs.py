"""Two costs Streamlit pays for every element a page sends, paid once instead (Streamlit is pinned; the tests
check each private name read here, naming the version if one moves).

Every element a page sends reads one of Streamlit's options (``config.get_option``), and every script run
reads its theme sections (``config.get_options_for_section``), through one process-wide lock
(``streamlit.config._config_lock``). Under a class a thread that loses the interpreter lock while it holds that lock
(a theme section walks all ~260 options) keeps every other session's elements waiting: measured at 2,200 waits
and 64 thread-seconds in one class benchmark. :func:`read_config_without_lock` makes both reads look in a copy of
the stored values instead, made under the lock and dropped whenever an option is set or the files are parsed
again; options Streamlit works out on each read are still read under its lock.

A chart's data goes to the browser as Arrow bytes, which Streamlit writes afresh at every call
(``dataframe_util.convert_arrow_table_to_arrow_bytes``); the live view's drawings are one Arrow table for all the
watchers of a run, and each write lets go of the interpreter lock three times (PyArrow's writer), so under a class
every watcher's chart waited its turn for the lock again, three times (a seventh of the server's busy samples beside
30 watchers). A table passed to :func:`send_once` is written once, when it is first sent, and its bytes kept as long
as the table lives.

Each installs itself once per process, and only over Streamlit's own functions: never over a test's patch of
them (``patch_config_options``, AppTest's own run), so that putting theirs back never leaves these in place of the
real ones, or the reverse.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import pyarrow as pa
from streamlit import config, dataframe_util

__all__ = ["read_config_without_lock", "send_once"]


class _StoredOptions:
    """A copy of Streamlit's stored option values: ``values`` by key, ``sections`` by section name (only the
    sections whose every option is stored). Made under Streamlit's config lock; never changed once made."""

    def __init__(self, options: dict) -> None:
        self.values = {key: option.value for key, option in options.items() if _stored(option)}
        sections: dict[str, dict] = {}
        computed: set[str] = set()
        for option in options.values():
            if _stored(option):
                sections.setdefault(option.section, {})[option.name] = option.value
            else:
                computed.add(option.section)
        self.sections = {name: values for name, values in sections.items() if name not in computed}


_STORED_LAMBDA = "ConfigOption.set_value.<locals>.<lambda>"  # how a stored value's getter is named (set_value)
_GENUINE: dict[str, Callable] = {}  # Streamlit's own functions replaced here, by name
_copy: list[_StoredOptions | None] = [None]  # the current copy; None: make one at the next read


def _stored(option) -> bool:
    """Whether ``option``'s value is stored (set from a default, a file, a flag or ``set_option``) rather than
    worked out by a function on each read (``server.address``, ``logger.level``, ...)."""
    getter = getattr(option, "_get_val_func", None)
    return getter is None or getattr(getter, "__qualname__", "") == _STORED_LAMBDA


def _current() -> _StoredOptions:
    made = _copy[0]
    if made is None:
        with config._config_lock:  # set_option and a parse hold it, so the copy is of one consistent state
            made = _copy[0] = _StoredOptions(config.get_config_options())
    return made


def _forget(*_sender) -> None:
    _copy[0] = None


def _get_option(key: str):
    values = _current().values
    return values[key] if key in values else _GENUINE["get_option"](key)


def _get_options_for_section(section: str) -> dict:
    values = _current().sections.get(section)
    return dict(values) if values is not None else _GENUINE["get_options_for_section"](section)


def _set_option(key: str, value, where_defined: str) -> None:
    _GENUINE["_set_option"](key, value, where_defined)
    _forget()


def read_config_without_lock() -> bool:
    """Make ``config.get_option`` and ``config.get_options_for_section`` read a copy of the stored values (see the
    module docstring); once per process. Returns whether the reads are lock-free now.
    """
    if config.get_option is _get_option:
        return True
    names = ("get_option", "get_options_for_section", "_set_option")
    genuine = {name: getattr(config, name, None) for name in names}
    if not all(getattr(f, "__module__", "") == config.__name__ and getattr(f, "__name__", "") == name
               for name, f in genuine.items()):
        return False
    if not hasattr(config, "_config_lock") or not hasattr(config, "_on_config_parsed"):
        return False
    _GENUINE.update(genuine)
    _forget()
    config._on_config_parsed.connect(_forget, weak=False)
    config._set_option = _set_option
    config.get_options_for_section = _get_options_for_section
    config.get_option = _get_option
    return True


_ARROW: dict[int, tuple[weakref.ref, list[bytes]]] = {}  # id(table) -> (the table, [its bytes, once written])


def send_once(table: pa.Table) -> pa.Table:
    """``table``, which nobody changes (Arrow tables cannot be), written to Arrow bytes once for every chart that
    sends it (see the module docstring); where Streamlit's writer moved, each send writes it as before."""
    if not _convert_once_installed():
        return table
    key = id(table)
    if key not in _ARROW:
        _ARROW[key] = (weakref.ref(table, functools.partial(_forget_table, key)), [])
    return table


def _forget_table(key: int, ref: weakref.ref) -> None:
    entry = _ARROW.get(key)
    if entry is not None and entry[0] is ref:
        del _ARROW[key]


def _convert_once(table: pa.Table) -> bytes:
    entry = _ARROW.get(id(table))
    if entry is None or entry[0]() is not table:
        return _GENUINE["convert_arrow_table_to_arrow_bytes"](table)
    if not entry[1]:
        entry[1].append(_GENUINE["convert_arrow_table_to_arrow_bytes"](table))
    return entry[1][0]


def _convert_once_installed() -> bool:
    name = "convert_arrow_table_to_arrow_bytes"
    current = getattr(dataframe_util, name, None)
    if current is _convert_once:
        return True
    if getattr(current, "__module__", "") != dataframe_util.__name__ or getattr(current, "__name__", "") != name:
        return False
    _GENUINE[name] = current
    setattr(dataframe_util, name, _convert_once)
    return True
