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

# Seconds one script run may take before AppTest gives up. Generous: the CI machine has two cores, a page opens
# with one run, and a process's first run also imports what the page needs (78 s seen on a machine at load 20).
DEFAULT_TIMEOUT = 180


HOME = "pages/home.py"  # the default page: the app opens on it


def app_at(page_path: str | None = None, timeout: float = DEFAULT_TIMEOUT, *,
           query: dict[str, str] | None = None) -> AppTest:
    """The app opened at `page_path` (e.g. "pages/attention.py"), with `query` in the address: one script run,
    as a browser opening ``/attention?...`` makes.

    With `page_path=None` the app stays on its default page. The returned AppTest has finished running. Page files
    are named like their URL paths, so the page is found before any run has registered the navigation; should it
    not be, the app's default page ran and the page is opened with a second run.
    """
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params.update(query or {})
    wanted = page_path not in (None, HOME)
    if wanted:
        at.switch_page(page_path)
    at.run()
    if wanted and not on_page(at, page_path):
        at.switch_page(page_path).run()
    return at


def on_page(at: AppTest, page_path: str) -> bool:
    """Whether the last run of `at` drew the page whose script is `page_path`."""
    shown = at._registered_pages.get(at._finished_page_script_hash, {}).get("script_path")  # noqa: SLF001
    return shown is not None and Path(str(shown)).resolve() == (ROOT / page_path).resolve()


def opened_from_link(page_path: str, query: dict[str, str]) -> AppTest:
    """The page at ``page_path`` opened from a link whose query is ``query``; fails if the page raised."""
    at = app_at(page_path, query=query)
    assert_no_exception(at)
    return at


def link_notices(at: AppTest) -> list[str]:
    """The notices under the title about settings of the link that were ignored or changed."""
    return [i.value for i in at.info if i.value.startswith("The link's setting")]


def assert_no_exception(at: AppTest) -> None:
    """Fail with the messages of every exception the page showed."""
    messages = [exc.message for exc in at.exception]
    assert not messages, f"the page raised: {messages}"


def lab_with_trained(family: str, task_name: str, settings: dict | None = None, **options) -> tuple[AppTest, object]:
    """The Attention Lab showing a model of ``task_name`` (``options`` for its task) as if trained on Live Training:
    the task's default model, seed 0, untrained; ``settings`` (session-state keys → values) are set before the page
    runs. Returns the page and the model."""
    import torch

    from transformer_core.tasks import get_task
    from ui.attention.keys import SOURCE
    from ui.common import state

    task = get_task(task_name, **options)
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config()).eval()
    at = app_at(None)
    at.session_state[state.TRAINED] = {family: state.TrainedModel(family, task_name, task.title, model, model.config,
                                                                  step=3, task=task)}
    at.session_state[SOURCE] = family
    for key, value in (settings or {}).items():
        at.session_state[key] = value
    at.switch_page("pages/attention.py").run()
    return at, model


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
