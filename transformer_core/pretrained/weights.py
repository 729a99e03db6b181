"""Stored weights: find the ``.safetensors`` files of a model folder, check their headers, and move each tensor
into a model built on the meta device.

Nothing here ever unpickles: a folder that holds only ``pytorch_model.bin``-style pickles is refused without
opening them. Every header entry is checked against the file size and its own shape, whatever its dtype; the
tensors the model reads must then have the expected shapes and be floating point (F16 and BF16 are read as
float32), while buffers and heads it does not use (int64 ``position_ids``, GPT-2's U8 or BOOL causal mask, a
pooler) are left unread. Tied weights that an older file stores twice must be equal. All this is checked before
any weight is read, and each tensor is read, converted and copied into the model one at a time, so that loading
needs little more memory than the model and the model never depends on the (memory-mapped) file afterwards.
"""

from __future__ import annotations

import json
import struct
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .families import Source

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"  # the name -> file map of a model stored in several shards
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
MAX_HEADER = 16 * 2**20  # a safetensors header larger than this is not a supported model's (GPT-2 XL's: ~60 kB)
MAX_TENSORS = 20_000  # more tensors than this is not a supported model (GPT-2 XL has 580)
# Every dtype safetensors writes, with its size: buffers a model does not read (int64 position_ids, GPT-2's uint8
# or bool causal mask) are validated like weights and then skipped; the tensors a model reads must be FLOATS.
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "U64": 8, "I32": 4,
                "U32": 4, "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1}
FLOATS = ("F64", "F32", "F16", "BF16")  # read as float32


@dataclass(frozen=True)
class StoredTensor:
    """One tensor as a file's header describes it."""

    file: Path  # the .safetensors file that holds it
    dtype: str  # safetensors' dtype name, e.g. "F32"
    shape: tuple[int, ...]


def weight_files(folder: Path) -> list[Path]:
    """The folder's ``.safetensors`` weight files (one, or the shards listed in the index).

    Raises:
        ValueError: when there are none (saying so plainly when only pickles are present).
    """
    if (folder / SINGLE).is_file():
        return [folder / SINGLE]
    if (folder / INDEX).is_file():
        index = _json(folder / INDEX)
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise ValueError(f"{INDEX} is damaged (it has no weight_map of file names).")
        files = sorted(set(weight_map.values()))
        if any(Path(f).name != f or not f.endswith(".safetensors") for f in files):
            raise ValueError(f"{INDEX} lists files outside the folder or that are not .safetensors files.")
        return [folder / f for f in files]
    pickles = sorted(p.name for p in folder.iterdir() if p.name in PICKLES or p.suffix in (".pt", ".pth", ".ckpt"))
    if pickles:
        raise ValueError(f"This folder has weights only as pickles ({', '.join(pickles)}). Pickles can run "
                         "arbitrary code, so they are never opened; use a model.safetensors file instead "
                         "(most models on the Hugging Face Hub have one).")
    raise ValueError(f"This folder has no weights: {SINGLE} is missing.")


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not a readable JSON file ({exc}).") from exc


def read_header(file: Path) -> dict[str, StoredTensor]:
    """Every tensor a safetensors file describes, after checking that the file really holds them all.

    Raises:
        ValueError: for a file that is missing, damaged, truncated or holds a tensor of an unknown dtype.
    """
    if not file.is_file():
        raise ValueError(f"The weights file {file.name} is missing.")
    size = file.stat().st_size
    with file.open("rb") as fh:
        start = fh.read(8)
        if len(start) < 8:
            raise ValueError(f"{file.name} is too short to be a safetensors file.")
        (n,) = struct.unpack("<Q", start)
        if n > min(MAX_HEADER, size - 8):
            raise ValueError(f"{file.name} is not a safetensors file (its header is damaged or missing).")
        try:
            header = json.loads(fh.read(n).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{file.name} is not a safetensors file (its header is not readable).") from exc
    if not isinstance(header, dict):
        raise ValueError(f"{file.name} is not a safetensors file (its header is not a JSON object).")
    header.pop("__metadata__", None)
    if len(header) > MAX_TENSORS:
        raise ValueError(f"{file.name} describes {len(header):,} tensors; supported models have at most "
                         f"{MAX_TENSORS:,}.")
    return {name: _entry(file, name, entry, size - 8 - n) for name, entry in header.items()}


def _entry(file: Path, name: str, entry: object, data_bytes: int) -> StoredTensor:
    ok = isinstance(entry, dict) and isinstance(entry.get("shape"), list) and isinstance(entry.get("dtype"), str)
    shape, offsets = (entry.get("shape"), entry.get("data_offsets")) if ok else (None, None)
    if not ok or not all(isinstance(d, int) and d >= 0 for d in shape) or not isinstance(offsets, list) \
            or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets):
        raise ValueError(f"{file.name} is damaged: the header entry of {name!r} is not valid.")
    if entry["dtype"] not in _DTYPE_BYTES:
        raise ValueError(f"{file.name} stores {name!r} as {entry['dtype']}, which is not a safetensors dtype this "
                         f"loader knows ({', '.join(_DTYPE_BYTES)}).")
    begin, end = offsets
    if not 0 <= begin <= end:
        raise ValueError(f"{file.name} is damaged: the data offsets of {name!r} are not valid.")
    if end > data_bytes:
        raise ValueError(f"{file.name} is truncated: {name!r} ends at byte {end:,} of the data, but the file "
                         f"holds only {data_bytes:,} bytes of data. Download it again.")
    numel = 1
    for d in shape:
        numel *= d
    if end - begin != numel * _DTYPE_BYTES[entry["dtype"]]:
        raise ValueError(f"{file.name} is damaged: the size of {name!r} does not match its shape {shape}.")
    return StoredTensor(file, entry["dtype"], tuple(shape))


