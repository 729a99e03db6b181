"""Save and load trained models as safetensors bytes: weights plus a JSON description; never pickles.

The safetensors header carries the model class, its configuration, the task name and any extra JSON (for
example the task's options or the training settings). Loading rebuilds the model from that description and
checks that every weight is present with the right shape, so a file made for another model is refused with a
clear message instead of loading half the weights.

A file is judged before anything is allocated: :func:`read_checkpoint_info` reads only the JSON header at the
start of the file (no tensor is made), so a caller can check the described model against its own limits first.
:func:`load_checkpoint` then compares the header's weight names, shapes and dtypes with the model built on the
meta device (shapes only, no memory) and builds the real model only when they all match, that is, when the
file really holds every weight: a small hand-made file that claims a huge configuration is refused without
building anything. Weights must be float32, as this app saves them; other dtypes are refused, not cast.
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

from .config import TransformerConfig, ViTConfig, migrate_old_fields
from .families import CONFIG_CLASSES, MODEL_CLASSES
from .models import SequenceRegressor
from .seeding import seeded

FORMAT = "transformer-explorer/1"
MAX_HEADER = 16 * 2**20  # a larger header means the file is not a checkpoint of this app (theirs: a few kB)
MAX_WEIGHTS = 4096  # more weight tensors than this means the file is not a checkpoint of this app
MIN_WEIGHTS_PER_BLOCK = 4  # every transformer block stores at least this many weights (Q, K, V and output)
# Tables a model computes instead of storing (sinusoidal positions, rotary angles) may take this many bytes however
# small the file; beyond it they must not outgrow the file itself.
UNSTORED_FLOOR = 16 * 2**20
# safetensors' names of torch dtypes (the header's "dtype" field)
_DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
                torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
                torch.bool: "BOOL"}
_CONFIGS = CONFIG_CLASSES
_MODELS = MODEL_CLASSES


class CheckpointError(ValueError):
    """A checkpoint could not be used; the message says why in plain words."""


@dataclass(frozen=True)
class WeightEntry:
    """One tensor as the file's header describes it (nothing is read or allocated)."""

    dtype: str  # safetensors' dtype name, e.g. "F32"
    shape: tuple[int, ...]


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint's header says, validated, before any weight is read or any model is built."""

    model_class: str  # e.g. "Seq2SeqTransformer"
    config: TransformerConfig | ViTConfig  # the described model's configuration (validated)
    model_kwargs: dict[str, Any]  # extra constructor arguments (e.g. a regressor's outputs)
    task_name: str  # the task it was trained on, e.g. "reverse"
    extra: dict[str, Any]  # extra JSON saved with it
    weights: dict[str, WeightEntry]  # every tensor the file holds, by name


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


def _check_container(data: bytes) -> tuple[dict[str, str], dict[str, Any]]:
    """Refuse pickles and zips by their magic bytes; return the safetensors metadata and the tensors' entries."""
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
    return metadata, {k: v for k, v in header.items() if k != "__metadata__"}


def _weight_entries(entries: dict[str, Any]) -> dict[str, WeightEntry]:
    """The header's tensor entries, checked for form and number (each is only described, never read)."""
    if len(entries) > MAX_WEIGHTS:
        raise CheckpointError(f"The file describes {len(entries):,} weight tensors; checkpoints of this app hold "
                              f"at most {MAX_WEIGHTS:,}.")
    weights = {}
    for name, entry in entries.items():
        shape = entry.get("shape") if isinstance(entry, dict) else None
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        if (not isinstance(dtype, str) or not isinstance(shape, list)
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
            raise CheckpointError(f"This is not a safetensors file (the entry of {name!r} in its header is damaged).")
        weights[name] = WeightEntry(dtype, tuple(shape))
    return weights


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
    try:
        values = migrate_old_fields(values) if cls is TransformerConfig else values  # files of older versions
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"The checkpoint's configuration is invalid: {exc}") from exc
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise CheckpointError(f"The checkpoint's configuration has unknown settings: {', '.join(unknown)}.")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"The checkpoint's configuration is invalid: {exc}") from exc


def _blocks(info: CheckpointInfo) -> int:
    """Transformer blocks the described model has: the encoder's and, for an encoder-decoder, the decoder's."""
    if info.model_class == "Seq2SeqTransformer":
        return info.config.n_layers + info.config.decoder_layers
    return info.config.n_layers


