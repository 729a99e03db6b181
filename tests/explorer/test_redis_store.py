"""The Redis store against a real redis-server: servers sharing it, expiry, eviction, and Redis going away."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from explorer.runs import codec as run_codec
from explorer.runs import store as run_store
from explorer.runs.redis_connection import DOWN
from explorer.runs.redis_store import RedisStore
from explorer.runs.redis_url import redact
from explorer.runs.store import CHANNEL_TTL_S, DamagedValue, Recording, StoreUnavailable
from tests.explorer.test_run_store import META, _same_update, _update
from tests.redis_server import free_port

redis = pytest.importorskip("redis", reason="the redis package is not installed (pip install -r requirements.txt)")


@pytest.fixture
def replicas(redis_pair) -> tuple[RedisStore, RedisStore]:
    """Two stores on one Redis, as two app servers would have them."""
    return redis_pair


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    """A plain client of the same Redis, to look at the keys."""
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


def _recording(key: str, size: int = 1000) -> Recording:
    update = _update(1, 2, META)
    return Recording(key, META, update.state, update.lanes, [(0.0, 0), (1.0, 2)], [b"w" * size])


def test_two_servers_share_channels_watchers_files_and_recordings(replicas) -> None:
    a, b = replicas
    first = _update(1, 3, META)
    a.publish("run", first)
    updates, cursor = b.read("run", 0)
    _same_update(updates[0], first)
    a.publish("run", _update(4, 1))
    assert len(b.read("run", cursor)[0]) == 1
    b.touch_watcher("run", "w1")
    a.touch_watcher("run", "w2")
    assert a.watcher_count("run") == b.watcher_count("run") == 2
    a.put_checkpoints("run", 4, [b"model"])
    assert b.checkpoints("run") == (4, [b"model"])
    a.save_recording(_recording("rec"))
    assert b.has_recording("rec") and b.load_recording("rec").checkpoints == [b"w" * 1000]
    a.end("run", "finished", recording="rec")
    assert b.read("run", 0) is None and b.gone("run") == {"reason": "finished", "recording": "rec"}


def test_every_key_is_under_the_prefix(replicas, client) -> None:
    a, _ = replicas
    a.publish("run", _update(1, 1, META))
    a.touch_watcher("run", "w")
    a.put_checkpoints("run", 1, [b"m"])
    a.save_recording(_recording("rec"))
    a.end("other", "stopped")
    keys = sorted(k.decode() for k in client.keys("*"))
    assert keys and all(k.startswith("te:") for k in keys)
    assert {"te:ch:run", "te:ck:run", "te:w:run", "te:gone:other", "te:rec:rec"} <= set(keys)


def test_publish_renews_the_expiry_of_the_channel_and_its_keys(replicas, client) -> None:
    a, _ = replicas
    a.publish("run", _update(1, 1, META))
    a.touch_watcher("run", "w")
    a.put_checkpoints("run", 1, [b"m"])
    for key in ("te:ch:run", "te:w:run", "te:ck:run"):
        assert 0 < client.pttl(key) <= CHANNEL_TTL_S * 1000
        client.pexpire(key, 50)  # as if the channel had not been published to for almost its whole life
    a.publish("run", _update(2, 1))
    assert all(client.pttl(k) > CHANNEL_TTL_S * 1000 - 60_000 for k in ("te:ch:run", "te:w:run", "te:ck:run"))
    client.pexpire("te:ch:run", 1)
    client.pexpire("te:ck:run", 1)
    time.sleep(0.01)  # past their expiry: Redis drops an expired key when it is next asked for
    assert a.read("run", 0) is None and a.checkpoints("run") is None


def test_a_load_on_one_server_counts_as_a_use_on_every_server(redis_url, client) -> None:
    size = len(run_codec.encode_recording(_recording("x", 50_000)))
    a, b = RedisStore(redis_url, recordings_bytes=int(2.5 * size)), RedisStore(redis_url)
    a.save_recording(_recording("old", 50_000))
    a.save_recording(_recording("new", 50_000))
    b.load_recording("old")
    a.save_recording(_recording("third", 50_000))
    assert a.has_recording("old") and a.has_recording("third") and not a.has_recording("new")
    assert {k.decode() for k in client.hkeys("te:rec-size")} == {"old", "third"}
    assert {k.decode() for k in client.zrange("te:rec-used", 0, -1)} == {"old", "third"}
    assert sum(int(v) for v in client.hvals("te:rec-size")) <= a.recordings_bytes
    a.close()
    b.close()


def test_unreadable_values_are_reported_or_forgotten(replicas, client) -> None:
    a, _ = replicas
    a.publish("run", _update(1, 1, META))
    client.rpush("te:ch:run", b"\x80\x04garbage")
    with pytest.raises(StoreUnavailable, match="cannot read"):
        a.read("run", 0)
    assert a.read("run", 2) == ([], 2)
    a.save_recording(_recording("rec"))
    client.set("te:rec:rec", b"not a recording")
    assert a.load_recording("rec") is None and not a.has_recording("rec")  # the run will train again


def test_redis_going_away_raises_the_documented_exception(own_redis_server) -> None:
    store = RedisStore(own_redis_server.url, retry_after_s=0)
    store.publish("run", _update(1, 1, META))
    own_redis_server.stop()
    calls = [lambda: store.publish("run", _update(2, 1)), lambda: store.read("run", 0), lambda: store.gone("run"),
             lambda: store.touch_watcher("run", "w"), lambda: store.watcher_count("run"),
             lambda: store.checkpoints("run"), lambda: store.put_checkpoints("run", 1, [b"m"]),
             lambda: store.end("run", "stopped"), lambda: store.save_recording(_recording("r")),
             lambda: store.load_recording("r"), lambda: store.has_recording("r")]
    for call in calls:
        with pytest.raises(StoreUnavailable) as info:
            call()
        assert str(info.value) == DOWN
    own_redis_server.start()  # back, empty: the store reconnects by itself
    assert store.read("run", 0) is None
    store.publish("run", _update(1, 1, META))
    assert store.read("run", 0)[1] == 1
    store.close()


def test_after_a_failure_calls_fail_at_once_until_the_retry_time(own_redis_server) -> None:
    store = RedisStore(own_redis_server.url, retry_after_s=3600)
    own_redis_server.stop()
    with pytest.raises(StoreUnavailable):
        store.has_recording("r")
    own_redis_server.start()
    with pytest.raises(StoreUnavailable) as info:
        store.has_recording("r")  # Redis is back, but the store does not ask it again yet
    assert info.value.__cause__ is None
    store.retry_after_s, store._down_until = 0, 0.0
    assert not store.has_recording("r")
    store.close()


def test_a_server_without_the_redis_package_says_so(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # "import redis" now fails as if it were not installed
    store = RedisStore("redis://127.0.0.1:6379/0")
    with pytest.raises(StoreUnavailable, match="redis package is missing"):
        store.publish("run", _update(1, 1, META))


def test_bad_address_and_nobody_listening() -> None:
    misconfigured = RedisStore("http://example.invalid/")  # made, so that every page still opens
    for call in (lambda: misconfigured.read("run", 0), lambda: misconfigured.has_recording("r")):
        with pytest.raises(StoreUnavailable, match="TE_REDIS_URL is not a Redis address"):
            call()
    misconfigured.close()
    with pytest.raises(StoreUnavailable, match="does not answer"):
        RedisStore(f"redis://127.0.0.1:{free_port()}/0").read("run", 0)


def test_run_store_uses_redis_when_configured(monkeypatch, redis_url) -> None:
    monkeypatch.setattr(run_store, "_STORE", None)
    monkeypatch.setenv(run_store.REDIS_ENV, redis_url)
    monkeypatch.setenv("TE_RECORDINGS_MB", "2")
    store = run_store.run_store()
    assert isinstance(store, RedisStore) and store.recordings_bytes == 2 * 2**20
    assert run_store.run_store() is store
    store.close()


def test_keys_of_the_wrong_kind_count_as_damaged(replicas, client) -> None:
    a, _ = replicas
    client.set("te:ch:run", b"a string where a list belongs")
    with pytest.raises(DamagedValue, match="not a list of updates"):
        a.read("run", 0)
    a.save_recording(_recording("rec"))
    client.delete("te:rec:rec")
    client.rpush("te:rec:rec", b"a list where a string belongs")
    client.rpush("te:ck:run2", b"x")
    client.rpush("te:gone:run3", b"x")
    assert a.load_recording("rec") is None and a.checkpoints("run2") is None and a.gone("run3") is None
    assert not client.exists("te:rec:rec", "te:ck:run2", "te:gone:run3")
    assert client.hkeys("te:rec-size") == [] and client.zrange("te:rec-used", 0, -1) == []  # forgotten whole


def test_damaged_recordings_leave_no_size_behind(replicas, client) -> None:
    a, b = replicas
    a.save_recording(_recording("rec"))
    client.set("te:rec:rec", b"not a recording")
    assert b.load_recording("rec") is None
    assert client.hkeys("te:rec-size") == [] and client.zrange("te:rec-used", 0, -1) == []


SECRET_URLS = [  # passwords with the characters that split an address: each once showed a piece of itself
    ("redis://:topsecret#pw99@localhost:6379/0", ["topsecret", "pw99"]),
    ("redis://user:hunter/word99@localhost:6379/0", ["hunter", "word99"]),
    ("redis://user:zebra?ever1@localhost:6379/0", ["zebra", "ever1"]),
    ("redis://:p@ss#w/rd?x@localhost:6379/0", ["p@ss#w/rd?x"]),
    ("rediss://admin:s3cr3t:with:colons@localhost:abc/0", ["s3cr3t:with:colons", "s3cr3t", "colons"]),
]


@pytest.mark.parametrize(("url", "secrets"), SECRET_URLS)
def test_messages_never_show_the_address_or_its_password(url, secrets) -> None:
    store = RedisStore(url)
    with pytest.raises(StoreUnavailable) as info:
        store.read("run", 0)
    shown = str(info.value)
    assert not any(secret in shown for secret in secrets), shown
    assert info.value.__cause__ is None or not any(s in str(info.value.__cause__) for s in secrets)
    store.close()


@pytest.mark.parametrize(("url", "secrets"), [*SECRET_URLS, (
    "unix:///run/redis.sock?db=0&password=hunter2%23x", ["hunter2%23x", "hunter2#x"])])
def test_redact_removes_every_piece_of_the_credentials(url, secrets) -> None:
    message = " | ".join([url, *secrets, *(f"as '{piece}'" for piece in url.replace("#", "/").split("/"))])
    redacted = redact(message, url)
    assert not any(secret in redacted for secret in secrets), redacted
    assert redact("Redis refused: OOM command not allowed", url) == "Redis refused: OOM command not allowed"

