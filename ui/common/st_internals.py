"""Every read of Streamlit's private state, in one place (Streamlit is pinned; tests check each read).

The router needs to know whether Streamlit ran a page script on its own, the pre-``st.navigation`` way
(:func:`runs_pages_directory`), and to switch that mode off (:func:`leave_pages_directory`), exactly as
``st.navigation`` itself does: ``PagesManager.uses_pages_directory``.

The live training loop needs two facts that Streamlit's public API does not give while a script runs:

- whether a click is waiting (:func:`click_pending`), so a training slice ends at once instead of after
  up to a quarter of a second;
- how many messages wait to be sent to this browser (:func:`send_backlog`). Streamlit's websocket client
  keeps at most 500 unsent messages per browser; when a slow browser lets that queue fill, the server drops
  the session without closing the socket, and the page freezes with its running indicator on. The loop
  therefore redraws only while the queue is short, which keeps any browser, however slow, connected.

The run registry asks whether a browser session still has its connection (:func:`session_connected`), so that a
paused run whose tab closed is parked and gives its trainer process back; Streamlit's session manager knows
(``SessionManager.is_active_session``), and is asked from the registry's own thread.

The live loop also tells a click's rerun (:class:`RerunException`) from the end of the page's connection
(:class:`StopException`), the exceptions Streamlit raises at the loop's next redraw, and logs through Streamlit's
own logger (:func:`logger`) so its lines appear in the server's log with Streamlit's level and format. A loop that
waits between two redraws lets a waiting click through at once with :func:`yield_to_streamlit`, the check
Streamlit itself makes at every message a script sends and every read of ``st.session_state``; it sleeps on
:func:`request_signal`, an event set the moment Streamlit receives a click or a stop for the script run
(``ScriptRequests.request_rerun`` / ``request_stop``), so a class of waiting pages wakes only when it has
something to do instead of polling.

Every element a page sends reads one of Streamlit's options (``config.get_option``), and every script run
reads its theme sections (``config.get_options_for_section``), through one process-wide lock
(``streamlit.config._config_lock``). Under a class a thread that loses the interpreter lock while it holds that lock
(a theme section walks all ~260 options) keeps every other session's elements waiting: measured at 2,200 waits
and 64 thread-seconds in one class benchmark. :func:`read_config_without_lock` makes both reads look in a copy of
the stored values instead, made under the lock and dropped whenever an option is set or the files are parsed
again; options Streamlit works out on each read are still read under its lock.

Each function says "nothing known" (``False`` / ``0``) where the private state is missing, which only makes
the loop less responsive, never wrong; ``tests/app/test_st_internals.py`` fails, naming the Streamlit
version, if an upgrade moves any of it.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Callable

import streamlit as st
from streamlit import config
from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

__all__ = ["SEND_QUEUE_LIMIT", "RerunException", "StopException", "click_pending", "leave_pages_directory", "logger",
           "network_url", "read_config_without_lock", "request_signal", "runs_pages_directory", "send_backlog",
           "session_connected", "session_id", "streamlit_version", "yield_to_streamlit"]

SEND_QUEUE_LIMIT = 500  # Streamlit's WEBSOCKET_MAX_SEND_QUEUE_SIZE: one message more and the session is dropped
# ScriptRequests' methods through which a click (a rerun) or a closed tab (a stop) reaches a running script; the
# first two must exist (the batch, for several widget changes at once, is newer)
REQUEST_METHODS = ("request_rerun", "request_stop", "request_rerun_batch")
_SIGNALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ScriptRequests -> its threading.Event
_SIGNALS_LOCK = threading.Lock()


def streamlit_version() -> str:
    """The running Streamlit's version, for messages about a changed internal."""
    return st.__version__


def logger(name: str) -> logging.Logger:
    """A logger that writes to the server's log with Streamlit's level and format."""
    return get_logger(name)


def runs_pages_directory() -> bool:
    """Whether Streamlit still runs page scripts directly from ``pages/`` (``st.navigation`` has not run yet)."""
    from streamlit.runtime.pages_manager import PagesManager

    return bool(getattr(PagesManager, "uses_pages_directory", False))