def read_checkpoint_info(data: bytes) -> CheckpointInfo:
    """Read and validate a checkpoint's description from its header alone; no tensor is read or allocated.

    Use it to check the described model (``info.config``) against a size limit before :func:`load_checkpoint`
    builds it.

    Raises:
        CheckpointError: for pickles, zips, damaged headers, unknown model types and invalid configurations.
    """
    metadata, entries = _check_container(data)
    weights = _weight_entries(entries)
    model_class = metadata.get("model_class", "")
    if model_class not in _MODELS:
        raise CheckpointError(f"Unknown model type {metadata.get('model_class')!r} in the checkpoint.")
    config = _config_from(metadata)
    return CheckpointInfo(model_class, config, _json_field(metadata, "model_kwargs"), metadata.get("task", ""),
                          _json_field(metadata, "extra"), weights)


def _meta_model(info: CheckpointInfo) -> nn.Module:
    """The described model on the meta device: every shape and dtype, no memory."""
    if _blocks(info) * MIN_WEIGHTS_PER_BLOCK > len(info.weights):
        # Checked first so that a forged description cannot make even the shapes-only build take long.
        raise CheckpointError(f"The weights do not fit the model described in the checkpoint — it describes "
                              f"{_blocks(info):,} blocks, but the file holds only {len(info.weights)} "
                              "weight tensors.")
    try:
        with torch.device("meta"):
            return _MODELS[info.model_class](info.config, **info.model_kwargs)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"The checkpoint's model cannot be built: {exc}") from exc


def _listed(items: list[str]) -> str:
    return ", ".join(items[:5]) + (" ..." if len(items) > 5 else "")


def _check_weights(expected: dict[str, torch.Tensor], weights: dict[str, WeightEntry]) -> None:
    """Refuse missing, unexpected, mis-shaped and non-float32 weights, from the header and the meta model."""
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    wrong = [f"{k} {weights[k].shape} (expected {tuple(v.shape)})" for k, v in expected.items()
             if k in weights and weights[k].shape != tuple(v.shape)]
    problems = []
    if missing:
        problems.append(f"missing weights: {_listed(missing)}")
    if unexpected:
        problems.append(f"unexpected weights: {_listed(unexpected)}")
    if wrong:
        problems.append(f"wrong shapes: {_listed(wrong)}")
    if problems:
        raise CheckpointError("The weights do not fit the model described in the checkpoint — "
                              + "; ".join(problems) + ".")
    dtypes = [f"{k} ({weights[k].dtype}, expected {_DTYPE_NAMES.get(v.dtype, str(v.dtype))})"
              for k, v in expected.items() if weights[k].dtype != _DTYPE_NAMES.get(v.dtype)]
    if dtypes:
        raise CheckpointError(f"The checkpoint stores weights in another number format: {_listed(dtypes)}. This app "
                              "saves and loads float32 (F32) weights only; convert them with tensor.float() "
                              "before saving.")


def _check_unstored(model: nn.Module, file_bytes: int) -> None:
    """Refuse a model whose computed tables (buffers not saved in the file) would outgrow the file's size."""
    stored = set(model.state_dict())
    unstored = sum(b.numel() * b.element_size() for name, b in model.named_buffers() if name not in stored)
    if unstored > max(file_bytes, UNSTORED_FLOOR):
        raise CheckpointError(f"The model described in the checkpoint would compute {unstored / 2**20:,.0f} MB of "
                              f"position tables (max_len={getattr(model.config, 'max_len', '?'):,}) that a file of "
                              f"{file_bytes / 2**10:,.0f} KB does not hold; its max_len is not believable.")


def load_checkpoint(data: bytes, *, expected_task: str | None = None) -> LoadedCheckpoint:
    """Rebuild a model from :func:`save_checkpoint` bytes, validating keys, shapes and dtypes; never unpickles.

    The real model is built only after the header's weights matched the model built on the meta device and its
    computed tables (sinusoidal or rotary positions) were found no larger than the file (or 16 MB), so the memory
    it takes is bounded by the file's size.

    Args:
        data: the checkpoint file's bytes.
        expected_task: refuse checkpoints trained on another task.

    Raises:
        CheckpointError: for pickles, zips, damaged files, other tasks, and missing, mis-shaped or non-float32
            weights.
    """
    info = read_checkpoint_info(data)
    if expected_task is not None and info.task_name != expected_task:
        raise CheckpointError(f"This checkpoint was trained on the {info.task_name!r} task, not {expected_task!r}.")
    meta = _meta_model(info)
    _check_weights(meta.state_dict(), info.weights)
    _check_unstored(meta, len(data))
    try:
        tensors = load_tensors(bytes(data))
    except Exception as exc:  # safetensors raises its own error type for damaged data
        raise CheckpointError(f"The checkpoint could not be read: {exc}") from exc
    # Building initialises weights from torch's process-wide generator; under the seeding lock, so that a load
    # in one session never shifts the draws of another session's seeded build.
    with seeded(0):
        model = _MODELS[info.model_class](info.config, **info.model_kwargs)
    model.load_state_dict(tensors)
    return LoadedCheckpoint(model.eval(), info.config, info.task_name, info.extra)