def stored_tensors(folder: Path) -> dict[str, StoredTensor]:
    """Every tensor of the folder's weight files, by name (headers only; no tensor is read)."""
    tensors: dict[str, StoredTensor] = {}
    for file in weight_files(folder):
        tensors.update(read_header(file))
    return tensors


def _listed(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def check_sources(sources: dict[str, Source], stored: dict[str, StoredTensor]) -> None:
    """Refuse missing and mis-shaped tensors, from the headers alone.

    Raises:
        ValueError: naming the first few missing or mis-shaped tensors.
    """
    missing = sorted({s.name for s in sources.values() if s.name not in stored})
    if missing:
        raise ValueError(f"The weights file lacks tensors this model needs: {_listed(missing)}.")
    wrong = sorted({f"{s.name} {stored[s.name].shape} (config.json implies {s.shape})"
                    for s in sources.values() if stored[s.name].shape != s.shape})
    if wrong:
        raise ValueError(f"The weights do not match config.json — wrong shapes: {_listed(wrong)}.")
    not_float = sorted({f"{s.name} ({stored[s.name].dtype})" for s in sources.values()
                        if stored[s.name].dtype not in FLOATS})
    if not_float:
        raise ValueError(f"The weights this model reads must be floating point ({', '.join(FLOATS)}), but the file "
                         f"stores {_listed(not_float)}.")


def check_ties(ties: dict[str, str], stored: dict[str, StoredTensor], *, read: bool) -> None:
    """Refuse a tied weight stored twice (GPT-2's ``lm_head.weight`` beside ``wte.weight``) with two values.

    Args:
        ties: stored copy -> the stored tensor the model reads instead; copies not in the file are ignored.
        read: compare the values too (else only shapes, from the headers).

    Raises:
        ValueError: naming the copy whose shape or values differ from the tensor it is tied to.
    """
    from safetensors import safe_open

    for copy, main in ties.items():
        if copy not in stored or main not in stored:
            continue
        same = stored[copy].shape == stored[main].shape
        if same and read:
            values = []
            for name in (copy, main):
                with safe_open(str(stored[name].file), framework="pt") as fh:
                    values.append(fh.get_tensor(name).float())
            same = torch.equal(*values)
        if not same:
            raise ValueError(f"The weights file stores the tied weight {main} twice, and its copy {copy} differs "
                             "from it; the model uses one tensor for both, so this file cannot be loaded as it is.")


def fill(model: nn.Module, sources: dict[str, Source], stored: dict[str, StoredTensor]) -> None:
    """Read every source tensor into ``model`` (built on the meta device) as float32, keeping tied weights tied.

    ``sources`` must name every parameter of ``model`` once (tied parameters under their first name).
    """
    from safetensors import safe_open

    aliases: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(p), []).append(name)
    params = dict(model.named_parameters())
    if set(params) != set(sources):
        raise RuntimeError(f"Weight map out of step with the model: {sorted(set(params) ^ set(sources))[:5]}")
    cache: tuple[str, torch.Tensor] | None = None  # Q, K and V come from one stored tensor: read it once
    with ExitStack() as stack:
        handles = {}
        for name, src in sources.items():
            if cache is None or cache[0] != src.name:
                file = stored[src.name].file
                if file not in handles:
                    handles[file] = stack.enter_context(safe_open(str(file), framework="pt"))
                cache = (src.name, handles[file].get_tensor(src.name).float())
            # safetensors maps the file into memory: every weight gets its own compact copy, so the model never
            # depends on the file staying unchanged and no slice keeps a whole packed tensor alive.
            value = (cache[1] if src.convert is None else src.convert(cache[1])).clone(
                memory_format=torch.contiguous_format)
            parameter = nn.Parameter(value, requires_grad=False)
            for alias in aliases[id(params[name])]:
                owner, _, attr = alias.rpartition(".")
                setattr(model.get_submodule(owner), attr, parameter)
    left = [name for name, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise RuntimeError(f"Weights left unloaded: {left[:5]}")
