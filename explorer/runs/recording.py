"""Recordings of finished runs, and their replay as a live run that trains nothing.

Runs are deterministic: the same task, model and training settings (seed included) on the same device and
PyTorch give the same curves, snapshots and samples. :func:`recording_key` hashes everything that determines a run;
:func:`record` keeps a finished run whole (history, snapshots, samples, its pace, its trained weights and its
model at evaluation steps, as far as :data:`~explorer.runs.live.KEPT_WEIGHTS_BYTES` allows) under that key in the
run store. Starting the same settings again makes a :class:`ReplayRun` instead of training: it
plays the recording back at the recorded pace (or faster), shows exactly what training showed, takes no place
among the runs training at once, and at its end holds the recorded trained model, as a finished run does.

A replay is a model too: paused, it rests on a step whose model was recorded (:meth:`ReplayRun.pause` goes back to
the latest one), "Step once" moves to the next such step, and :meth:`ReplayRun.model_at` gives that step's model,
so switching heads off on a paused replay measures the model of the step on screen.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

import torch
from torch import nn

from explorer.runs.frame import LaneFrame, RunFrame, SampleSet
from explorer.runs.live import LIVE_THREADS, LiveRun, RunSpec
from explorer.runs.pace import REPLAY_WAIT_S
from explorer.runs.store import LaneUpdate, Recording, RunStore
from explorer.runs.threads import torch_threads
from explorer.runs.watch import state_of
from transformer_core.checkpoint import load_checkpoint, read_checkpoint_info, save_checkpoint
from transformer_core.tasks.base import Task

__all__ = ["RECORDED_STATUSES", "ReplayRun", "checkpoint_bytes", "find_replay", "fits", "keep", "record",
           "recording_key", "recording_meta"]

FORMAT = 2  # bump when what a recording holds changes: older recordings then simply miss
RECORDED_STATUSES = ("done", "diverged")  # runs that went their whole way (a stopped run depends on when)


def recording_key(run: LiveRun) -> str:
    """Everything that determines ``run``'s curves, snapshots and samples, hashed (hex): its settings and, for a
    run on a user's own data, that data's fingerprint (:func:`explorer.runs.user_data.user_data_hash`)."""
    from explorer.runs.user_data import user_data_hash  # the key alone reads it (see the module's note)

    described = {"format": FORMAT, "config": run.config_dict(), "torch": torch.__version__,
                 "threads": LIVE_THREADS}
    data = user_data_hash(run.task)
    if data is not None:  # built-in data adds nothing, so the keys of recordings kept so far stay valid
        described["data"] = data
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def recording_meta(run: LiveRun, recording: str | None = None) -> dict:
    """The description of ``run`` that channels and recordings carry (see :class:`~explorer.runs.store.RunUpdate`)."""
    return {"task": run.task.name, "task_options": run.task.options(), "labels": run.labels,
            "config": run.config_dict(), "recording": recording}


def checkpoint_bytes(run: LiveRun, lane: int) -> bytes:
    """Lane ``lane``'s model as the Downloads give it: a safetensors checkpoint with its task and settings."""
    trainer = run.trainers[lane]
    extra = {"task_options": run.task.options(), "training": asdict(trainer.config), "step": trainer.step}
    return save_checkpoint(trainer.model, trainer.model_config, task_name=run.task.name, extra=extra)


def record(run: LiveRun) -> Recording | None:
    """``run`` kept whole for replays, or ``None`` when it cannot be replayed (not finished its whole way, or
    started from loaded weights)."""
    if not run.recordable or run.status not in RECORDED_STATUSES or isinstance(run, ReplayRun):
        return None
    frame = run.frame()
    lanes = [LaneUpdate(history=[dict(r) for r in lane.history], snapshots=list(lane.snapshots),
                        samples=list(lane.samples)) for lane in frame.lanes]
    key = recording_key(run)
    return Recording(key=key, meta=recording_meta(run, key), state=state_of(frame), lanes=lanes,
                     timeline=list(run.timeline), checkpoints=[checkpoint_bytes(run, i) for i in range(len(lanes))],
                     models=[_step_models(run, i) for i in range(len(lanes))])


def _step_models(run: LiveRun, lane: int) -> list[tuple[int, bytes]]:
    """Lane ``lane``'s model at each step its trainer kept weights of, as checkpoints."""
    trainer = run.trainers[lane]
    if not trainer.weights:
        return []
    scratch = copy.deepcopy(trainer.model)
    files = []
    for step, weights in trainer.weights:
        scratch.load_state_dict(weights)
        files.append((step, save_checkpoint(scratch, trainer.model_config, task_name=run.task.name,
                                            extra={"task_options": run.task.options(), "step": step})))
    return files


