"""The store's byte format: exact round trips, the documented layout, and strict refusal of bad bytes."""

from __future__ import annotations

import contextlib
import json
import math
import struct

import numpy as np
import pytest

from explorer.runs import codec as run_codec
from explorer.runs.envelope import HEADER_BYTES, HEADER_ITEMS, MAGIC
from explorer.runs.frame import SampleSet
from explorer.runs.store import LaneUpdate, Recording, RunUpdate
from tests.explorer.test_run_store import META, _same_update, _snapshot, _update
from transformer_core.tasks.base import Sample
from transformer_core.training import Snapshot


def _recording() -> Recording:
    update = _update(1, 4, META)
    state = {**update.state, "lanes": update.state["lanes"] * 2}
    return Recording(key="k", meta={**META, "labels": ["A", "B"]}, state=state,
                     lanes=update.lanes + [LaneUpdate(kept=[0, 4])], timeline=[(0.0, 0), (0.25, 2), (0.5, 4)],
                     checkpoints=[b"\x00\xffsafetensors", b""])


def _state(lanes: int = 1) -> dict:
    lane = {"step": 1, "steps": 9, "done": False, "last_eval": None}
    return {"status": "running", "step": 1, "lanes": [lane] * lanes}


def _header(data: bytes) -> tuple[dict, memoryview]:
    """Split encoded bytes by hand, as explorer.runs.envelope describes them (an independent reader)."""
    (length,) = struct.unpack(">I", data[len(MAGIC):len(MAGIC) + 4])
    start = len(MAGIC) + 4
    return json.loads(data[start:start + length]), memoryview(data)[start + length:]


def _reencode(data: bytes, change) -> bytes:
    header, payload = _header(data)
    change(header)
    text = json.dumps(header).encode()
    return MAGIC + struct.pack(">I", len(text)) + text + bytes(payload)


def test_update_round_trip_keeps_values_and_dtypes() -> None:
    update = _update(3, 4, META)
    update.lanes[0].history.append({"step": 7, "loss": math.nan, "lr": 1e-3, "seconds": 0.5})
    decoded = run_codec.decode_update(run_codec.encode_update(update))
    assert math.isnan(decoded.lanes[0].history[-1]["loss"])
    decoded.lanes[0].history.pop(), update.lanes[0].history.pop()
    _same_update(decoded, update)
    snap = decoded.lanes[0].snapshots[0]
    assert snap.attention["cross"].dtype == np.float16 and snap.scores["cross:anti_diagonal"].dtype == np.float64
    assert isinstance(decoded.lanes[0].samples[0], SampleSet) and isinstance(decoded.lanes[0].samples[0].items[1],
                                                                             Sample)
    assert decoded.lanes[0].samples[0].items[1].detail == "1 of 2 digits wrong"
    snap.attention["cross"][0, 0, 0, 0] = 1.0  # decoded arrays are the caller's own, writable copies


def test_recording_round_trip_keeps_files_timeline_and_kept_steps() -> None:
    recording = _recording()
    decoded = run_codec.decode_recording(run_codec.encode_recording(recording))
    assert decoded.key == "k" and decoded.timeline == recording.timeline
    assert all(isinstance(point, tuple) for point in decoded.timeline)
    assert decoded.checkpoints == recording.checkpoints and decoded.lanes[1].kept == [0, 4]
    _same_update(RunUpdate(decoded.state, decoded.lanes, decoded.meta),
                 RunUpdate(recording.state, recording.lanes, recording.meta))


def test_checkpoints_round_trip() -> None:
    files = [bytes(range(256)) * 3, b"b"]
    assert run_codec.decode_checkpoints(run_codec.encode_checkpoints(12, files)) == (12, files)


