"""The envelope every value of the run store travels in: how it is framed as bytes, and the bounded reading that
refuses bad or hostile bytes before they cost memory; :mod:`explorer.runs.codec` puts each kind of value in it.

A stored value is ``MAGIC``, a 4-byte big-endian header length, a UTF-8 JSON header, then raw array and file bytes.
The header holds the value's kind, its fields as plain JSON (``"body"``), and every array replaced by its index in
``"arrays"`` (``[dtype, shape, offset]``: little-endian numeric dtypes only, so float16 attention stays float16) and
every model file by its index in ``"blobs"`` (``[offset, length]``); offsets count from the end of the header.
Bad, truncated, oversized or foreign bytes raise a :class:`ValueError` that says what is wrong, and nothing else:
whatever a value holds, decoding it fails only that way (:func:`decoding`).

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

__all__ = ["DECODE_ERRORS", "DIGITS", "HEADER_BYTES", "HEADER_ITEMS", "MAGIC", "Reader", "Writer", "decoding", "whole"]

MAGIC = b"TE-RUN\x00\x01"  # the format's name and version: bytes written by another version are refused
_LENGTH = struct.Struct(">I")
_DTYPES = frozenset({"<f2", "<f4", "<f8", "<i4", "<i8", "|u1", "|b1"})  # what snapshots and scores hold
HEADER_BYTES = 2 * 2**20  # longest JSON header read: a 5,000-step run's two histories take about 0.7 MB
HEADER_ITEMS = 200_000  # most JSON items in a header (counted as its , : { and [), about 4× that run's
DIGITS = 20  # longest whole number read from a header (a step, an offset, a length)
# what reading JSON and checking it may raise on bad input; :func:`decoding` turns each into a ValueError
DECODE_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, UnicodeError)


class Writer:
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
        """``value``'s bytes added to the payload (little-endian); its index in the header's ``"arrays"``."""
        a = np.asarray(value)
        a = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
        if a.dtype.str not in _DTYPES:
            raise ValueError(f"cannot store an array of dtype {a.dtype} (numbers and booleans only)")
        self.arrays.append([a.dtype.str, list(a.shape), self._add(np.ascontiguousarray(a).tobytes())])
        return len(self.arrays) - 1

    def blob(self, data: bytes) -> int:
        """``data`` (a model file) added to the payload; its index in the header's ``"blobs"``."""
        self.blobs.append([self._add(bytes(data)), len(data)])
        return len(self.blobs) - 1

    def finish(self, kind: str, body: dict[str, Any]) -> bytes:
        """The whole value: ``MAGIC``, the header of ``kind`` holding ``body``, then the payload."""
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


def whole(text: str) -> int:
    """A whole number of the header, refused when longer than :data:`DIGITS` digits (no float overflows later)."""
    if len(text.lstrip("-")) > DIGITS:
        raise ValueError(f"a number of {len(text):,} digits")
    return int(text)


class Reader:
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
            header = json.loads(text, parse_int=whole)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as err:
            raise ValueError(f"stored {kind}: unreadable header ({str(err)[:200]})") from err
        header = self.dict(header, "header", keys={"kind", "body", "arrays", "blobs"})
        if header["kind"] != kind:
            raise ValueError(f"stored {kind}: holds a {header['kind']!r} instead")
        self.body = self.dict(header["body"], "body")
        self.arrays, self.blobs = self.list(header["arrays"], "arrays"), self.list(header["blobs"], "blobs")
        self.payload = data[start + length:]

    def fail(self, message: str) -> ValueError:
        """The ValueError to raise for ``message``, naming this value's kind."""
        return ValueError(f"stored {self.kind}: {message}")

    def dict(self, value: Any, where: str, keys: set[str] | None = None) -> dict[str, Any]:
        """``value`` if it is an object (with exactly ``keys``, when given); ``where`` names it in the error."""
        if not isinstance(value, dict) or (keys is not None and set(value) != keys):
            wanted = f" with exactly {sorted(keys)}" if keys is not None else ""
            raise self.fail(f"{where} is not an object{wanted}")
        return value

    def list(self, value: Any, where: str) -> list[Any]:
        """``value`` if it is a list."""
        if not isinstance(value, list):
            raise self.fail(f"{where} is not a list")
        return value

    def int(self, value: Any, where: str) -> int:
        """``value`` if it is a whole number ≥ 0 (not a boolean)."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"{where} is not a whole number ≥ 0")
        return value

    def number(self, value: Any, where: str) -> float:
        """``value`` if it is a number (not a boolean)."""
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
        """``value`` if it is text."""
        if not isinstance(value, str):
            raise self.fail(f"{where} is not text")
        return value

    def span(self, offset: Any, length: Any, where: str) -> memoryview:
        """``length`` bytes of the payload from ``offset``, in place, if they lie within it."""
        offset, length = self.int(offset, f"{where} offset"), self.int(length, f"{where} length")
        if offset + length > len(self.payload):
            raise self.fail(f"{where} lies past the end of the data (truncated?)")
        return self.payload[offset:offset + length]

    def array(self, index: Any, where: str) -> np.ndarray:
        """The array the header lists at ``index``, checked and copied out of the payload."""
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
        """The file the header lists at ``index``, checked and copied out of the payload."""
        index = self.int(index, where)
        if index >= len(self.blobs):
            raise self.fail(f"{where} names file {index} of {len(self.blobs)}")
        entry = self.list(self.blobs[index], f"file {index}")
        if len(entry) != 2:
            raise self.fail(f"file {index} is not [offset, length]")
        return bytes(self.span(entry[0], entry[1], f"file {index}"))


def decoding(kind: str, read: Any, data: bytes, limit: int) -> Any:
    """``read(reader)`` on ``data``; any failure at all is a ValueError starting ``stored <kind>:``."""
    try:
        return read(Reader(data, kind, limit))
    except ValueError as err:
        if str(err).startswith(f"stored {kind}:"):
            raise
        raise ValueError(f"stored {kind}: {str(err)[:300]}") from err
    except DECODE_ERRORS as err:
        raise ValueError(f"stored {kind}: unreadable ({type(err).__name__}: {str(err)[:200]})") from err
