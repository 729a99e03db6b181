"""The run stores side by side: what publishing, watching and replaying cost in memory and in a real Redis.

The update is what a char_lm Compare run publishes: two lanes, each with a few metric rows, one sample set and an
attention snapshot of its 2 layers × 4 heads on the 48-character example (float16), so two 48 × 48 heatmaps per
layer and head. The recording is a whole 300-step run of the same shape with 30 snapshots per lane. Both stores
are measured in one run, on the same data; Redis is a ``redis-server`` this script starts on a free loopback port
(or ``--redis-url``). It prints per store the median and 95th-percentile latency of

- ``publish``: the owner appends one update to its channel,
- ``read``: a watcher reads the one update it has not seen (cursor at the previous end),
- ``save`` / ``load``: a recording is kept and loaded for a replay,

how much of the Redis time is the codec (:mod:`explorer.runs.codec`), and the bytes an update and the recording
take in Redis (the codec's output) against their raw array bytes.

Usage::

    python benchmarks/store.py               # starts its own redis-server (Debian package redis-server)
    python benchmarks/store.py --redis-url redis://127.0.0.1:6379/15 --updates 500
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from explorer.runs import codec as run_codec  # noqa: E402  (needs ROOT on the path)
from explorer.runs.frame import SampleSet  # noqa: E402
from explorer.runs.store import LaneUpdate, MemoryStore, Recording, RunStore, RunUpdate  # noqa: E402
from transformer_core.tasks.base import Sample  # noqa: E402
from transformer_core.training import Snapshot  # noqa: E402

LAYERS, HEADS, T = 2, 4, 48  # char_lm's default model and its attention example
LANES = 2  # a Compare run


def _snapshot(step: int, rng: np.random.Generator) -> Snapshot:
    weights = rng.random((LAYERS, HEADS, T, T)).astype(np.float32)
    weights = np.tril(weights) / np.tril(weights).sum(-1, keepdims=True)  # causal rows that sum to 1
    return Snapshot(step, {"decoder": weights.astype(np.float16)},
                    {"decoder:previous_token": rng.random((LAYERS, HEADS)).astype(np.float32)})


def _lane(first: int, rows: int, snapshots: int, rng: np.random.Generator) -> LaneUpdate:
    history = [{"step": s, "loss": 3.0 / s, "lr": 1e-3, "seconds": 0.02 * s} for s in range(first, first + rows)]
    steps = np.linspace(first, first + rows - 1, snapshots).astype(int) if snapshots else []
    samples = [SampleSet(first + rows - 1, " · temperature 0.8, top-k 5",
                         tuple(Sample("To be, or not", " to be", " to he", False) for _ in range(3)))]
    return LaneUpdate(history=history, snapshots=[_snapshot(int(s), rng) for s in steps], samples=samples)


def _update(step: int, rng: np.random.Generator) -> RunUpdate:
    state = {"status": "running", "message": None, "step": step, "steps_per_second": 40.0, "eta_s": 5.0,
             "lanes": [{"step": step, "steps": 300, "done": False, "last_eval": {"loss": 1.9}}] * LANES,
             "downloads": False, "replay": False}
    return RunUpdate(state, [_lane(step - 4, 5, 1, rng) for _ in range(LANES)])


def _recording(rng: np.random.Generator) -> Recording:
    update = _update(300, rng)
    lanes = [_lane(1, 300, 30, rng) for _ in range(LANES)]
    return Recording("bench", {"task": "char_lm", "task_options": {}, "labels": ["A", "B"], "config": {},
                               "recording": None}, update.state, lanes, [(0.02 * s, s) for s in range(0, 301, 10)],
                     [bytes(400_000)] * LANES)  # two small models' safetensors files


def _timed(action: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _measure(store: RunStore, updates: list[RunUpdate], recording: Recording, repeats: int) -> dict[str, list]:
    publish, read = [], []
    store.publish("bench", updates[0])
    cursor = store.read("bench", 0)[1]
    for update in updates:
        publish += _timed(lambda u=update: store.publish("bench", u), 1)
        read += _timed(lambda c=cursor: store.read("bench", c), 1)
        cursor += 1
    save = _timed(lambda: store.save_recording(recording), repeats)
    load = _timed(lambda: store.load_recording("bench"), repeats)
    return {"publish": publish, "read": read, "save": save, "load": load}


def _row(name: str, times: list[float]) -> str:
    p95 = float(np.percentile(times, 95))
    return f"  {name:<8} median {statistics.median(times):8.3f} ms   p95 {p95:8.3f} ms   ({len(times)} runs)"


def _arrays_bytes(lanes: list[LaneUpdate]) -> int:
    return sum(a.nbytes for lane in lanes for s in lane.snapshots for a in (*s.attention.values(), *s.scores.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--redis-url", help="use this Redis (keys under te-bench:) instead of starting a redis-server")
    parser.add_argument("--updates", type=int, default=300, help="updates published and read per store")
    parser.add_argument("--repeats", type=int, default=20, help="recording saves and loads per store")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    updates, recording = [_update(5 * (i + 1), rng) for i in range(args.updates)], _recording(rng)
    packed_update, packed_recording = run_codec.encode_update(updates[0]), run_codec.encode_recording(recording)
    print(f"update: {len(packed_update) / 1024:.1f} KiB encoded, {_arrays_bytes(updates[0].lanes) / 1024:.1f} KiB "
          f"of arrays ({LANES} lanes × {LAYERS} layers × {HEADS} heads × {T}×{T} float16)")
    print(f"recording: {len(packed_recording) / 2**20:.2f} MiB encoded, {recording.nbytes() / 2**20:.2f} MiB "
          f"counted by Recording.nbytes()")
    results = {"memory": _measure(MemoryStore(), updates, recording, args.repeats)}
    results["redis"] = _with_redis(args.redis_url, lambda store: _measure(store, updates, recording, args.repeats))
    for name, timings in results.items():
        print(f"{name}:")
        for op, times in timings.items():
            print(_row(op, times))
    codec = {"publish": _timed(lambda: run_codec.encode_update(updates[0]), args.updates),
             "read": _timed(lambda: run_codec.decode_update(packed_update), args.updates),
             "save": _timed(lambda: run_codec.encode_recording(recording), args.repeats),
             "load": _timed(lambda: run_codec.decode_recording(packed_recording), args.repeats)}
    _compare(results, codec)


def _compare(results: dict[str, dict[str, list]], codec: dict[str, list]) -> None:
    print("redis against memory (median), and the codec's share of the Redis time:")
    for op, times in codec.items():
        redis_ms, memory_ms = statistics.median(results["redis"][op]), statistics.median(results["memory"][op])
        print(f"  {op:<8} +{redis_ms - memory_ms:7.3f} ms a call ({redis_ms / max(memory_ms, 1e-6):,.0f}×); "
              f"{'decoding' if op in ('read', 'load') else 'encoding'} {statistics.median(times) / redis_ms:.0%} "
              "of it")


def _with_redis(url: str | None, measure: Callable[[RunStore], dict[str, list]]) -> dict[str, list]:
    """``measure`` on a RedisStore whose keys start with ``te-bench:`` (removed afterwards)."""
    import redis

    from explorer.runs.redis_store import RedisStore
    from tests.redis_server import start_redis

    server = None if url else start_redis()
    url = url or server.url
    store = RedisStore(url, prefix="te-bench:")
    try:
        return measure(store)
    finally:
        store.close()
        client = redis.Redis.from_url(url)
        for key in client.scan_iter(match="te-bench:*"):
            client.delete(key)
        client.close()
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