def test_layout_is_header_then_raw_arrays() -> None:
    snapshot = _snapshot(5)
    data = run_codec.encode_update(RunUpdate(_state(), [LaneUpdate(snapshots=[snapshot])]))
    header, payload = _header(data)
    dtype, shape, offset = header["arrays"][header["body"]["lanes"][0]["snapshots"][0]["attention"]["cross"]]
    raw = snapshot.attention["cross"]
    assert (dtype, shape) == ("<f2", list(raw.shape))
    assert bytes(payload[offset:offset + raw.nbytes]) == raw.astype("<f2").tobytes()
    assert len(data) < raw.nbytes + snapshot.scores["cross:anti_diagonal"].nbytes + 1500  # float16 stays 2 bytes


def test_big_endian_arrays_are_stored_little_endian() -> None:
    scores = np.arange(6, dtype=">f4").reshape(2, 3)
    lane = LaneUpdate(snapshots=[Snapshot(1, {}, {"s": scores})])
    decoded = run_codec.decode_update(run_codec.encode_update(RunUpdate(_state(), [lane])))
    np.testing.assert_array_equal(decoded.lanes[0].snapshots[0].scores["s"], scores)


def test_every_truncation_is_refused() -> None:
    data = run_codec.encode_update(_update(1, 2, META))
    for end in range(len(data)):
        with pytest.raises(ValueError, match="stored update"):
            run_codec.decode_update(data[:end])


@pytest.mark.parametrize(("change", "message"), [
    (lambda h: h["arrays"][0].__setitem__(0, "|O"), "numeric dtype"),
    (lambda h: h["arrays"][0].__setitem__(2, 10**9), "past the end"),
    (lambda h: h["arrays"][0].__setitem__(1, [-1, 2]), "whole number"),
    (lambda h: h["body"]["lanes"][0]["snapshots"][0]["attention"].__setitem__("cross", 99), "names array"),
    (lambda h: h["body"]["lanes"][0].__setitem__("extra", 1), "lane 0 is not an object with exactly"),
    (lambda h: h["body"]["lanes"][0]["samples"][0]["items"][0].__setitem__(3, "yes"), "true or false"),
    (lambda h: h["body"]["lanes"][0]["samples"][0]["items"][0].pop(), "is not \\[input"),
    (lambda h: h["body"]["lanes"][0]["history"][0].__setitem__("loss", "low"), "not a number"),
    (lambda h: h.__setitem__("kind", "recording"), "holds a 'recording'"),
    (lambda h: h["body"].__setitem__("state", ["running"]), "state is not an object"),
])
def test_bad_headers_are_refused(change, message) -> None:
    data = _reencode(run_codec.encode_update(_update(1, 2, META)), change)
    with pytest.raises(ValueError, match=message):
        run_codec.decode_update(data)


def test_foreign_bytes_are_refused() -> None:
    good = run_codec.encode_update(_update(1, 1, META))
    with pytest.raises(ValueError, match="not written by this version"):
        run_codec.decode_update(b"\x80\x04\x95" + good)  # a pickle's opening bytes
    with pytest.raises(ValueError, match="unreadable header"):
        run_codec.decode_update(MAGIC + struct.pack(">I", 4) + b"{no}")
    with pytest.raises(ValueError, match="expected bytes"):
        run_codec.decode_update("text")
    with pytest.raises(ValueError, match="holds a 'update'"):
        run_codec.decode_recording(good)


def test_objects_that_are_not_plain_data_are_not_stored() -> None:
    with pytest.raises(ValueError, match="not plain data"):
        run_codec.encode_update(RunUpdate({"status": object()}, []))
    lane = LaneUpdate(snapshots=[Snapshot(1, {"x": np.array(["a"], dtype=object)}, {})])
    with pytest.raises(ValueError, match="dtype object"):
        run_codec.encode_update(RunUpdate({}, [lane]))


def _recording_with(change) -> bytes:
    return _reencode(run_codec.encode_recording(_recording()), change)


