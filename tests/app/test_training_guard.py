"""The Live Training page's resource guard estimates step time with the threads the page trains with."""

from __future__ import annotations

from transformer_core.training import TrainConfig
from ui import training_controls as tc
from ui.training_run import LIVE_THREADS


def test_guard_uses_the_pages_training_threads(monkeypatch):
    calls = []
    monkeypatch.setattr(tc, "check_budget", lambda *args, **kwargs: calls.append(kwargs))
    tc._verdict.cache_clear()
    try:
        tc._verdict("reverse", tc.load_task("reverse").default_model_config(), TrainConfig(), 2)
    finally:
        tc._verdict.cache_clear()  # forget the fake verdict
    assert calls == [{"lanes": 2, "threads": LIVE_THREADS}]
