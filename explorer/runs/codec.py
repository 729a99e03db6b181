"""Bytes for what the run store keeps outside this process: :class:`RunUpdate`, :class:`Recording`, model files.

A stored value is ``MAGIC``, a 4-byte big-endian header length, a UTF-8 JSON header, then raw array and file bytes.
The header holds the value's fields as plain JSON, with every array replaced by its index in ``"arrays"``
(``[dtype, shape, offset]``: little-endian numeric dtypes only, so float16 attention stays float16) and every model
file by its index in ``"blobs"`` (``[offset, length]``); offsets count from the end of the header. ``state`` and
``meta`` are stored as JSON, so their tuples come back as lists and NumPy numbers as plain ones.

Nothing is pickled: decoding reads JSON and numbers only and rebuilds each dataclass field by field, checking types
and bounds on the way, then checks ``state``, ``meta`` and the timeline as :mod:`explorer.runs.schema` describes
them. Bad, truncated, oversized or foreign bytes raise a :class:`ValueError` that says what is wrong, and nothing
else: whatever a value holds, decoding it fails only that way.

Memory: JSON becomes Python objects many times its size (a 4 MB header of empty objects took 190 MB), so before a
header is parsed its length is bounded (:data:`HEADER_BYTES`) and so is the number of items it can make
(:data:`HEADER_ITEMS`), which bounds a header's objects to a few tens of MB; whole numbers in it have at most
:data:`DIGITS` digits. Arrays and files are copied once out of the value, which is read in place (a
``memoryview``, never copied whole): a value decodes in about twice its size.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np

from explorer.runs import schema
from explorer.runs.frame import SampleSet
from explorer.runs.updates import (
    CHECKPOINTS_BYTES,
    NOTE_BYTES,
    RECORDINGS_BYTES,
    UPDATE_BYTES,
    LaneUpdate,
    Recording,
    RunUpdate,
)
from transformer_core.tasks.base import Sample
from transformer_core.training import Snapshot

__all__ = ["DIGITS", "HEADER_BYTES", "HEADER_ITEMS", "MAGIC", "decode_checkpoints", "decode_note", "decode_recording",
           "decode_update", "encode_checkpoints", "encode_note", "encode_recording", "encode_update"]

MAGIC = b"TE-RUN\x00\x01"  # the format's name and version: bytes written by another version are refused
_LENGTH = struct.Struct(">I")
_DTYPES = frozenset({"<f2", "<f4", "<f8", "<i4", "<i8", "|u1", "|b1"})  # what snapshots and scores hold
_SAMPLE_FIELDS = 5  # input, target, prediction, correct, detail
HEADER_BYTES = 2 * 2**20  # longest JSON header read: a 5,000-step run's two histories take about 0.7 MB
HEADER_ITEMS = 200_000  # most JSON items in a header (counted as its , : { and [), about 4× that run's
DIGITS = 20  # longest whole number read from a header (a step, an offset, a length)
_DECODE_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, UnicodeError)


class _Writer:
    """Collects arrays and files into one payload while the header is built."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.arrays: list[list[Any]] = []
        self.blobs: list[list[int]] = []
        self.offset = 0

    def _add(self, data: bytes) -> int:
        start = self.offset
        self.chunks.append(data)
        self.offset += len(data)
        return start

    def array(self, value: np.ndarray) -> int:
        a = np.asarray(value)
        a = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
        if a.dtype.str not in _DTYPES:
            raise ValueError(f"cannot store an array of dtype {a.dtype} (numbers and booleans only)")
        self.arrays.append([a.dtype.str, list(a.shape), self._add(np.ascontiguousarray(a).tobytes())])
        return len(self.arrays) - 1

    def blob(self, data: bytes) -> int:
        self.blobs.append([self._add(bytes(data)), len(data)])
        return len(self.blobs) - 1

    def finish(self, kind: str, body: dict[str, Any]) -> bytes:
        header = {"kind": kind, "body": body, "arrays": self.arrays, "blobs": self.blobs}
        try:
            text = json.dumps(header, default=_plain, separators=(",", ":")).encode()
        except TypeError as err:
            raise ValueError(f"cannot store this {kind}: {err}") from err
        return b"".join([MAGIC, _LENGTH.pack(len(text)), text, *self.chunks])


