"""How a sentence-embedding model turns its token vectors into one vector per text.

sentence-transformers folders (a ``BertModel`` plus ``modules.json`` and ``1_Pooling/config.json``) say how their
model was trained to be read: the mean of the token vectors (most models), the ``[CLS]`` vector, the maximum, or
the sum divided by the square root of the length. A folder without that file is read with mean pooling, the
usual choice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

MODES = ("mean", "cls", "max", "mean_sqrt_len")  # the poolings this package computes
POOLING_DIR = "1_Pooling"  # where sentence-transformers saves its pooling settings, unless modules.json says else
MAX_SETTINGS_BYTES = 2**20
_KEYS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
         "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len"}


@dataclass(frozen=True)
class Pooling:
    """A model's pooling and where it was read from."""

    mode: str  # one of MODES
    source: str  # e.g. "1_Pooling/config.json", or "default" when the folder says nothing
    note: str | None = None  # why the folder's own pooling is not the one used, in plain words

    def __call__(self, hidden: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """One vector per text from its token vectors; padding is left out.

        Shape:
            hidden ``(B, T, C)``, valid ``(B, T)`` bool -> ``(B, C)``.
        """
        keep = valid.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
        if self.mode == "cls":
            return hidden[:, 0]
        if self.mode == "max":
            return hidden.masked_fill(~valid.unsqueeze(-1), float("-inf")).amax(dim=1)
        total, count = (hidden * keep).sum(dim=1), keep.sum(dim=1).clamp(min=1)  # (B, C), (B, 1)
        return total / (count.sqrt() if self.mode == "mean_sqrt_len" else count)


def _json(path: Path) -> object:
    if path.stat().st_size > MAX_SETTINGS_BYTES:
        raise ValueError(f"{path.name} is too large to be a pooling settings file.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not a readable JSON file ({exc}).") from exc


def _pooling_dir(folder: Path) -> str:
    modules = folder / "modules.json"
    listed = _json(modules) if modules.is_file() else []
    for module in listed if isinstance(listed, list) else []:
        path = module.get("path") if isinstance(module, dict) else None
        if str(module.get("type", "")).endswith(".Pooling") and isinstance(path, str) and Path(path).name == path:
            return path
    return POOLING_DIR


def read_pooling(folder: str | Path) -> Pooling:
    """The pooling a model folder declares, or mean pooling when it declares none.

    A declared pooling this package does not compute (weighted mean, last token, several at once) falls back to
    mean pooling with a note saying so.

    Raises:
        ValueError: for a pooling settings file that is not readable JSON.
    """
    folder = Path(folder)
    where = f"{_pooling_dir(folder)}/config.json"
    path = folder / where
    if not path.is_file():
        return Pooling("mean", "default")
    settings = _json(path)
    if not isinstance(settings, dict):
        raise ValueError(f"{where} must hold a JSON object.")
    on = [key.removeprefix("pooling_mode_") for key, value in settings.items()
          if key.startswith("pooling_mode_") and value is True]
    modes = [_KEYS.get(f"pooling_mode_{key}") for key in on]
    if len(modes) == 1 and modes[0] is not None:
        return Pooling(modes[0], where)
    declared = " + ".join(on) or "none"
    return Pooling("mean", where, f"This model's own pooling ({declared}) is not computed here; mean pooling is "
                                  "used instead.")
