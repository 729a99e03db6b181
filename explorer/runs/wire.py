"""What the web server and a trainer process say to each other: framed messages of JSON and bytes, never pickles.

A message is one byte string: a 4-byte length, a JSON header, then its parts (each an 8-byte length and its bytes).
Commands go from the server to the trainer (``{"op": "start"}``, ``"pause"``, ...); news comes back (a header with
where each lane stands, and as parts a channel update from :func:`~explorer.runs.codec.encode_update` and, when
the run paused or ended, the lanes' weights as safetensors files from :func:`weights_bytes`; once it has ended,
also the models each lane kept at its evaluation steps, for a replay, from :func:`kept_weights_bytes`).

A run is described by its task's name and options, the user's own text when it trains on one, and its lanes'
settings (:func:`describe_run`); the trainer rebuilds it with :func:`rebuild_run`.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from explorer.runs.live import RunSpec
from explorer.runs.user_data import user_data
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.tasks import get_task
from transformer_core.tasks.base import Task
from transformer_core.tasks.language import CharLMTask
from transformer_core.tasks.registry import checked_options
from transformer_core.training import TrainConfig

__all__ = ["pack", "unpack", "describe_run", "rebuild_run", "weights_bytes", "load_weights_bytes",
           "portable_text", "kept_weights_bytes", "load_kept_weights"]

MODEL_CONFIGS = {cls.__name__: cls for cls in (TransformerConfig, ViTConfig)}
# A header is a few hundred bytes of JSON; a create command's carries the user's text (at most 1,000,000
# characters, which JSON writes in at most 12 bytes each), so no honest header comes near this.
MAX_HEADER = 16 * 2**20


def pack(header: dict[str, Any], parts: Sequence[bytes] = ()) -> bytes:
    """One message: ``header`` (plain JSON data) and ``parts`` (bytes); ``ValueError`` for a header longer than
    :data:`MAX_HEADER`."""
    head = json.dumps(header).encode()
    if len(head) > MAX_HEADER:
        raise ValueError(f"trainer message: a header of {len(head):,} bytes (at most {MAX_HEADER:,})")
    chunks = [struct.pack(">I", len(head)), head]
    for part in parts:
        chunks += [struct.pack(">Q", len(part)), part]
    return b"".join(chunks)


def unpack(message: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """The header and parts of a message :func:`pack` made; ``ValueError`` for anything else (a header longer than
    :data:`MAX_HEADER` included: it is refused before it is parsed)."""
    view = memoryview(message)
    if len(view) < 4:
        raise ValueError("trainer message: too short")
    (size,) = struct.unpack(">I", view[:4])
    if size > MAX_HEADER:
        raise ValueError(f"trainer message: a header of {size:,} bytes (at most {MAX_HEADER:,})")
    if size > len(view) - 4:
        raise ValueError("trainer message: header cut short")
    header = json.loads(bytes(view[4:4 + size]))
    if not isinstance(header, dict):
        raise ValueError("trainer message: header is not an object")
    parts, at = [], 4 + size
    while at < len(view):
        if len(view) - at < 8:
            raise ValueError("trainer message: a part's length cut short")
        (length,) = struct.unpack(">Q", view[at:at + 8])
        if length > len(view) - at - 8:
            raise ValueError("trainer message: a part cut short")
        parts.append(bytes(view[at + 8:at + 8 + length]))
        at += 8 + length
    return header, parts


def portable_text(task: Task) -> str | None:
    """The user's text to rebuild ``task`` from elsewhere, or ``None`` for built-in data.

    ``ValueError`` when the task reads user data that its text alone does not rebuild exactly.
    """
    data = user_data(task)
    if data is None:
        return None
    if not isinstance(task, CharLMTask):
        raise ValueError(f"the {task.name!r} task's own data cannot travel to a trainer process")
    text = task.train_text + task.val_text
    again = get_task(task.name, **task.options(), text=text)
    if user_data(again) != data:
        raise ValueError("the text does not rebuild the same training and validation split")
    return text


def describe_run(task: Task, specs: Sequence[RunSpec], text: str | None) -> dict[str, Any]:
    """A run's task and lanes as plain JSON data (``text``: from :func:`portable_text`)."""
    return {"task": task.name, "options": task.options(), "text": text,
            "specs": [{"label": s.label, "model_type": type(s.model_config).__name__,
                       "model": asdict(s.model_config), "training": asdict(s.train_config)} for s in specs]}


def rebuild_run(described: dict[str, Any], *, max_text_chars: int | None = None) -> tuple[Task, list[RunSpec]]:
    """The task and lanes :func:`describe_run` described; ``ValueError`` for options its task does not declare
    or allow, or a text longer than ``max_text_chars``."""
    text = described.get("text")
    if text is not None and (not isinstance(text, str) or (max_text_chars is not None and len(text) > max_text_chars)):
        raise ValueError(f"the run's text is longer than the {max_text_chars:,} characters a run may train on")
    extra = {"text": text} if text is not None else {}
    task = get_task(described["task"], **checked_options(described["task"], described["options"]), **extra)
    specs = [RunSpec(s["label"], MODEL_CONFIGS[s["model_type"]](**s["model"]), TrainConfig(**s["training"]))
             for s in described["specs"]]
    return task, specs


def weights_bytes(model: torch.nn.Module) -> bytes:
    """A model's weights as a safetensors file (tied weights saved once per name, as copies)."""
    return save_tensors({k: v.detach().to("cpu").clone().contiguous() for k, v in model.state_dict().items()})


def load_weights_bytes(model: torch.nn.Module, data: bytes) -> None:
    """Load weights :func:`weights_bytes` wrote into ``model`` (same architecture)."""
    model.load_state_dict(load_tensors(data))


def kept_weights_bytes(kept: Sequence[Sequence[tuple[int, dict[str, torch.Tensor]]]]) -> bytes:
    """Every lane's kept models (a :class:`~transformer_core.training.Trainer`'s ``weights``: ``(step,
    state_dict)`` pairs) as one message: the steps in its header, a safetensors file per model in its parts."""
    steps = [[int(step) for step, _ in lane] for lane in kept]
    files = [save_tensors({k: v.detach().to("cpu").contiguous() for k, v in weights.items()})
             for lane in kept for _, weights in lane]
    return pack({"kept_steps": steps}, files)


def load_kept_weights(data: bytes) -> list[list[tuple[int, dict[str, torch.Tensor]]]]:
    """The lanes' kept models :func:`kept_weights_bytes` wrote; ``ValueError`` for anything else."""
    header, files = unpack(data)
    steps = header.get("kept_steps")
    if not isinstance(steps, list) or not all(isinstance(lane, list) for lane in steps) \
            or sum(len(lane) for lane in steps) != len(files):
        raise ValueError("kept models: the steps do not match the files")
    loaded, at = [], 0
    for lane in steps:
        loaded.append([(int(step), load_tensors(files[at + i])) for i, step in enumerate(lane)])
        at += len(lane)
    return loaded