def _plain(value: Any) -> Any:
    """NumPy scalars and small arrays in metadata become plain JSON numbers and lists."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not plain data")


def _whole(text: str) -> int:
    """A whole number of the header, refused when longer than :data:`DIGITS` digits (no float overflows later)."""
    if len(text.lstrip("-")) > DIGITS:
        raise ValueError(f"a number of {len(text):,} digits")
    return int(text)


class _Reader:
    """Reads and checks one encoded value; every failure is a ValueError naming what is wrong."""

    def __init__(self, data: bytes, kind: str, limit: int) -> None:
        self.kind = kind
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ValueError(f"stored {kind}: expected bytes, got {type(data).__name__}")
        data = memoryview(data).cast("B")  # read in place: the value is never copied whole
        if len(data) > limit:
            raise ValueError(f"stored {kind}: {len(data):,} bytes, over the {limit:,} allowed")
        if bytes(data[:len(MAGIC)]) != MAGIC:
            raise ValueError(f"stored {kind}: not written by this version of the app (unknown format)")
        start = len(MAGIC) + _LENGTH.size
        if len(data) < start:
            raise ValueError(f"stored {kind}: truncated before its header")
        (length,) = _LENGTH.unpack_from(data, len(MAGIC))
        if length > HEADER_BYTES:
            raise ValueError(f"stored {kind}: its header of {length:,} bytes is over the {HEADER_BYTES:,} allowed")
        if start + length > len(data):
            raise ValueError(f"stored {kind}: truncated inside its header")
        text = bytes(data[start:start + length])
        items = sum(text.count(mark) for mark in (b",", b":", b"{", b"["))
        if items > HEADER_ITEMS:  # parsed, each would become a Python object: refused before that
            raise ValueError(f"stored {kind}: its header holds about {items:,} items, over the {HEADER_ITEMS:,} "
                             "allowed")
        try:
            header = json.loads(text, parse_int=_whole)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as err:
            raise ValueError(f"stored {kind}: unreadable header ({str(err)[:200]})") from err
        header = self.dict(header, "header", keys={"kind", "body", "arrays", "blobs"})
        if header["kind"] != kind:
            raise ValueError(f"stored {kind}: holds a {header['kind']!r} instead")
        self.body = self.dict(header["body"], "body")
        self.arrays, self.blobs = self.list(header["arrays"], "arrays"), self.list(header["blobs"], "blobs")
        self.payload = data[start + length:]

    def fail(self, message: str) -> ValueError:
        return ValueError(f"stored {self.kind}: {message}")

    def dict(self, value: Any, where: str, keys: set[str] | None = None) -> dict[str, Any]:
        if not isinstance(value, dict) or (keys is not None and set(value) != keys):
            wanted = f" with exactly {sorted(keys)}" if keys is not None else ""
            raise self.fail(f"{where} is not an object{wanted}")
        return value

    def list(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(f"{where} is not a list")
        return value

    def int(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"{where} is not a whole number ≥ 0")
        return value

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"{where} is not a number")
        return value

    def checked(self, check: Any, *args: Any) -> Any:
        """``check(*args)`` (a :mod:`explorer.runs.schema` check), its ValueError naming this value."""
        try:
            return check(*args)
        except ValueError as err:
            raise self.fail(str(err)) from err

    def str(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{where} is not text")
        return value

    def span(self, offset: Any, length: Any, where: str) -> memoryview:
        offset, length = self.int(offset, f"{where} offset"), self.int(length, f"{where} length")
        if offset + length > len(self.payload):
            raise self.fail(f"{where} lies past the end of the data (truncated?)")
        return self.payload[offset:offset + length]

    def array(self, index: Any, where: str) -> np.ndarray:
        index = self.int(index, where)
        if index >= len(self.arrays):
            raise self.fail(f"{where} names array {index} of {len(self.arrays)}")
        entry = self.list(self.arrays[index], f"array {index}")
        if len(entry) != 3 or entry[0] not in _DTYPES:
            raise self.fail(f"array {index} is not [dtype, shape, offset] with a numeric dtype")
        dtype, shape = np.dtype(entry[0]), [self.int(n, f"array {index} shape") for n in self.list(entry[1], where)]
        raw = self.span(entry[2], math.prod(shape) * dtype.itemsize, f"array {index}")
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()

    def blob(self, index: Any, where: str) -> bytes:
        index = self.int(index, where)
        if index >= len(self.blobs):
            raise self.fail(f"{where} names file {index} of {len(self.blobs)}")
        entry = self.list(self.blobs[index], f"file {index}")
        if len(entry) != 2:
            raise self.fail(f"file {index} is not [offset, length]")
        return bytes(self.span(entry[0], entry[1], f"file {index}"))


def encode_update(update: RunUpdate) -> bytes:
    """``update`` as bytes (see the module docstring)."""
    out = _Writer()
    body = {"state": update.state, "meta": update.meta, "lanes": [_lane_body(lane, out) for lane in update.lanes]}
    return out.finish("update", body)


def decode_update(data: bytes, *, limit: int = UPDATE_BYTES) -> RunUpdate:
    """The :class:`RunUpdate` that :func:`encode_update` wrote; ``ValueError`` for anything else, and for a value
    over ``limit`` bytes."""
    return _decoding("update", _update, data, limit)


def _update(r: _Reader) -> RunUpdate:
    body = r.dict(r.body, "update", keys={"state", "meta", "lanes"})
    state, lanes = r.checked(schema.check_state, body["state"]), _lanes(r, body["lanes"])
    meta = None if body["meta"] is None else r.checked(schema.check_meta, body["meta"])
    r.checked(schema.lane_count, len(lanes), state, meta)
    return RunUpdate(state=state, lanes=lanes, meta=meta)


def encode_recording(recording: Recording) -> bytes:
    """``recording`` as bytes, its checkpoints included."""
    out = _Writer()
    body = {"key": recording.key, "meta": recording.meta, "state": recording.state,
            "lanes": [_lane_body(lane, out) for lane in recording.lanes],
            "timeline": [[float(seconds), int(step)] for seconds, step in recording.timeline],
            "checkpoints": [out.blob(c) for c in recording.checkpoints],
            "models": [[[int(step), out.blob(c)] for step, c in lane] for lane in recording.models]}
    return out.finish("recording", body)


def decode_recording(data: bytes, *, limit: int = RECORDINGS_BYTES) -> Recording:
    """The :class:`Recording` that :func:`encode_recording` wrote; ``ValueError`` for anything else, and for a
    value over ``limit`` bytes."""
    return _decoding("recording", _recording, data, limit)


def _recording(r: _Reader) -> Recording:
    body = r.dict(r.body, "recording", keys={"key", "meta", "state", "lanes", "timeline", "checkpoints", "models"})
    timeline = []
    for i, point in enumerate(r.list(body["timeline"], "timeline")):
        if not isinstance(point, list) or len(point) != 2:
            raise r.fail(f"timeline point {i} is not [seconds, step]")
        timeline.append((r.number(point[0], "timeline seconds"), r.int(point[1], "timeline step")))
    r.checked(schema.check_timeline, timeline)
    meta, state = r.checked(schema.check_meta, body["meta"]), r.checked(schema.check_state, body["state"])
    lanes = _lanes(r, body["lanes"])
    checkpoints = [r.blob(i, "checkpoint") for i in r.list(body["checkpoints"], "checkpoints")]
    r.checked(schema.lane_count, len(lanes), state, meta)
    if len(checkpoints) != len(lanes):
        raise r.fail(f"has {len(checkpoints)} model files for {len(lanes)} lanes")
    key = r.str(body["key"], "key")
    if not 0 < len(key) <= schema.ID_CHARS:
        raise r.fail(f"its key is not 1 to {schema.ID_CHARS} characters")
    return Recording(key=key, meta=meta, state=state, lanes=lanes, checkpoints=checkpoints,
                     timeline=[(float(seconds), step) for seconds, step in timeline],
                     models=_models(r, body["models"], len(lanes)))


def _models(r: _Reader, value: Any, lanes: int) -> list[list[tuple[int, bytes]]]:
    """A recording's models at its evaluation steps: per lane, ``[step, file]`` pairs with steps rising."""
    models = r.list(value, "models")
    if len(models) not in (0, lanes):
        raise r.fail(f"has recorded models for {len(models)} lanes of {lanes}")
    out = []
    for lane in models:
        pairs = []
        for pair in r.list(lane, "models of a lane"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise r.fail("a recorded model is not [step, file]")
            step = r.int(pair[0], "recorded model step")
            if pairs and step <= pairs[-1][0]:
                raise r.fail("recorded model steps do not rise")
            pairs.append((step, r.blob(pair[1], "recorded model")))
        out.append(pairs)
    return out


def encode_checkpoints(step: int, checkpoints: list[bytes]) -> bytes:
    """The model files a run's owner offers to its watchers, and the step they were saved at."""
    out = _Writer()
    return out.finish("checkpoints", {"step": int(step), "files": [out.blob(c) for c in checkpoints]})


def decode_checkpoints(data: bytes, *, limit: int = CHECKPOINTS_BYTES) -> tuple[int, list[bytes]]:
    """``(step, files)`` as :func:`encode_checkpoints` wrote them; ``ValueError`` for anything else, and for a
    value over ``limit`` bytes."""
    return _decoding("checkpoints", _checkpoints, data, limit)


def encode_note(reason: str, recording: str | None) -> bytes:
    """An ended channel's note (why it ended, and its recording key) as JSON; a long reason is cut short."""
    return json.dumps({"reason": reason[:schema.TEXT_CHARS], "recording": recording}).encode()


def decode_note(data: bytes) -> dict[str, Any]:
    """``{"reason", "recording"}`` as :func:`encode_note` wrote it; ``ValueError`` for anything else."""
    try:
        if len(data) > NOTE_BYTES:
            raise ValueError(f"{len(data):,} bytes, over the {NOTE_BYTES:,} allowed")
        return schema.check_note(json.loads(data, parse_int=_whole))
    except (*_DECODE_ERRORS, AttributeError) as err:
        raise ValueError(f"stored note: {str(err)[:300]}") from err


def _checkpoints(r: _Reader) -> tuple[int, list[bytes]]:
    body = r.dict(r.body, "checkpoints", keys={"step", "files"})
    files = [r.blob(i, "file") for i in r.list(body["files"], "files")]
    if not 0 < len(files) <= schema.LANES:
        raise r.fail(f"does not hold 1 to {schema.LANES} model files")
    return r.int(body["step"], "step"), files


def _decoding(kind: str, read: Any, data: bytes, limit: int) -> Any:
    """``read(reader)`` on ``data``; any failure at all is a ValueError starting ``stored <kind>:``."""
    try:
        return read(_Reader(data, kind, limit))
    except ValueError as err:
        if str(err).startswith(f"stored {kind}:"):
            raise
        raise ValueError(f"stored {kind}: {str(err)[:300]}") from err
    except _DECODE_ERRORS as err:
        raise ValueError(f"stored {kind}: unreadable ({type(err).__name__}: {str(err)[:200]})") from err


def _lane_body(lane: LaneUpdate, out: _Writer) -> dict[str, Any]:
    snapshots = [{"step": s.step, "attention": {k: out.array(a) for k, a in s.attention.items()},
                  "scores": {k: out.array(a) for k, a in s.scores.items()}} for s in lane.snapshots]
    samples = [{"step": s.step, "caption": s.caption,
                "items": [[x.input, x.target, x.prediction, x.correct, x.detail] for x in s.items]}
               for s in lane.samples]
    return {"history": lane.history, "snapshots": snapshots, "samples": samples,
            "kept": None if lane.kept is None else [int(k) for k in lane.kept]}


def _lanes(r: _Reader, value: Any) -> list[LaneUpdate]:
    lanes = []
    for i, lane in enumerate(r.list(value, "lanes")):
        lane = r.dict(lane, f"lane {i}", keys={"history", "snapshots", "samples", "kept"})
        history = [{r.str(k, "metric name"): r.number(v, f"metric {k!r}") for k, v in r.dict(row, "row").items()}
                   for row in r.list(lane["history"], "history")]
        kept = None if lane["kept"] is None else [r.int(k, "kept step") for k in r.list(lane["kept"], "kept")]
        lanes.append(LaneUpdate(history=history, kept=kept,
                                snapshots=[_snapshot(r, s) for s in r.list(lane["snapshots"], "snapshots")],
                                samples=[_sample_set(r, s) for s in r.list(lane["samples"], "samples")]))
    return lanes


def _snapshot(r: _Reader, value: Any) -> Snapshot:
    s = r.dict(value, "snapshot", keys={"step", "attention", "scores"})
    return Snapshot(step=r.int(s["step"], "snapshot step"),
                    attention={r.str(k, "map name"): r.array(i, f"attention {k!r}")
                               for k, i in r.dict(s["attention"], "attention").items()},
                    scores={r.str(k, "score name"): r.array(i, f"score {k!r}")
                            for k, i in r.dict(s["scores"], "scores").items()})


def _sample_set(r: _Reader, value: Any) -> SampleSet:
    s = r.dict(value, "sample set", keys={"step", "caption", "items"})
    items = []
    for item in r.list(s["items"], "samples"):
        if not isinstance(item, list) or len(item) != _SAMPLE_FIELDS:
            raise r.fail("a sample is not [input, target, prediction, correct, detail]")
        if not isinstance(item[3], bool):
            raise r.fail("a sample's 'correct' is not true or false")
        items.append(Sample(input=r.str(item[0], "sample input"), target=r.str(item[1], "sample target"),
                            prediction=r.str(item[2], "sample prediction"), correct=item[3],
                            detail=r.str(item[4], "sample detail")))
    return SampleSet(step=r.int(s["step"], "sample step"), caption=r.str(s["caption"], "caption"), items=tuple(items))
