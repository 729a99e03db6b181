"""Helpers for testing pages headlessly with Streamlit's AppTest (no browser, no server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.util import patch_config_options

# AppTest resolves relative paths against the calling file, so the entry point is given absolutely.
ROOT = Path(__file__).resolve().parents[2]  # the repository
APP = str(ROOT / "app.py")

# Seconds one script run may take before AppTest gives up (generous: the CI machine has two cores).
DEFAULT_TIMEOUT = 60


def app_at(page_path: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> AppTest:
    """Run the app once, then switch to `page_path` (e.g. "pages/attention.py") and run again.

    With `page_path=None` the app stays on its default page. The returned AppTest has finished running.
    """
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.run()
    if page_path is not None:
        at.switch_page(page_path)
        at.run()
    return at


def opened_from_link(page_path: str, query: dict[str, str]) -> AppTest:
    """The page at ``page_path`` opened from a link whose query is ``query``; fails if the page raised."""
    at = app_at(None)
    at.query_params.update(query)
    at.switch_page(page_path).run()
    assert_no_exception(at)
    return at


def link_notices(at: AppTest) -> list[str]:
    """The notices under the title about settings of the link that were ignored or changed."""
    return [i.value for i in at.info if i.value.startswith("The link's setting")]


def assert_no_exception(at: AppTest) -> None:
    """Fail with the messages of every exception the page showed."""
    messages = [exc.message for exc in at.exception]
    assert not messages, f"the page raised: {messages}"


def plotly_download_formats(at: AppTest) -> set[str]:
    """The file formats ("png", "svg") the camera buttons of the page's plotly charts save."""
    return {json.loads(c.proto.config)["toImageButtonOptions"]["format"] for c in at.get("plotly_chart")}


@pytest.fixture(autouse=True)
def _full_error_details():
    """Show exception messages in tests; the public config (.streamlit/config.toml) redacts them."""
    with patch_config_options({"client.showErrorDetails": "full"}):
        yield


@pytest.fixture(autouse=True)
def _no_pretrained_models(tmp_path, monkeypatch):
    """Pages see an empty models folder, an empty Hugging Face home and cache and no Hub, whatever this machine
    holds.

    Tests that want models only point ``TE_MODELS_DIR`` at folders they create.
    """
    from transformer_core.pretrained import folders

    empty = tmp_path / "no-models"
    monkeypatch.setenv("TE_MODELS_DIR", str(empty))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(folders, "_hub_cache", lambda: empty)


@pytest.fixture(autouse=True)
def _runs_on_the_script_thread(monkeypatch):
    """AppTest runs a page in this process, step by step: its runs train on the script thread (the served app
    trains them in trainer processes, which the browser tests and tests/explorer/test_worker.py check)."""
    monkeypatch.setenv("TE_TRAINER", "thread")


@pytest.fixture(autouse=True)
def _fresh_run_store(monkeypatch):
    """Each test gets its own empty run store: a run another test recorded must not turn Start into a replay."""
    from explorer.runs import store as run_store
    monkeypatch.setattr(run_store, "_STORE", run_store.MemoryStore())


@pytest.fixture(name="app_at")
def app_at_fixture():
    """The `app_at` helper as a fixture: `def test_x(app_at): at = app_at("pages/home.py")`."""
    return app_at


def vega_heatmaps(at: AppTest) -> list[dict]:
    """Every heatmap of the page's Vega-Lite charts drawn by ``ui.common.vega_heatmap``, in the shape of a plotly
    heatmap trace: ``{"z": values (NaN where masked), "text": cell texts, "spec": the chart's spec}``."""
    import numpy as np
    import pyarrow as pa

    maps = []
    for chart in at.get("vega_lite_chart"):
        if not chart.proto.data.data:
            continue
        cells = pa.ipc.open_stream(chart.proto.data.data).read_all().to_pandas()
        if not {"p", "r", "c", "v", "t"} <= set(cells.columns):
            continue
        for _, panel in cells.groupby("p", sort=True):
            z = np.full((panel.r.max() + 1, panel.c.max() + 1), np.nan)
            text = np.full(z.shape, "", dtype=object)
            z[panel.r, panel.c] = panel.v.astype(float)
            text[panel.r, panel.c] = panel.t
            maps.append({"z": z, "text": text.tolist(), "spec": json.loads(chart.proto.spec)})
    return maps
