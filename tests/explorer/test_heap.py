"""The server's heap: what the app's imports made leaves the cycle collector's walks, once per process; the app
does it on its first script run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

# In a fresh interpreter: the modules app.py imports (every page's ui package comes with ui.pages), then
# settle_heap twice; prints the objects the collector tracked before, the frozen ones, those it still tracks after,
# then the modules the Model Builder's first model on the meta device imports.
SCRIPT = """
import gc, sys
import ui.pages, ui.common.sidebar, ui.training.run
from explorer.heap import settle_heap
from explorer.lab.builder import BuilderSettings, build
tracked = len(gc.get_objects())
first, again = settle_heap(), settle_heap()
print(tracked, gc.get_freeze_count(), len(gc.get_objects()), first, again)
modules = len(sys.modules)
build(BuilderSettings(), "meta")
print(len(sys.modules) - modules, len(gc.get_objects()))
"""


@pytest.mark.slow
def test_the_imports_leave_the_collectors_walks_once() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600, check=True)
    tracked, frozen, walked, first, again, imported, walked_after = done.stdout.split()[-7:]
    assert (first, again) == ("True", "False"), "once per process"
    assert int(tracked) > 100_000, "the imports make hundreds of thousands of objects"
    assert int(frozen) > 0.9 * int(tracked)
    assert int(walked) < int(tracked) / 100, "a full collection walks almost none of them any more"
    # PyTorch's first-use import (torch._dynamo, ~800 modules) came before the freeze, not in a session's page
    assert int(imported) < 20, f"the first meta-device model imported {imported} modules"
    assert int(walked_after) < int(tracked) / 100


def test_the_app_settles_its_heap_on_its_first_run(monkeypatch) -> None:
    from explorer import heap
    from tests.app.conftest import app_at

    calls: list[bool] = []
    monkeypatch.setattr(heap, "settle_heap", lambda: calls.append(True) or True)
    app_at()
    assert calls, "app.py settles the heap once its modules are imported"
