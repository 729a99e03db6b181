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

When the session's language changes, the choices on the page must be sent to the browser again
(:func:`labelled_widget_keys`): a radio's or a select box's browser-side value is the *label* of its option, so
after the labels are translated the browser finds its old label among none of the new ones, shows nothing chosen
and, at the next click, sends the old label, which Streamlit answers with the widget's default. Which keyed widgets
hold such a value is in their metadata (``WidgetMetadata.value_type``).

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
from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

__all__ = ["SEND_QUEUE_LIMIT", "RerunException", "StopException", "click_pending", "labelled_widget_keys",
           "leave_pages_directory", "logger", "network_url", "request_signal", "runs_pages_directory", "send_backlog",
           "session_connected", "session_id", "streamlit_version", "yield_to_streamlit"]

# The browser-side values that are the text a widget shows: a radio's, select box's, select slider's, pills' or
# multiselect's chosen labels (and a text box's text, which re-sending leaves as it is)
LABEL_VALUE_TYPES = frozenset({"string_value", "string_array_value"})
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


def labelled_widget_keys() -> list[str]:
    """The keys of this session's keyed widgets whose browser-side value is the label they show (empty when
    unknown). Reads ``SessionState._key_id_mapper`` (key → widget id) and the widgets' metadata
    (``_new_widget_state.widget_metadata``), which Streamlit keeps from the last run for every widget it drew."""
    ctx = get_script_run_ctx(suppress_warning=True)
    state = getattr(getattr(ctx, "session_state", None), "_state", None)
    mapping = getattr(getattr(state, "_key_id_mapper", None), "_key_id_mapping", None)
    metadata = getattr(getattr(state, "_new_widget_state", None), "widget_metadata", None)
    if not isinstance(mapping, dict) or not isinstance(metadata, dict):
        return []
    return [key for key, widget_id in mapping.items()
            if getattr(metadata.get(widget_id), "value_type", None) in LABEL_VALUE_TYPES]


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
