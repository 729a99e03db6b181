"""Browser fixtures: start the real app once per session and drive it with Playwright in headless Chromium.

Every test in this folder is marked `browser`; select or skip them with `-m browser` / `-m "not browser"`.
``./test.sh`` runs them in one process after the tests without a browser, and those marked `alone` (they load the
cores on purpose) last; a test's waits still allow for a machine busy with other work.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.browser import find_chromium

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = REPO_ROOT / "screenshots"
SERVER_START_TIMEOUT_S = 60
APP_RUN_TIMEOUT_MS = 60_000
# Playwright's expect() waits 5 s by default; a page checked while another worker's test shares the cores (or the
# machine is busy) can take longer to show what it will show. A passing check returns as soon as it holds.
EXPECT_TIMEOUT_MS = 30_000
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
]
NO_BROWSER = "no Chromium found: apt-get install chromium, or python -m playwright install chromium"
# Script states in which a run has ended (normally, or because the script could not be compiled).
FINISHED = (
    "[data-testid=stApp]:is([data-test-script-state=notRunning], [data-test-script-state=compilationError])"
)
# Script states from a widget's change until its rerun ends.
RERUNNING = "[data-testid=stApp]:is([data-test-script-state=rerunRequested], [data-test-script-state=running])"
RERUN_START_MS = 250  # how long after a change its rerun may take to begin


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in item.path.resolve().parents:
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_health(base_url: str, proc: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"streamlit not healthy after {SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()}")


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server and anything it started (it runs in its own process group)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def models_env(root: Path, hf_home: Path) -> dict[str, str]:
    """A server's environment for the models folder ``root``: an empty Hugging Face home ``hf_home`` and no Hub."""
    return {"TE_MODELS_DIR": str(root), "HF_HUB_OFFLINE": "1", "HF_HOME": str(hf_home)}


@contextlib.contextmanager
def serve_app(env: dict[str, str] | None = None) -> Iterator[str]:
    """Run `streamlit run app.py` from the repository root on a free port; yield its base URL.

    ``env`` adds environment variables for the server (e.g. ``TE_MODELS_DIR``).
    """
    port = _free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--server.port", str(port),
        "--browser.gatherUsageStats", "false",
        "--client.showErrorDetails", "full",
    ]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="streamlit-e2e-") as log_dir:
        log_path = Path(log_dir) / "server.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        try:
            _wait_for_health(base_url, proc, log_path)
            yield base_url
        finally:
            _stop(proc)


class AppServers:
    """The session's app servers, one per distinct environment: each starts on first use and is shared by every
    test module that asks for the same environment; all stop at the end of the session.

    A server costs seconds to start and its first run imports everything, so modules that need the same server
    share one. A module that needs a server of its own (a cold one, or one it breaks on purpose) uses
    :func:`serve_app` directly.
    """

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._urls: dict[tuple[tuple[str, str], ...], str] = {}

    def get(self, env: dict[str, str] | None = None) -> str:
        """The base URL of the server whose extra environment is ``env``, started now if none runs yet."""
        key = tuple(sorted((env or {}).items()))
        if key not in self._urls:
            self._urls[key] = self._stack.enter_context(serve_app(dict(key)))
        return self._urls[key]

    def __len__(self) -> int:
        return len(self._urls)

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="session")
def app_servers() -> Iterator[AppServers]:
    """The session's pool of app servers keyed by environment: ``app_servers.get({"TE_SMALL_HOST": "1"})``."""
    servers = AppServers()
    try:
        yield servers
    finally:
        servers.close()


@pytest.fixture(scope="session")
def app_server(app_servers) -> str:
    """The app server most browser tests share.

    It keeps no recordings (``TE_RECORDINGS_MB=0``): a run that one test trained must not make another test's
    identical Start a replay. The replay tests use a server that keeps them.
    """
    return app_servers.get({"TE_RECORDINGS_MB": "0"})


