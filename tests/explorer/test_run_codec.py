"""The store's byte format: exact round trips, the documented layout, and strict refusal of bad bytes."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from explorer.runs import codec as run_codec
from explorer.runs.codec import MAGIC
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
    """Split encoded bytes by hand, as the module docstring describes them (an independent reader)."""
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