@pytest.mark.parametrize(("change", "message"), [
    (lambda h: h["body"]["timeline"][1].__setitem__(0, 10**400), "unreadable header"),  # once an OverflowError
    (lambda h: h["body"]["timeline"][1].__setitem__(0, math.inf), "timeline point 1 is not a finite number"),
    (lambda h: h["body"]["timeline"][1].__setitem__(0, math.nan), "timeline point 1 is not a finite number"),
    (lambda h: h["body"].__setitem__("timeline", []), "timeline is empty"),  # once an IndexError in the replay
    (lambda h: h["body"]["timeline"][2].__setitem__(0, 0.1), "goes back in time"),
    (lambda h: h["body"]["checkpoints"].pop(), "1 model files for 2 lanes"),
    (lambda h: h["body"]["meta"]["labels"].pop(), "lane counts that disagree"),
    (lambda h: h["body"]["meta"].__setitem__("task_options", {"eval_size": 10**7}), "Undeclared option"),
    (lambda h: h["body"]["meta"].__setitem__("task_options", {"seq_len": 10**6}), "between 1 and 64"),
    (lambda h: h["body"]["meta"].__setitem__("task_options", {"seq_len": "8"}), "must be a whole number"),
    (lambda h: h["body"]["meta"].__setitem__("task", "nope"), "Unknown task"),
    (lambda h: h["body"].__setitem__("key", "k" * 500), "key is not 1 to"),
])
def test_recordings_are_checked_like_uploads(change, message) -> None:
    with pytest.raises(ValueError, match=f"stored recording: .*{message}"):
        run_codec.decode_recording(_recording_with(change))


@pytest.mark.parametrize(("change", "message"), [
    (lambda h: h["body"]["state"].pop("status"), "state lacks status"),  # once a KeyError on the watch page
    (lambda h: h["body"]["state"].__setitem__("status", "hacked"), "unknown status"),
    (lambda h: h["body"]["state"].__setitem__("eta_s", -1), "time left is not a finite number"),
    (lambda h: h["body"]["state"].__setitem__("message", "x" * 5000), "state message is not text"),
    (lambda h: h["body"]["state"]["lanes"][0].pop("done"), "state lane 0 is not \\{step"),
    (lambda h: h["body"]["state"]["lanes"][0].__setitem__("last_eval", {"loss": "low"}), "not a number"),
    (lambda h: h["body"]["state"]["lanes"].append(h["body"]["state"]["lanes"][0]), "lane counts that disagree"),
    (lambda h: h["body"]["state"].__setitem__("extra", {"nested": 1}), "not plain data"),
    (lambda h: h["body"]["meta"].pop("labels"), "meta lacks labels"),
    (lambda h: h["body"]["meta"].__setitem__("labels", ["A", "B", "C"]), "1 to 2 lane labels"),
    (lambda h: h["body"]["meta"].__setitem__("query", {"task": 5}), "query setting 'task' is not text"),
    (lambda h: h["body"]["meta"].__setitem__("task_options", {"seq_len": 8, "min_len": True}), "whole number"),
])
def test_updates_state_and_meta_are_checked(change, message) -> None:
    data = _reencode(run_codec.encode_update(_update(1, 2, META)), change)
    with pytest.raises(ValueError, match=f"stored update: .*{message}"):
        run_codec.decode_update(data)


def test_declared_task_options_pass_and_come_back_typed() -> None:
    meta = {**META, "task": "vit_shapes", "task_options": {"num_classes": 3, "image_size": 32, "noise": 0}}
    decoded = run_codec.decode_update(run_codec.encode_update(_update(1, 1, meta)))
    assert decoded.meta["task_options"] == {"num_classes": 3, "image_size": 32, "noise": 0.0}
    assert isinstance(decoded.meta["task_options"]["noise"], float)


HOSTILE = [None, True, -1, 10**30, 1e308, "x" * 300, [], {}, [[0]]]


