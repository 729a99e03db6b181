"""Read and hand-edit the JSON header of a safetensors file, as the checkpoint tests forge files."""

from __future__ import annotations

import json
import struct
from typing import Any


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The file's header (JSON) and the tensor bytes after it."""
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), data[8 + size :]


def read_metadata(data: bytes) -> dict[str, str]:
    """The ``__metadata__`` strings of a safetensors file."""
    return _split(data)[0]["__metadata__"]


def rewrite_metadata(data: bytes, **changes: str) -> bytes:
    """The same tensors with some metadata fields replaced, as a hand-edited file would have them."""
    header, tensors = _split(data)
    header["__metadata__"].update(changes)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + tensors
