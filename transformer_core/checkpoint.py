"""Save and load trained models as safetensors bytes: weights plus a JSON description; never pickles.

The safetensors header carries the model class, its configuration, the task name and any extra JSON (for
example the task's options or the training settings). Loading rebuilds the model from that description and
checks that every weight is present with the right shape, so a file made for another model is refused with a
clear message instead of loading half the weights.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import nn

from .config import TransformerConfig, ViTConfig
from .models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from .vit import VisionTransformer

FORMAT = "transformer-explorer/1"
MAX_HEADER = 100_000_000  # a larger header means the file is not a checkpoint of this app
_CONFIGS = {"TransformerConfig": TransformerConfig, "ViTConfig": ViTConfig}
_MODELS = {cls.__name__: cls for cls in (Seq2SeqTransformer, CausalLM, SequenceRegressor, VisionTransformer)}


class CheckpointError(ValueError):
    """A checkpoint could not be used; the message says why in plain words."""


@dataclass
class LoadedCheckpoint:
    """A model rebuilt from a checkpoint, with its description."""

    model: nn.Module  # the rebuilt model in evaluation mode, on the CPU
    config: TransformerConfig | ViTConfig  # its configuration
    task_name: str  # the task it was trained on, e.g. "reverse"
    extra: dict[str, Any]  # extra JSON saved with it (task options, training settings, metrics...)


def _model_kwargs(model: nn.Module) -> dict[str, Any]:
    if isinstance(model, SequenceRegressor):
        return {"num_outputs": model.head.out_features, "pool": model.pool}
    return {}


def save_checkpoint(model: nn.Module, model_config: TransformerConfig | ViTConfig, *, task_name: str,
                    extra: dict[str, Any] | None = None) -> bytes:
    """Serialise ``model`` to safetensors bytes with its configuration, task name and ``extra`` JSON.

    Raises:
        CheckpointError: for a model class this app does not know or ``extra`` that is not JSON.
    """
    kind = type(model).__name__
    if kind not in _MODELS:
        raise CheckpointError(f"Cannot save a {kind}; only {', '.join(_MODELS)} models can be saved.")
    try:
        extra_json = json.dumps(extra or {})
    except TypeError as exc:
        raise CheckpointError(f"The extra information is not plain JSON data: {exc}") from exc
    metadata = {
        "format": FORMAT, "model_class": kind, "config_class": type(model_config).__name__,
        "config": json.dumps(asdict(model_config)), "model_kwargs": json.dumps(_model_kwargs(model)),
        "task": task_name, "extra": extra_json,
    }
    # Tied weights share storage, which safetensors refuses; each name gets its own copy instead.
    tensors = {name: t.detach().cpu().contiguous().clone() for name, t in model.state_dict().items()}
    return save_tensors(tensors, metadata=metadata)


def _check_container(data: bytes) -> dict[str, str]:
    """Refuse pickles and zips by their magic bytes and return the safetensors metadata."""
    if not isinstance(data, (bytes, bytearray)):
        raise CheckpointError("A checkpoint must be given as bytes.")
    if data[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05") or data[:4] == b"PK\x03\x04":
        raise CheckpointError("This is a PyTorch pickle file (.pt/.pth/.bin). Pickles can run arbitrary code, "
                              "so only .safetensors checkpoints saved by this app are accepted.")
    if len(data) < 8:
        raise CheckpointError("The file is too short to be a checkpoint.")
    (size,) = struct.unpack("<Q", bytes(data[:8]))
    if size > min(MAX_HEADER, len(data) - 8):
        raise CheckpointError("This is not a safetensors file (its header is damaged or missing).")
    try:
        header = json.loads(bytes(data[8 : 8 + size]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError("This is not a safetensors file (its header is not readable).") from exc
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise CheckpointError("This safetensors file was not saved by Transformer Explorer (it has no model "
                              "description), so the app cannot tell which model to build.")
    return metadata


def _json_field(metadata: dict[str, str], key: str) -> dict[str, Any]:
    try:
        value = json.loads(metadata.get(key, "{}"))
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"The checkpoint's {key} is damaged (not valid JSON).") from exc
    if not isinstance(value, dict):
        raise CheckpointError(f"The checkpoint's {key} is damaged (not a JSON object).")
    return value


def _config_from(metadata: dict[str, str]) -> TransformerConfig | ViTConfig:
    cls = _CONFIGS.get(metadata.get("config_class", ""))
    if cls is None:
        raise CheckpointError(f"Unknown configuration type {metadata.get('config_class')!r} in the checkpoint.")
    values = _json_field(metadata, "config")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise CheckpointError(f"The checkpoint's configuration has unknown settings: {', '.join(unknown)}.")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"The checkpoint's configuration is invalid: {exc}") from exc


def _check_weights(model: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    wrong = [f"{k} {tuple(tensors[k].shape)} (expected {tuple(v.shape)})" for k, v in expected.items()
             if k in tensors and tensors[k].shape != v.shape]
    problems = []
    if missing:
        problems.append(f"missing weights: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    if unexpected:
        problems.append(f"unexpected weights: {', '.join(unexpected[:5])}{' ...' if len(unexpected) > 5 else ''}")
    if wrong:
        problems.append(f"wrong shapes: {', '.join(wrong[:5])}{' ...' if len(wrong) > 5 else ''}")
    if problems:
        raise CheckpointError("The weights do not fit the model described in the checkpoint — "
                              + "; ".join(problems) + ".")


def load_checkpoint(data: bytes, *, expected_task: str | None = None) -> LoadedCheckpoint:
    """Rebuild a model from :func:`save_checkpoint` bytes, validating keys and shapes; never unpickles.

    Args:
        data: the checkpoint file's bytes.
        expected_task: refuse checkpoints trained on another task.

    Raises:
        CheckpointError: for pickles, zips, damaged files, other tasks, and missing or mis-shaped weights.
    """
    metadata = _check_container(data)
    task_name = metadata.get("task", "")
    if expected_task is not None and task_name != expected_task:
        raise CheckpointError(f"This checkpoint was trained on the {task_name!r} task, not {expected_task!r}.")
    model_cls = _MODELS.get(metadata.get("model_class", ""))
    if model_cls is None:
        raise CheckpointError(f"Unknown model type {metadata.get('model_class')!r} in the checkpoint.")
    config = _config_from(metadata)
    try:
        tensors = load_tensors(bytes(data))
        model = model_cls(config, **_json_field(metadata, "model_kwargs"))
    except Exception as exc:  # safetensors raises its own error type for damaged data
        raise CheckpointError(f"The checkpoint could not be read: {exc}") from exc
    _check_weights(model, tensors)
    model.load_state_dict(tensors)
    return LoadedCheckpoint(model.eval(), config, task_name, _json_field(metadata, "extra"))