def leave_pages_directory() -> None:
    """Switch the pages-directory mode off, as ``st.navigation`` does on its first call."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


def network_url() -> str | None:
    """The server's address on the local network as ``streamlit run`` prints it ("Network URL", with the port and
    base path), or ``None`` when the machine has no network address."""
    from streamlit import net_util
    from streamlit.web.server import server_util

    try:
        ip = net_util.get_internal_ip()
        return server_util.get_url(ip) if ip else None
    except Exception:  # noqa: BLE001 - an internal that changed only costs the network address
        return None


def session_id() -> str | None:
    """This browser session's id (public through the script-run context), or ``None`` outside a script run."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return getattr(ctx, "session_id", None)


def click_pending() -> bool:
    """Whether Streamlit holds a rerun or stop request for this script run (a click, the tab closing).

    Reads the script runner's request state: ``ScriptRequests._state``.
    """
    requests = getattr(get_script_run_ctx(suppress_warning=True), "script_requests", None)
    state = getattr(requests, "_state", ScriptRequestType.CONTINUE)
    return state != ScriptRequestType.CONTINUE


def request_signal() -> threading.Event | None:
    """An event set whenever Streamlit receives a rerun or stop request for this script run (a click, the tab
    closing); ``None`` outside a script run or where Streamlit's request methods moved (the caller then polls).

    The script runner's ``ScriptRequests`` gets its request methods wrapped once (the first call for it): each
    still does what it did, then sets the event. The waiting loop clears the event before it looks at
    :func:`click_pending`, so a request that arrives in between is never missed.
    """
    requests = getattr(get_script_run_ctx(suppress_warning=True), "script_requests", None)
    if requests is None or not all(callable(getattr(requests, name, None)) for name in REQUEST_METHODS[:2]):
        return None
    with _SIGNALS_LOCK:
        signal = _SIGNALS.get(requests)
        if signal is None:
            signal = threading.Event()
            for name in REQUEST_METHODS:
                method = getattr(requests, name, None)
                if callable(method):
                    setattr(requests, name, _signalling(method, signal))
            _SIGNALS[requests] = signal
    return signal


def _signalling(method: Callable, signal: threading.Event) -> Callable:
    @functools.wraps(method)
    def request(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        finally:
            signal.set()

    return request


def yield_to_streamlit() -> None:
    """Let Streamlit act now on a waiting click or stop request: it raises :class:`RerunException` (a click's rerun,
    with the click's widget values) or :class:`StopException` (the tab closed); returns when none waits.

    Calls the script runner's own check, which Streamlit makes whenever a script sends a message or reads
    ``st.session_state`` (``SafeSessionState._yield_callback``). Where that moved, a waiting request reruns the
    script (``st.rerun()``), as a click would.
    """
    ctx = get_script_run_ctx(suppress_warning=True)
    check = getattr(getattr(ctx, "session_state", None), "_yield_callback", None)
    if check is not None:
        check()
    elif click_pending():
        st.rerun()


def _client():
    """This session's websocket client (``Runtime._session_mgr.get_active_session_info(id).client``)."""
    from streamlit.runtime import Runtime

    sid = session_id()
    if sid is None or not Runtime.exists():
        return None
    manager = getattr(Runtime.instance(), "_session_mgr", None)
    info = manager.get_active_session_info(sid) if manager is not None else None
    return getattr(info, "client", None)


def session_connected(session_id: str) -> bool | None:
    """Whether browser session ``session_id`` still has its connection (``None`` when unknown: no runtime).

    Callable from any thread: reads ``Runtime._session_mgr.is_active_session``, a look-up in a dict.
    """
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    manager = getattr(Runtime.instance(), "_session_mgr", None)
    active = getattr(manager, "is_active_session", None)
    return bool(active(session_id)) if active is not None else None


def send_backlog() -> int:
    """Messages queued for this browser and not yet written to its socket (0 when unknown).

    Reads the Starlette websocket client's bounded queue: ``StarletteSessionClient._send_queue``.
    """
    queue = getattr(_client(), "_send_queue", None)
    try:
        return int(queue.qsize()) if queue is not None else 0
    except (AttributeError, TypeError, ValueError):
        return 0


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
_GENUINE: dict[str, Callable] = {}  # Streamlit's own get_option, get_options_for_section and _set_option
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

    Does nothing while someone has replaced Streamlit's functions (a test's ``patch_config_options``, AppTest's
    own run), so that putting theirs back never leaves this module's in place of the real ones, or the reverse.
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
