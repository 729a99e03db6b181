"""A run's training state as bytes, so that a new trainer process goes on exactly where a paused one stood.

A paused run that nobody has open gives its trainer process back (:meth:`~explorer.runs.worker.WorkerRun.give_back`):
its trainer sends this state, the run store keeps it (:meth:`~explorer.runs.store.RunStore.put_parked`) for the
run's parking time, and Resume starts a new trainer from it. It holds, per lane, where training stands
(:meth:`~transformer_core.training.Trainer.progress_state`: the step, the evaluation, the snapshot interval ...),
the weights and, when the store's budget takes them, AdamW's running averages — with them the resumed run's curve
is the one it would have drawn without the pause, bit for bit; without them the run goes on from its weights with
fresh averages (the next steps move a little differently, and the page says so).

The format is :func:`~explorer.runs.wire.pack`'s: a JSON header (:data:`FORMAT`, each lane's progress, whether the
optimiser state is there) and safetensors files as parts, the weights of every lane, then their optimiser
states. Never a pickle: the bytes may have been in a store other programs can write.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from explorer.i18n import N_
from explorer.i18n.message import Message
from explorer.runs.live import LiveRun
from explorer.runs.store import RunStore, StoreUnavailable
from explorer.runs.wire import load_weights_bytes, pack, unpack, weights_bytes
from transformer_core.training import Trainer

__all__ = ["FORMAT", "ParkedState", "TrainingState", "decode_state", "encode_state", "restore_state"]

FORMAT = "te-training-state/1"  # a state written by another version of the format is refused
LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingState:
    """A decoded training state: what :func:`restore_state` loads into a fresh run."""

    lanes: list[dict[str, Any]]  # per lane, Trainer.progress_state()
    weights: list[bytes]  # per lane, a safetensors file of the model
    optimizer: list[bytes] | None  # per lane, a safetensors file of AdamW's state; None when it was not kept

    @property
    def step(self) -> int:
        """Steps completed by the furthest lane."""
        return max(int(lane["step"]) for lane in self.lanes)

    def without_optimizer(self) -> bytes:
        """The same state without the optimiser's averages (for a store whose budget has no room for them)."""
        return pack({"format": FORMAT, "lanes": self.lanes, "optimizer": False}, self.weights)


def encode_state(run: LiveRun, *, optimizer: bool = True) -> bytes:
    """``run``'s training state (``optimizer``: with AdamW's running averages)."""
    parts = [weights_bytes(t.model) for t in run.trainers]
    if optimizer:
        for trainer in run.trainers:
            parts.append(save_tensors(optimizer_tensors(trainer)))
    lanes = [t.progress_state() for t in run.trainers]
    return pack({"format": FORMAT, "lanes": lanes, "optimizer": optimizer}, parts)


def decode_state(data: bytes) -> TrainingState:
    """The state :func:`encode_state` wrote; ``ValueError`` for anything else."""
    try:
        header, parts = unpack(data)
    except Exception as err:  # noqa: BLE001 - any malformed value reads as damaged
        raise ValueError(f"training state: {type(err).__name__}") from err
    lanes, optimizer = header.get("lanes"), header.get("optimizer")
    if header.get("format") != FORMAT or not isinstance(lanes, list) or not lanes or not isinstance(optimizer, bool):
        raise ValueError("training state: not one this version writes")
    if len(parts) != len(lanes) * (2 if optimizer else 1):
        raise ValueError("training state: the files do not match the lanes")
    n = len(lanes)
    return TrainingState(lanes, parts[:n], parts[n:] if optimizer else None)