def _paths(value, path=()):
    """Every place in a JSON value, as key paths."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


@pytest.mark.parametrize("kind", ["update", "recording"])
def test_any_value_anywhere_fails_only_with_a_value_error(kind) -> None:
    """Every field of a header replaced by each of several hostile values: decoding succeeds or raises the one
    ValueError, never an OverflowError, KeyError, IndexError or TypeError."""
    encode, decode = {"update": (run_codec.encode_update, run_codec.decode_update),
                      "recording": (run_codec.encode_recording, run_codec.decode_recording)}[kind]
    data = encode(_update(1, 2, META) if kind == "update" else _recording())
    header, _ = _header(data)
    tried = 0
    for path in list(_paths(header))[1:]:
        for hostile in HOSTILE:
            def change(h, path=path, hostile=hostile):
                for key in path[:-1]:
                    h = h[key]
                h[path[-1]] = hostile
            try:
                decode(_reencode(data, change))
            except ValueError as err:
                assert str(err).startswith(f"stored {kind}:"), err
            tried += 1
    assert tried > 300


def test_values_over_their_limit_are_refused_before_decoding() -> None:
    data = run_codec.encode_update(_update(1, 2, META))
    with pytest.raises(ValueError, match=f"{len(data):,} bytes, over the 100 allowed"):
        run_codec.decode_update(data, limit=100)
    with pytest.raises(ValueError, match="over the 10 allowed"):
        run_codec.decode_checkpoints(run_codec.encode_checkpoints(1, [b"x" * 100]), limit=10)


def test_headers_are_bounded_before_they_are_parsed() -> None:
    """JSON makes Python objects many times its size: a header too long, or of too many items, is refused."""
    long_text = _reencode(run_codec.encode_update(_update(1, 1, META)),
                          lambda h: h["body"]["meta"]["config"].__setitem__("x", "y" * HEADER_BYTES))
    with pytest.raises(ValueError, match="header of .* bytes is over"):
        run_codec.decode_update(long_text)
    empty_rows = HEADER_ITEMS  # "{}," per row: 3 bytes, well within HEADER_BYTES, one item each
    many = _reencode(run_codec.encode_update(_update(1, 1, META)),
                     lambda h: h["body"]["lanes"][0].__setitem__("history", [{}] * empty_rows))
    assert len(many) < HEADER_BYTES
    with pytest.raises(ValueError, match="items, over the"):
        run_codec.decode_update(many)


def _peak_bytes(decode, data: bytes) -> int:
    """The most memory ``decode(data)`` takes at once, whether it decodes or refuses ``data``."""
    import tracemalloc

    tracemalloc.start()
    try:
        with contextlib.suppress(ValueError):
            decode(data)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_decoding_takes_about_twice_a_value_at_most() -> None:
    """Arrays are copied once; a header of many small items, which JSON would make 50 times larger in Python
    objects (a 2 MB header took about 100 MB), is refused before it is parsed."""
    big = [Snapshot(s, {"cross": np.ones((4, 4, 32, 32), np.float32)}, {}) for s in range(60)]  # ~4 MB of arrays
    arrays = run_codec.encode_update(RunUpdate(_state(), [LaneUpdate(history=[{"step": 1, "loss": 0.5}] * 2000,
                                                                     snapshots=big)]))
    rows = (HEADER_BYTES - 2000) // 4  # "{}, " each
    objects = _reencode(run_codec.encode_update(_update(1, 1, META)),
                        lambda h: h["body"]["lanes"][0].__setitem__("history", [{}] * rows))
    assert len(objects) <= HEADER_BYTES
    for data in (arrays, objects):
        assert _peak_bytes(run_codec.decode_update, data) < 2.5 * len(data)


def test_ended_channel_notes_are_checked() -> None:
    assert run_codec.decode_note(run_codec.encode_note("done", "key")) == {"reason": "done", "recording": "key"}
    assert len(run_codec.decode_note(run_codec.encode_note("x" * 10_000, None))["reason"]) == 2000
    for bad in (b"[]", b'{"reason": 5, "recording": null}', b'{"reason": "r"}', b"\xff", b"1" * 9000,
                b'{"reason": "r", "recording": ""}'):
        with pytest.raises(ValueError, match="stored note"):
            run_codec.decode_note(bad)
