"""``deploy/nginx.conf`` in front of two real app replicas that share one Redis, all on loopback.

The page works through the proxy (its websocket included), a browser keeps the replica it started on, new browsers
are spread over both, the websocket handshake passes for a real host name on a non-default port (the case a proxy
that drops the port from ``Host`` breaks), a watch link made on one replica shows the run live on the other, and
when Redis stops the watcher is told why and the owner goes on training.
Skipped where nginx or redis-server is missing.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from explorer.runs.redis_connection import RETRY_AFTER_S
from tests.conftest import REPO_ROOT
from tests.e2e.actions import metric
from tests.e2e.conftest import new_tab, save_screenshot, serve_app, wait_for_app
from tests.redis_server import RedisServer, free_port, redis_or_skip

NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(NGINX is None, reason="nginx not found (apt-get install nginx-light)")]
REPLICA_HEADER = "x-replica"  # added by the test's copy of the configuration: which replica answered
TRAINING = "/training?task=reverse&steps=2000&d_model=32&d_ff=64&batch=32"  # still training while it is watched


def local_config(ports: list[int], listen: int) -> str:
    """``deploy/nginx.conf`` with the replicas on loopback ``ports``, listening on ``listen``."""
    site = (REPO_ROOT / "deploy" / "nginx.conf").read_text()
    site, count = re.subn(r"\n    server app\d:8501 ([^\n]*)", "", site)
    assert count >= 2, "nginx.conf lists its replicas as 'server appN:8501 ...'"
    servers = "".join(f"\n    server 127.0.0.1:{p} max_fails=3 fail_timeout=10s;" for p in ports)
    site = re.sub(r"(\n    hash [^\n]*;)", lambda m: m.group(1) + servers, site)
    site = site.replace("listen 80;", f"listen 127.0.0.1:{listen};")
    return site.replace("add_header Set-Cookie", f"add_header {REPLICA_HEADER} $upstream_addr always;\n"
                                                  "        add_header Set-Cookie")


@contextlib.contextmanager
def run_nginx(site: str) -> Iterator[None]:
    """nginx in the foreground with ``site`` as its only server, its files in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="te-nginx-") as tmp:
        (Path(tmp) / "site.conf").write_text(site)
        (Path(tmp) / "main.conf").write_text(
            f"daemon off; pid {tmp}/nginx.pid; error_log {tmp}/error.log;\nevents {{}}\n"
            f"http {{ access_log off; client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;\n"
            f"  include {tmp}/site.conf; }}\n")
        proc = subprocess.Popen([NGINX, "-c", f"{tmp}/main.conf"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            yield
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def shared_redis() -> Iterator[RedisServer]:
    """The Redis the replicas share."""
    yield from redis_or_skip()


@pytest.fixture(scope="module")
def proxy(shared_redis: RedisServer) -> Iterator[str]:
    """The base URL of nginx in front of two replicas sharing one Redis."""
    listen = free_port()
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(serve_app({"TE_REDIS_URL": shared_redis.url})) for _ in range(2)]
        stack.enter_context(run_nginx(local_config([int(u.rsplit(":", 1)[1]) for u in urls], listen)))
        base = f"http://127.0.0.1:{listen}"
        _wait_until_served(base)
        yield base


def _wait_until_served(base: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if _get(base + "/_stcore/health")[0] == 200:
                return
        time.sleep(0.2)
    raise RuntimeError("nginx did not answer in 30 s")


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    """Status and headers of a plain GET (no cookie jar: every call is a new browser to the proxy)."""
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}


def _handshake(base: str, host: str) -> bytes:
    """The status line nginx returns to a websocket handshake for ``/_stcore/stream`` sent with ``Host: host``."""
    port = int(base.rsplit(":", 1)[1])
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        return sock.recv(200).split(b"\r\n", 1)[0]


def test_a_browser_keeps_its_replica_and_the_page_works(proxy, browser) -> None:
    with new_tab(browser, proxy) as tab:
        answered: set[str] = set()
        tab.on("response", lambda r: answered.add(r.headers.get(REPLICA_HEADER, "")))
        tab.goto("/")
        wait_for_app(tab)  # the page draws only over its websocket: it went through the proxy
        tab.reload()
        wait_for_app(tab)
        assert tab.get_by_role("heading", name="Transformer Explorer").is_visible()
        assert "te_route" in {c["name"] for c in tab.context.cookies()}
        save_screenshot(tab, "through_proxy.png")
    answered.discard("")
    assert len(answered) == 1, f"one browser was answered by {answered}"


def test_new_browsers_are_spread_over_the_replicas(proxy) -> None:
    seen = set()
    for _ in range(40):  # each request without a cookie is a new browser; both replicas answer within a few
        status, headers = _get(proxy + "/_stcore/health")
        assert status == 200 and headers["set-cookie"].startswith("te_route=")
        seen.add(headers[REPLICA_HEADER])
        if len(seen) == 2:
            break
    assert len(seen) == 2
    cookie = {"Cookie": "te_route=fixed"}
    assert len({_get(proxy + "/_stcore/health", cookie)[1][REPLICA_HEADER] for _ in range(6)}) == 1


def test_websocket_handshake_for_a_named_host_on_another_port(proxy) -> None:
    host = f"explorer.test:{proxy.rsplit(':', 1)[1]}"  # not localhost: Streamlit checks that Origin matches Host
    assert b" 101 " in _handshake(proxy, host)


def _cookies_per_replica(base: str) -> dict[str, str]:
    """A ``te_route`` value that nginx sends to each replica: replica address -> cookie value."""
    found: dict[str, str] = {}
    for i in range(200):
        replica = _get(base + "/_stcore/health", {"Cookie": f"te_route=r{i}"})[1][REPLICA_HEADER]
        found.setdefault(replica, f"r{i}")
        if len(found) == 2:
            return found
    raise AssertionError(f"200 cookie values all went to {set(found)}")


def _route(page, base: str, value: str) -> None:
    """Send every later request of ``page``'s browser to the replica that cookie ``value`` picks."""
    page.context.add_cookies([{"name": "te_route", "value": value, "url": base}])


def _share_and_start(owner) -> str:
    """Open Live Training, switch on Share live, press Start; the class link's id once training runs."""
    owner.goto(TRAINING)
    wait_for_app(owner)
    owner.get_by_test_id("stCheckbox").filter(has_text="Share live").first.click()
    wait_for_app(owner)
    link = owner.get_by_test_id("stCode").filter(has_text="class=").first.inner_text()
    owner.get_by_role("button", name="Start", exact=True).click()
    expect(metric(owner, "Step")).not_to_have_text(re.compile(r"^0 /"), timeout=120_000)
    return re.search(r"class=([\w-]+)", link).group(1)


@contextlib.contextmanager
def redis_stopped(server: RedisServer) -> Iterator[None]:
    """Redis stops for the block, then starts again (empty); the stores try it again after their pause."""
    server.stop()
    try:
        yield
    finally:
        server.start()
        time.sleep(RETRY_AFTER_S)  # the replicas' stores fail at once for this long after a failure


def test_a_watch_link_made_on_one_replica_plays_on_the_other(proxy, shared_redis, browser) -> None:
    owner_route, watcher_route = _cookies_per_replica(proxy).values()
    with new_tab(browser, proxy) as owner, new_tab(browser, proxy) as watcher:
        _route(owner, proxy, owner_route)
        _route(watcher, proxy, watcher_route)
        class_id = _share_and_start(owner)
        watcher.goto(f"/training?class={class_id}")
        expect(metric(watcher, "Step")).to_have_text(re.compile(r"^[1-9][\d,]* / 2,000$"), timeout=120_000)
        first = metric(watcher, "Step").inner_text()
        expect(metric(watcher, "Step")).not_to_have_text(first, timeout=60_000)  # it follows the training
        save_screenshot(watcher, "watch_on_another_replica.png")
        owner.get_by_role("button", name="Pause", exact=True).click()  # the owner's page stays still from here
        owner.get_by_role("button", name="Resume", exact=True).wait_for()
        with redis_stopped(shared_redis):  # the watcher is told why the run cannot be shown now
            expect(watcher.get_by_text(re.compile(r"Redis.*does not answer"))).to_be_visible(timeout=60_000)
            save_screenshot(watcher, "watch_without_redis.png")


def test_the_owner_keeps_training_when_redis_goes_away(proxy, shared_redis, browser) -> None:
    with new_tab(browser, proxy) as owner:
        _share_and_start(owner)
        with redis_stopped(shared_redis):
            expect(owner.get_by_text(re.compile(r"Live sharing stopped: Redis.*does not answer"))).to_be_visible(
                timeout=20_000)
            step = metric(owner, "Step").inner_text()
            expect(metric(owner, "Step")).not_to_have_text(step, timeout=20_000)  # training goes on
            save_screenshot(owner, "owner_without_redis.png")