def restore_state(run: LiveRun, state: TrainingState) -> None:
    """Load ``state`` into ``run``, a fresh run of the same settings; ``ValueError`` when it does not fit them."""
    if len(state.lanes) != len(run.trainers):
        raise ValueError(f"training state: {len(state.lanes)} lanes, the run has {len(run.trainers)}")
    try:
        for i, trainer in enumerate(run.trainers):
            load_weights_bytes(trainer.model, state.weights[i])
            trainer.restore_progress(state.lanes[i])
            if state.optimizer is not None:
                load_optimizer_tensors(trainer, load_tensors(state.optimizer[i]))
    except (KeyError, TypeError, RuntimeError) as err:
        raise ValueError(f"training state does not fit the run: {type(err).__name__}: {err}") from err


def optimizer_tensors(trainer: Trainer) -> dict[str, torch.Tensor]:
    """AdamW's running averages as named tensors: ``<parameter>.exp_avg``, ``<parameter>.exp_avg_sq`` and
    ``<parameter>.step`` (a 0-d int64) for every parameter that has state."""
    names = {p: n for n, p in trainer.model.named_parameters()}
    out: dict[str, torch.Tensor] = {}
    for p, state in trainer.optimizer.state.items():
        name = names[p]
        out[f"{name}.exp_avg"] = state["exp_avg"].detach().to("cpu").clone()
        out[f"{name}.exp_avg_sq"] = state["exp_avg_sq"].detach().to("cpu").clone()
        out[f"{name}.step"] = torch.tensor(state["step"], dtype=torch.int64)
    return out


def load_optimizer_tensors(trainer: Trainer, tensors: dict[str, torch.Tensor]) -> None:
    """Give ``trainer``'s AdamW the averages :func:`optimizer_tensors` took; ``ValueError`` when a name is unknown
    or a shape differs (state for another model is never half loaded)."""
    params = dict(trainer.model.named_parameters())
    state: dict[torch.Tensor, dict[str, Any]] = {}
    for key, value in tensors.items():
        name, _, part = key.rpartition(".")
        p = params.get(name)
        if p is None or part not in ("exp_avg", "exp_avg_sq", "step"):
            raise ValueError(f"optimiser state for an unknown parameter: {key!r}")
        if part != "step" and value.shape != p.shape:
            raise ValueError(f"optimiser state {key!r} has shape {tuple(value.shape)}, not {tuple(p.shape)}")
        entry = state.setdefault(p, {})
        entry[part] = int(value) if part == "step" else value.to(p.device, p.dtype).clone()
    if any(len(entry) != 3 for entry in state.values()):
        raise ValueError("optimiser state: a parameter misses one of exp_avg, exp_avg_sq and step")
    trainer.optimizer.state = state


@dataclass(frozen=True)
class ParkedState:
    """Where a run that gave its trainer back left its training state: a key in a run store."""

    store: RunStore
    key: str
    optimizer: bool  # whether AdamW's averages were kept (else the run goes on from its weights alone)

    @classmethod
    def put(cls, store: RunStore, data: bytes, ttl_s: float) -> ParkedState | None:
        """Keep ``data`` (an encoded state) in ``store`` for ``ttl_s`` seconds — without the optimiser's averages
        when the store's budget has no room for them — or ``None`` when even that does not fit.
        :class:`~explorer.runs.store.StoreUnavailable` when the store cannot be reached."""
        key = secrets.token_urlsafe(16)
        if store.put_parked(key, data, ttl_s):
            return cls(store, key, True)
        if store.put_parked(key, decode_state(data).without_optimizer(), ttl_s):
            return cls(store, key, False)
        return None

    def read(self) -> tuple[bytes | None, str]:
        """The stored state, or ``None`` with why it could not be read back."""
        try:
            data = self.store.parked(self.key)
        except StoreUnavailable as err:
            return None, err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else str(err)
        return data, Message(
            N_("the run store no longer had it (it restarted, or the run waited longer than its parking time)")
        )

    def drop(self) -> None:
        """Delete the state (a trainer holds the run again); left to expire when the store cannot be reached."""
        try:
            self.store.drop_parked(self.key)
        except StoreUnavailable as err:
            LOG.info("a parked training state stays until it expires: %s", err)