def _playwright_has_chromium(playwright) -> bool:
    try:
        return Path(playwright.chromium.executable_path).exists()
    except Exception:  # any failure here means "no downloaded browser"
        return False


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole session (system Chromium first, then Playwright's own)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        executable = find_chromium()
        if executable is None and not _playwright_has_chromium(playwright):
            pytest.skip(NO_BROWSER)
        sync_api.expect.set_options(timeout=EXPECT_TIMEOUT_MS)
        chromium = playwright.chromium.launch(headless=True, executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def warm_app(browser, app_server) -> str:
    """Open the home page once, so the server's first, slowest run (imports, caches) is not timed by a test.

    Deep links on a cold server are covered separately by ``test_deep_links.py``.
    """
    context = browser.new_context(base_url=app_server)
    tab = context.new_page()
    tab.goto("/")
    wait_for_app(tab)
    context.close()
    return app_server


@contextlib.contextmanager
def new_tab(browser, base_url: str) -> Iterator:
    """A fresh 1400x900 browser tab whose relative URLs point at ``base_url``; checked for exceptions at the end."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(APP_RUN_TIMEOUT_MS)
    try:
        yield tab
        if not tab.is_closed():
            assert_no_exception(tab)  # whatever the test did last must not have broken the page either
    finally:
        context.close()


@pytest.fixture
def page(browser, warm_app):
    """A fresh 1400x900 browser tab whose relative URLs point at the app: `page.goto("/")`."""
    with new_tab(browser, warm_app) as tab:
        yield tab


def wait_for_app(page, timeout_ms: int = APP_RUN_TIMEOUT_MS) -> None:
    """Wait until the app is connected, has finished its script run and shows its main view.

    Call it after `page.goto(...)` and after every interaction that reruns the script. A page that keeps
    running on purpose (a live training loop) never finishes; wait for one of its elements instead.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_selector("[data-testid=stApp][data-test-connection-state=CONNECTED]", timeout=timeout_ms)
    # A rerun starts a moment after a widget changes: wait until it has begun before waiting for its end. A page
    # just opened, or a rerun already over, shows no such state: then this waits RERUN_START_MS.
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_selector(RERUNNING, timeout=RERUN_START_MS)
    page.wait_for_selector(FINISHED, timeout=timeout_ms)
    page.wait_for_selector("[data-testid=stStatusWidgetRunningIcon]", state="detached", timeout=timeout_ms)
    page.wait_for_selector("[data-testid=stAppViewContainer]", state="visible", timeout=timeout_ms)
    # Widgets' code is loaded lazily; until it arrives each shows a grey placeholder ("skeleton").
    page.wait_for_selector("[data-testid=stSkeleton]", state="detached", timeout=timeout_ms)


def assert_no_exception(page) -> None:
    """Fail with the text of every exception box on the page."""
    boxes = page.locator("[data-testid=stException]")
    texts = [boxes.nth(i).inner_text() for i in range(boxes.count())]
    assert not texts, "the page shows an exception:\n" + "\n---\n".join(texts)


def save_screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as screenshots/<name> (git-ignored) and return its path."""
    SCREENSHOT_DIR.mkdir(exist_ok=True)
    path = SCREENSHOT_DIR / name
    page.screenshot(path=str(path), full_page=True)
    return path


@contextlib.contextmanager
def visitor_tabs(browser, base_url: str) -> Iterator:
    """Yield ``open_tab(path, finishes=True)``: each tab is its own visitor (its own browser context and session).

    A page that follows a run never finishes its script, so ``finishes=False`` waits for its heading instead.
    """
    contexts = []

    def open_tab(path: str, *, finishes: bool = True):
        context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        tab = context.new_page()
        tab.set_default_timeout(APP_RUN_TIMEOUT_MS)
        tab.goto(path)
        if finishes:
            wait_for_app(tab)
        else:
            tab.locator("[data-testid=stMain] h1").first.wait_for(state="visible")
        return tab

    try:
        yield open_tab
    finally:
        for context in contexts:
            context.close()