def find_replay(run: LiveRun, store: RunStore, *, speed: float = 1.0) -> ReplayRun | None:
    """A replay of ``run``'s settings when ``store`` keeps their recording (``None`` otherwise, or for a run
    that cannot be recorded)."""
    if isinstance(run, ReplayRun) or not run.recordable:
        return None
    key = recording_key(run)
    recording = store.load_recording(key)
    if recording is not None and not fits(recording, run):
        store.drop_recording(key)  # not this run's (damaged, or forged): the run trains, and records a good one
        return None
    return None if recording is None else ReplayRun(run.task, run.specs, recording, speed=speed)


def fits(recording: Recording, run: LiveRun) -> bool:
    """Whether ``recording`` (checked by the store already) replays ``run``: its task, lanes and labels, and one
    model file per lane whose header describes the lane's model for that task."""
    if recording.meta["task"] != run.task.name or recording.meta["labels"] != run.labels:
        return False
    for checkpoint, spec in zip(recording.checkpoints, run.specs, strict=True):
        try:
            info = read_checkpoint_info(checkpoint)
        except ValueError:
            return False
        if info.task_name != run.task.name or info.config != spec.model_config:
            return False
    return True


def keep(run: LiveRun, store: RunStore) -> Recording | None:
    """Record ``run`` in ``store`` unless it is kept already or cannot be replayed; returns what was saved."""
    recording = record(run)
    if recording is None or store.has_recording(recording.key):
        return None
    store.save_recording(recording)
    return recording


def recorded_frame(recording: Recording, task: Task) -> RunFrame:
    """The whole recorded run as the live view shows it at its end."""
    lanes = tuple(LaneFrame(label, lane.history, lane.snapshots, lane.samples, info["last_eval"], info["step"],
                            info["steps"], info["done"])
                  for label, lane, info in zip(recording.meta["labels"], recording.lanes, recording.state["lanes"],
                                               strict=True))
    state = recording.state
    return RunFrame(task, lanes, state["status"], state.get("message"), state.get("steps_per_second", 0.0), 0.0,
                    extra={"replay": True})


