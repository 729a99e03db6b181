"""A watch link's reader is counted under a random id kept per browser session, never under its session id."""

from __future__ import annotations

from explorer.runs.store import run_store
from tests.app.conftest import opened_from_link
from tests.explorer.test_run_store import META, _update
from ui.common import st_internals
from ui.training import watch as twatch


def test_a_watcher_is_counted_under_a_random_id_kept_for_its_session(monkeypatch) -> None:
    monkeypatch.setattr(st_internals, "session_id", lambda: "the-session-id")  # what anyone reading Redis saw
    store = run_store()
    store.publish("chan", _update(1, 1, META))
    store.end("chan", "released by its owner")  # an ended link draws once, without following the run
    at = opened_from_link("pages/training.py", {"watch": "chan"})
    watcher = at.session_state[twatch.WATCHER]
    assert at.session_state[twatch.WATCHED].watcher_id == watcher and len(watcher) == 22
    assert watcher != "the-session-id"
    at.session_state[twatch.WATCHED] = None  # a new link in the same browser session: the same watcher id
    at.run()
    assert at.session_state[twatch.WATCHED].watcher_id == watcher
    assert any("has ended" in i.value for i in at.info)


def test_a_pasted_class_or_watch_link_is_read_for_its_id() -> None:
    link = "https://explorer.example.org/training?class=Ab3_-x9QzQ1w2e3r4t5y6u&lang=en"
    assert twatch.linked_query(link) == {"class": "Ab3_-x9QzQ1w2e3r4t5y6u"}
    assert twatch.linked_query("  http://10.0.0.5:8501/training?watch=Zz9-Zz9_Zz9-Zz9_Zz9-Zz  ") == {
        "watch": "Zz9-Zz9_Zz9-Zz9_Zz9-Zz"}
    for typed in ("K7M3QX", "", "https://x.org/training?class=<script>", "https://x.org/training?run=abcdefghij"):
        assert twatch.linked_query(typed) is None, typed
    assert len(link) < twatch.MAX_TYPED  # the box takes the whole link (Streamlit drops a longer paste unseen)
