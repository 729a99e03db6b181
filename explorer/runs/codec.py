"""Bytes for what the run store keeps outside this process: :class:`RunUpdate`, :class:`Recording`, model files,
and an ended channel's note.

Updates, recordings and model files travel in :mod:`explorer.runs.envelope` (``MAGIC``, a bounded JSON header, then
raw array and file bytes): the header's body holds the value's fields as plain JSON, with every array and model file
replaced by its index in the envelope. ``state`` and ``meta`` are stored as JSON, so their tuples come back as lists
and NumPy numbers as plain ones. A note is short plain JSON of its own, bounded by ``NOTE_BYTES``.

Nothing is pickled: decoding reads JSON and numbers only and rebuilds each dataclass field by field, checking types
and bounds on the way, then checks ``state``, ``meta`` and the timeline as :mod:`explorer.runs.schema` describes
them. Bad, truncated, oversized or foreign bytes raise a :class:`ValueError` that says what is wrong, and nothing
else: whatever a value holds, decoding it fails only that way.
"""

from __future__ import annotations

import json
from typing import Any

from explorer.runs import schema
from explorer.runs.envelope import DECODE_ERRORS, Reader, Writer, decoding, whole
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

__all__ = ["decode_checkpoints", "decode_note", "decode_recording", "decode_update", "encode_checkpoints",
           "encode_note", "encode_recording", "encode_update"]

_SAMPLE_FIELDS = 5  # input, target, prediction, correct, detail


def encode_update(update: RunUpdate) -> bytes:
    """``update`` as bytes (see the module docstring)."""
    out = Writer()
    body = {"state": update.state, "meta": update.meta, "lanes": [_lane_body(lane, out) for lane in update.lanes]}
    return out.finish("update", body)


def decode_update(data: bytes, *, limit: int = UPDATE_BYTES) -> RunUpdate:
    """The :class:`RunUpdate` that :func:`encode_update` wrote; ``ValueError`` for anything else, and for a value
    over ``limit`` bytes."""
    return decoding("update", _update, data, limit)


def _update(r: Reader) -> RunUpdate:
    body = r.dict(r.body, "update", keys={"state", "meta", "lanes"})
    state, lanes = r.checked(schema.check_state, body["state"]), _lanes(r, body["lanes"])
    meta = None if body["meta"] is None else r.checked(schema.check_meta, body["meta"])
    r.checked(schema.lane_count, len(lanes), state, meta)
    return RunUpdate(state=state, lanes=lanes, meta=meta)


def encode_recording(recording: Recording) -> bytes:
    """``recording`` as bytes, its checkpoints included."""
    out = Writer()
    body = {"key": recording.key, "meta": recording.meta, "state": recording.state,
            "lanes": [_lane_body(lane, out) for lane in recording.lanes],
            "timeline": [[float(seconds), int(step)] for seconds, step in recording.timeline],
            "checkpoints": [out.blob(c) for c in recording.checkpoints],
            "models": [[[int(step), out.blob(c)] for step, c in lane] for lane in recording.models]}
    return out.finish("recording", body)


def decode_recording(data: bytes, *, limit: int = RECORDINGS_BYTES) -> Recording:
    """The :class:`Recording` that :func:`encode_recording` wrote; ``ValueError`` for anything else, and for a
    value over ``limit`` bytes."""
    return decoding("recording", _recording, data, limit)


def _recording(r: Reader) -> Recording:
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


def _models(r: Reader, value: Any, lanes: int) -> list[list[tuple[int, bytes]]]:
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
    out = Writer()
    return out.finish("checkpoints", {"step": int(step), "files": [out.blob(c) for c in checkpoints]})


def decode_checkpoints(data: bytes, *, limit: int = CHECKPOINTS_BYTES) -> tuple[int, list[bytes]]:
    """``(step, files)`` as :func:`encode_checkpoints` wrote them; ``ValueError`` for anything else, and for a
    value over ``limit`` bytes."""
    return decoding("checkpoints", _checkpoints, data, limit)


def encode_note(reason: str, recording: str | None) -> bytes:
    """An ended channel's note (why it ended, and its recording key) as JSON; a long reason is cut short."""
    return json.dumps({"reason": reason[:schema.TEXT_CHARS], "recording": recording}).encode()


def decode_note(data: bytes) -> dict[str, Any]:
    """``{"reason", "recording"}`` as :func:`encode_note` wrote it; ``ValueError`` for anything else."""
    try:
        if len(data) > NOTE_BYTES:
            raise ValueError(f"{len(data):,} bytes, over the {NOTE_BYTES:,} allowed")
        return schema.check_note(json.loads(data, parse_int=whole))
    except (*DECODE_ERRORS, AttributeError) as err:
        raise ValueError(f"stored note: {str(err)[:300]}") from err


def _checkpoints(r: Reader) -> tuple[int, list[bytes]]:
    body = r.dict(r.body, "checkpoints", keys={"step", "files"})
    files = [r.blob(i, "file") for i in r.list(body["files"], "files")]
    if not 0 < len(files) <= schema.LANES:
        raise r.fail(f"does not hold 1 to {schema.LANES} model files")
    return r.int(body["step"], "step"), files


def _lane_body(lane: LaneUpdate, out: Writer) -> dict[str, Any]:
    snapshots = [{"step": s.step, "attention": {k: out.array(a) for k, a in s.attention.items()},
                  "scores": {k: out.array(a) for k, a in s.scores.items()}} for s in lane.snapshots]
    samples = [{"step": s.step, "caption": s.caption,
                "items": [[x.input, x.target, x.prediction, x.correct, x.detail] for x in s.items]}
               for s in lane.samples]
    return {"history": lane.history, "snapshots": snapshots, "samples": samples,
            "kept": None if lane.kept is None else [int(k) for k in lane.kept]}


def _lanes(r: Reader, value: Any) -> list[LaneUpdate]:
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


def _snapshot(r: Reader, value: Any) -> Snapshot:
    s = r.dict(value, "snapshot", keys={"step", "attention", "scores"})
    return Snapshot(step=r.int(s["step"], "snapshot step"),
                    attention={r.str(k, "map name"): r.array(i, f"attention {k!r}")
                               for k, i in r.dict(s["attention"], "attention").items()},
                    scores={r.str(k, "score name"): r.array(i, f"score {k!r}")
                            for k, i in r.dict(s["scores"], "scores").items()})


def _sample_set(r: Reader, value: Any) -> SampleSet:
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