class ReplayRun(LiveRun):
    """A recorded run played back; the controls work as on a run that trains (Pause, Resume, Stop, Reset).

    Args:
        task, specs: the run's settings (the recording's key must be theirs).
        recording: what to play.
        speed: how many times faster than recorded (1 = the recorded pace).
        clock: seconds since an arbitrary origin (replaced in tests).
    """

    def __init__(self, task: Task, specs: Sequence[RunSpec], recording: Recording, *, speed: float = 1.0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.recording, self.speed = recording, speed
        self._full = recorded_frame(recording, task)
        self._times = [t for t, _ in recording.timeline]
        super().__init__(task, specs, threads=LIVE_THREADS, clock=clock)
        self.recordable = False  # it is a recording already

    def reset(self) -> None:
        super().reset()
        self.played_s = 0.0  # recorded seconds played so far
        self._replay_step = 0
        self._models: dict[tuple[int, int], nn.Module] = {}  # (lane, step) -> recorded model, loaded once
        self._rest_samples: dict[int, tuple[tuple[int, str], SampleSet]] = {}  # lane -> samples where paused

    def recorded_steps(self) -> list[int]:
        """The steps whose model every lane recorded (where a paused replay can rest), rising."""
        lanes = [{step for step, _ in lane} for lane in self.recording.models] or [{0}]
        return sorted(set.intersection(*lanes) | {0})

    def model_at(self, lane: int) -> tuple[nn.Module, int]:
        """Lane ``lane``'s recorded model at the latest recorded step not after the step shown, and that step."""
        if self._replay_step >= self.final_step:
            return super().model_at(lane)
        kept = [(step, data) for step, data in (self.recording.models[lane] if self.recording.models else ())
                if step <= self._replay_step]
        if not kept:
            return self.trainers[lane].model, 0  # the untrained model, as the replay starts from
        step, data = kept[-1]
        if (lane, step) not in self._models:
            self._models[(lane, step)] = load_checkpoint(data, expected_task=self.task.name).model.eval()
        return self._models[(lane, step)], step

    def next_recorded_step(self) -> int:
        """Where "Step once" moves a paused replay: the next recorded model's step, or the end."""
        later = [s for s in self.recorded_steps() if s > self._replay_step]
        return later[0] if later else self.final_step

    def pause(self) -> None:
        """Pause on the latest step whose model was recorded, so every number shown is that model's."""
        if self.status != "running":
            return
        super().pause()
        self._rest_at(max(s for s in self.recorded_steps() if s <= self._replay_step))

    def _rest_at(self, step: int) -> None:
        """Show ``step`` (its recorded time: the replay resumes from there)."""
        steps = [s for _, s in self.recording.timeline]
        at = bisect.bisect_right(steps, step) - 1
        self.played_s, self._replay_step = self._times[max(0, at)], step

    @property
    def final_step(self) -> int:
        """The step the recording ends at."""
        return self._full.step

    @property
    def step(self) -> int:
        return self._replay_step

    @property
    def total_steps(self) -> int:
        return self._full.total_steps

    @property
    def progress(self) -> float:
        return 1.0 if self._replay_step >= self.final_step else self._replay_step / max(1, self.total_steps)

    @property
    def steps_per_second(self) -> float:
        recorded = self._full.steps_per_second or (self.final_step / self._times[-1] if self._times[-1] else 0.0)
        return recorded * self.speed

    @property
    def eta_s(self) -> float | None:
        if self.finished:
            return 0.0
        return max(0.0, self._times[-1] - self.played_s) / self.speed

    @property
    def training_state_bytes(self) -> int:
        return 0  # nothing trains

    @property
    def seconds_running(self) -> float:
        return self.played_s

    def update_samples(self, sampling: dict[str, Any], caption: str, count: int, seed: int, *,
                       interrupted: Callable[[], bool] | None = None) -> bool:
        """A paused replay writes the samples of the recorded model it rests on: the recording's own were made
        at other steps, and the table must show the model that head switching measures. While it plays it
        shows the recorded ones."""
        if self.status != "paused" or self._replay_step >= self.final_step:
            return False
        added = False
        for i in range(len(self.trainers)):
            model, step = self.model_at(i)
            mark = (step, caption)
            if step != self._replay_step or self._rest_samples.get(i, (None,))[0] == mark:
                continue
            extra = {"interrupted": interrupted} if sampling and interrupted is not None else {}
            with torch_threads(self.threads), self.lock:
                items = self.task.samples(model, count, seed=seed, **sampling, **extra)
            if len(items) == count:
                self._rest_samples[i] = (mark, SampleSet(step, caption, tuple(items)))
                added = True
        return added

    def step_once(self) -> int:
        """Move to the next step whose model was recorded while paused (or ready); returns the steps moved."""
        if self.status == "running" or self.finished:
            return 0
        before, target = self._replay_step, self.next_recorded_step()
        if target >= self.final_step:
            self._move_to(self._times[-1])
        else:
            self._rest_at(target)
        self.status = "paused" if not self.finished else self.status
        return self._replay_step - before

    def advance(self, time_budget_s: float, *, interrupted: Callable[[], bool] | None = None) -> int:
        """Play about ``time_budget_s`` seconds of the recording (waiting, not training); returns steps moved."""
        if self.status != "running":
            return 0
        self.driven_at = time.monotonic()
        before = self._replay_step
        begin = last = self._clock()
        while self.status == "running":
            time.sleep(min(REPLAY_WAIT_S, time_budget_s))
            now = self._clock()
            self._move_to(self.played_s + (now - last) * self.speed)
            last = now
            if now - begin >= time_budget_s or (interrupted is not None and interrupted()):
                break
        return self._replay_step - before

    def _move_to(self, played_s: float) -> None:
        self.played_s = min(played_s, self._times[-1])
        at = bisect.bisect_right(self._times, self.played_s) - 1
        self._replay_step = max(self._replay_step, self.recording.timeline[max(0, at)][1])
        if self.played_s >= self._times[-1]:
            self._finish()

    def _finish(self) -> None:
        """The end of the recording: the lanes now hold the recorded trained models and everything they made."""
        self._replay_step = self.final_step
        for trainer, lane, checkpoint, info in zip(self.trainers, self.recording.lanes, self.recording.checkpoints,
                                                   self.recording.state["lanes"], strict=True):
            trainer.model.load_state_dict(load_checkpoint(checkpoint, expected_task=self.task.name).model.state_dict())
            trainer.history, trainer.snapshots = list(lane.history), list(lane.snapshots)
            trainer.step, trainer.last_eval = info["step"], info["last_eval"]
            trainer.seconds = lane.history[-1].get("seconds", 0.0) if lane.history else 0.0
            trainer.status = self.recording.state["status"] if info["done"] else "stopped"
            trainer.release()
        for i, lane in enumerate(self.recording.lanes):
            self.samples[i] = list(lane.samples)
        self.status, self.message = self.recording.state["status"], self.recording.state.get("message")

    def frame(self) -> RunFrame:
        if self.finished and self._replay_step >= self.final_step:
            return self._full
        shown = self._full.upto(self._replay_step, status=self.status, steps_per_second=self.steps_per_second,
                                eta_s=self.eta_s)
        if self.status != "paused":
            return shown
        rest = {i: made for i, ((step, _), made) in self._rest_samples.items() if step == self._replay_step}
        return replace(shown, lanes=tuple(replace(lane, samples=[*lane.samples, rest[i]]) if i in rest else lane
                                          for i, lane in enumerate(shown.lanes)))
