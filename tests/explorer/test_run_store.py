"""The store contract: every store (in memory, Redis) keeps channels, watchers, model files and recordings alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from explorer.runs import codec as run_codec
from explorer.runs.envelope import MAGIC
from explorer.runs.frame import SampleSet
from explorer.runs.store import (
    WATCHER_TTL_S,
    DamagedValue,
    LaneUpdate,
    MemoryStore,
    Recording,
    RunStore,
    RunUpdate,
    StoreUnavailable,
)
from explorer.runs.updates import ReadLimits
from transformer_core.tasks.base import Sample
from transformer_core.training import Snapshot


def _snapshot(step: int) -> Snapshot:
    rng = np.random.default_rng(step)
    return Snapshot(step=step, attention={"cross": rng.random((2, 4, 5, 6)).astype(np.float16)},
                    scores={"cross:anti_diagonal": rng.random((2, 4))})


def _update(first: int, n: int, meta: dict | None = None) -> RunUpdate:
    rows = [{"step": s, "loss": 1.0 / s, "lr": 1e-3, "seconds": 0.01 * s} for s in range(first, first + n)]
    samples = [SampleSet(first + n - 1, "", (Sample("123", "321", "321", True), Sample("12", "21", "22", False,
                                                                                       "1 of 2 digits wrong")))]
    lane = LaneUpdate(history=rows, snapshots=[_snapshot(first + n - 1)], samples=samples)
    state = {"status": "running", "message": None, "step": first + n - 1, "steps_per_second": 12.5, "eta_s": 3.0,
             "lanes": [{"step": first + n - 1, "steps": 100, "done": False, "last_eval": {"loss": 0.5}}],
             "downloads": False, "replay": False}
    return RunUpdate(state=state, lanes=[lane], meta=meta)


META = {"task": "reverse", "task_options": {}, "labels": ["A"], "config": {"task": "reverse"}, "recording": None}


def _same_update(a: RunUpdate, b: RunUpdate) -> None:
    assert a.meta == b.meta and a.state == b.state and len(a.lanes) == len(b.lanes)
    for x, y in zip(a.lanes, b.lanes, strict=True):
        assert x.history == y.history and x.samples == y.samples and x.kept == y.kept
        assert [s.step for s in x.snapshots] == [s.step for s in y.snapshots]
        for s, t in zip(x.snapshots, y.snapshots, strict=True):
            assert s.attention.keys() == t.attention.keys() and s.scores.keys() == t.scores.keys()
            for k in s.attention:
                assert s.attention[k].dtype == t.attention[k].dtype
                np.testing.assert_array_equal(s.attention[k], t.attention[k])
            for k in s.scores:
                np.testing.assert_array_equal(s.scores[k], t.scores[k])


@pytest.fixture(params=["memory", "redis"])
def make_store(request) -> Iterator[Callable[..., RunStore]]:
    """Makes stores of one kind: in memory, or in a real Redis (skipped where no redis-server can start)."""
    if request.param == "memory":
        yield MemoryStore
        return
    from explorer.runs.redis_store import RedisStore

    url = request.getfixturevalue("redis_url")
    made: list[RedisStore] = []
    yield lambda **kwargs: made.append(RedisStore(url, **kwargs)) or made[-1]
    for store in made:
        store.close()


@pytest.fixture
def store(make_store) -> RunStore:
    """One store of each kind."""
    return make_store()


def test_channel_reads_only_what_is_new(store) -> None:
    assert store.read("nope", 0) is None
    first, second = _update(1, 3, META), _update(4, 2)
    store.publish("r1", first)
    updates, cursor = store.read("r1", 0)
    assert cursor == 1 and len(updates) == 1
    _same_update(updates[0], first)
    store.publish("r1", second)
    updates, cursor = store.read("r1", cursor)
    assert cursor == 2 and len(updates) == 1
    _same_update(updates[0], second)
    assert store.read("r1", cursor) == ([], 2)


def test_ended_channel_leaves_a_note(store) -> None:
    store.publish("r2", _update(1, 1, META))
    store.end("r2", "released", recording="abc")
    assert store.read("r2", 0) is None
    assert store.gone("r2") == {"reason": "released", "recording": "abc"}
    assert store.gone("never") is None


def test_watchers_and_checkpoints(store) -> None:
    store.publish("r3", _update(1, 1, META))
    assert store.watcher_count("r3") == 0 and store.checkpoints("r3") is None
    for watcher in ("w1", "w2", "w1"):
        store.touch_watcher("r3", watcher)
    assert store.watcher_count("r3") == 2
    store.put_checkpoints("r3", 7, [b"\x00weights-a", b"weights-b"])
    assert store.checkpoints("r3") == (7, [b"\x00weights-a", b"weights-b"])


def test_recordings_round_trip(store) -> None:
    update = _update(1, 5, META)
    recording = Recording(key="k1", meta=META, state=update.state, lanes=update.lanes,
                          timeline=[(0.0, 0), (0.5, 3), (1.0, 5)], checkpoints=[b"ckpt"])
    assert not store.has_recording("k1") and store.load_recording("k1") is None
    store.save_recording(recording)
    assert store.has_recording("k1")
    loaded = store.load_recording("k1")
    assert loaded.key == "k1" and loaded.timeline == recording.timeline and loaded.checkpoints == [b"ckpt"]
    _same_update(RunUpdate(loaded.state, loaded.lanes, loaded.meta), RunUpdate(recording.state, recording.lanes,
                                                                               recording.meta))


def test_watchers_count_only_recent_reads(make_store) -> None:
    now = [1000.0]
    store = make_store(clock=lambda: now[0])
    store.publish("r4", _update(1, 1, META))
    store.touch_watcher("r4", "early")
    now[0] += WATCHER_TTL_S / 2
    store.touch_watcher("r4", "late")
    assert store.watcher_count("r4") == 2
    now[0] += WATCHER_TTL_S * 0.6  # "early" read 1.1 TTL ago, "late" 0.6 TTL ago
    assert store.watcher_count("r4") == 1
    now[0] += WATCHER_TTL_S
    assert store.watcher_count("r4") == 0


def test_no_watchers_or_model_files_without_a_channel(store) -> None:
    store.touch_watcher("none", "w1")
    store.put_checkpoints("none", 3, [b"weights"])
    assert store.watcher_count("none") == 0 and store.checkpoints("none") is None
    store.publish("r5", _update(1, 1, META))
    store.put_checkpoints("r5", 3, [b"weights"])
    store.end("r5", "stopped")
    assert store.checkpoints("r5") is None and store.watcher_count("r5") == 0


def test_store_evicts_least_recently_used(make_store) -> None:
    update = _update(1, 2, META)
    weights = b"x" * 200_000  # the files dominate, so encoded and in-memory sizes agree to within a few percent

    def recording(key: str) -> Recording:
        return Recording(key, META, update.state, update.lanes, [(0.0, 0), (1.0, 2)], [weights])

    store = make_store(recordings_bytes=int(2.5 * recording("x").nbytes()))
    for key in ("a", "b"):
        store.save_recording(recording(key))
    assert store.load_recording("a") is not None  # "a" used last: "b" goes first
    store.save_recording(recording("c"))
    assert store.has_recording("a") and store.has_recording("c") and not store.has_recording("b")
    store.save_recording(Recording("huge", META, update.state, update.lanes, [(0.0, 0)], [weights * 3]))
    assert not store.has_recording("huge") and store.has_recording("a")  # over the whole budget: not kept


def test_channels_expire() -> None:
    now = [0.0]
    store = MemoryStore(clock=lambda: now[0], channel_ttl_s=60)
    store.publish("r", _update(1, 1, META))
    now[0] = 59
    assert store.read("r", 0) is not None
    now[0] = 200
    assert store.read("r", 0) is None


def overwrite(store: RunStore, kind: str, name: str, value: bytes) -> None:
    """Put raw ``value`` where ``store`` keeps a value of ``kind`` ("rec", "ch" (appended), "ck" or "gone"), as a
    damaged value, or another writer of the shared store, would."""
    if isinstance(store, MemoryStore):
        if kind == "rec":
            store._recordings[name] = value
        elif kind == "ch":
            store._channels[name].updates.append(value)
        elif kind == "ck":
            store._channels[name].checkpoints = value
        else:
            store._gone[name] = (store._clock(), value)
    elif kind == "ch":
        store._redis.rpush(store._key(kind, name), value)
    else:
        store._redis.set(store._key(kind, name), value)


def _good_recording(key: str = "k", timeline: list | None = None) -> Recording:
    update = _update(1, 3, META)
    return Recording(key, META, update.state, update.lanes, [(0.0, 0), (0.5, 3)] if timeline is None else timeline,
                     [b"weights"])


def _seconds_overflow() -> bytes:
    from tests.explorer.test_run_codec import _reencode

    return _reencode(run_codec.encode_recording(_good_recording()),
                     lambda h: h["body"]["timeline"][1].__setitem__(0, 10**400))


@pytest.mark.parametrize("damaged", [
    lambda: b"\x80\x04garbage",
    lambda: run_codec.encode_recording(_good_recording(timeline=[])),  # replaying it raised an IndexError
    _seconds_overflow,  # decoding it raised an OverflowError
    lambda: run_codec.encode_recording(_good_recording(key="another")),
    lambda: MAGIC + b"\x00\x00",
], ids=["garbage", "empty-timeline", "overflow", "other-key", "truncated"])
def test_a_damaged_recording_is_deleted_so_the_next_start_records_a_good_one(store, damaged) -> None:
    store.save_recording(_good_recording())
    overwrite(store, "rec", "k", damaged())
    assert store.load_recording("k") is None and not store.has_recording("k")
    store.save_recording(_good_recording())  # the next Start trained for real and kept its run
    assert store.load_recording("k").timeline == [(0.0, 0), (0.5, 3)]


def test_a_recording_over_the_budget_is_deleted_unread(make_store, monkeypatch) -> None:
    value = run_codec.encode_recording(_good_recording())
    store = make_store(recordings_bytes=len(value) - 1)
    overwrite(store, "rec", "k", value)  # valid, but larger than this store keeps

    def never(*args, **kwargs):
        raise AssertionError("an oversized value was decoded")

    monkeypatch.setattr(run_codec, "decode_recording", never)
    assert store.load_recording("k") is None and not store.has_recording("k")


def test_damaged_model_files_and_notes_read_as_missing(store) -> None:
    store.publish("r", _update(1, 1, META))
    store.put_checkpoints("r", 3, [b"weights"])
    overwrite(store, "ck", "r", run_codec.encode_checkpoints(3, []))  # no file at all
    assert store.checkpoints("r") is None
    store.put_checkpoints("r", 4, [b"weights"])
    assert store.checkpoints("r") == (4, [b"weights"])
    store.end("r", "released")
    for note in (b"[]", b'{"reason": 5, "recording": null}', b'{"reason": "r"}', b"not json"):
        overwrite(store, "gone", "r", note)
        assert store.gone("r") is None  # the page says the link expired, instead of failing


def test_a_damaged_update_raises_the_one_exception(store) -> None:
    store.publish("r", _update(1, 1, META))
    overwrite(store, "ch", "r", b"\x80\x04garbage")
    with pytest.raises(DamagedValue, match="cannot read"):
        store.read("r", 0)
    with pytest.raises(StoreUnavailable):  # what every page catches already
        store.read("r", 1)
    assert store.read("r", 2) == ([], 2)
    with pytest.raises(ValueError, match="cursor"):
        store.read("r", -1)


def test_updates_over_their_limit_are_left_unread(make_store, monkeypatch) -> None:
    small, big = _update(1, 1, META), _update(2, 30)
    limit = len(run_codec.encode_update(small)) + 10
    store = make_store(limits=ReadLimits(update_bytes=limit))
    store.publish("r", small)
    with pytest.raises(StoreUnavailable, match="more than"):
        store.publish("r", big)  # the owner is told; no watcher would read it
    overwrite(store, "ch", "r", run_codec.encode_update(big))
    updates, cursor = store.read("r", 0)  # the good update before it still arrives
    assert len(updates) == 1 and cursor == 1
    decode = run_codec.decode_update
    monkeypatch.setattr(run_codec, "decode_update", lambda data, **kw: decode(data, **kw) if len(data) <= limit
                        else pytest.fail("an oversized update was decoded"))
    with pytest.raises(DamagedValue, match=f"over the {limit:,} allowed, left unread"):
        store.read("r", 1)


def test_a_channel_is_read_in_pages(make_store) -> None:
    store = make_store(limits=ReadLimits(read_bytes=1))  # every update is over it: one a read
    for first in (1, 2, 3):
        store.publish("r", _update(first, 1, META if first == 1 else None))
    cursor, steps = 0, []
    for _ in range(3):
        updates, cursor = store.read("r", cursor)
        steps += [u.lanes[0].history[0]["step"] for u in updates]
    assert steps == [1, 2, 3] and store.read("r", cursor) == ([], 3)


@pytest.mark.parametrize("watcher", ["", "w" * 500, None])
def test_watcher_ids_are_checked(store, watcher) -> None:
    store.publish("r", _update(1, 1, META))
    with pytest.raises(ValueError, match="watcher id"):
        store.touch_watcher("r", watcher)


def test_a_lanes_news_merges_into_a_mirror_one_way_for_the_server_and_the_watcher():
    """LaneUpdate.merge_into: rows appended; a snapshot of a step held already is not added again, and the owner's
    thinning applies to everything held; a sample set the mirror wrote itself (same step and caption) is not
    repeated."""
    from explorer.runs.frame import SampleSet

    history, snapshots, samples = [{"step": 1.0}], [_snapshot(0), _snapshot(10)], [SampleSet(10, "", ())]
    news = LaneUpdate(history=[{"step": 2.0}], snapshots=[_snapshot(10), _snapshot(20), _snapshot(30)],
                      samples=[SampleSet(10, "", ()), SampleSet(20, "", ())], kept=[0, 20, 30])
    merged = news.merge_into(history, snapshots, samples)
    assert [r["step"] for r in history] == [1.0, 2.0]
    assert [s.step for s in merged] == [0, 20, 30]
    assert [(s.step, s.caption) for s in samples] == [(10, ""), (20, "")]
    assert [s.step for s in LaneUpdate(snapshots=[_snapshot(40)]).merge_into([], merged, [])] == [0, 20, 30, 40]
