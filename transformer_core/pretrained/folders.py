"""Describe model folders without loading them: family, parameters and sizes, from the headers alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .loader import FAMILIES, read_config
from .weights import check_sources, stored_tensors, weight_files


@dataclass(frozen=True)
class ModelInfo:
    """A valid model folder, described from its config.json and weight headers."""

    name: str  # the folder's name
    path: Path  # the folder
    family: str  # "gpt2", "bert" or "vit"
    architecture: str  # e.g. "GPT2LMHeadModel"
    n_params: int  # parameters of the model it builds (tied weights counted once)
    n_bytes: int  # memory of its float32 weights once loaded
    file_bytes: int  # size of its weight files on disk


@dataclass(frozen=True)
class FolderScan:
    """What :func:`list_model_folders` found."""

    models: list[ModelInfo]  # the valid model folders, by name
    skipped: list[tuple[Path, str]]  # the other folders, each with the reason it was skipped


def inspect_folder(folder: str | Path) -> ModelInfo:
    """Describe a model folder after checking its config and that its weights hold every tensor, rightly shaped.

    No tensor is read, so this is quick even for large models.

    Raises:
        ValueError: for anything :func:`~transformer_core.pretrained.load_pretrained` would refuse before reading
            weights.
    """
    folder = Path(folder)
    spec = read_config(folder)
    stored = stored_tensors(folder)
    names = set(stored)
    family = FAMILIES[spec.family]
    sources = family.sources(spec, names)
    check_sources(sources, stored)
    # Each stored tensor counts once, also when it is split into several of ours (GPT-2's packed Q, K, V).
    n_params = sum(_numel(stored[name].shape) for name in {s.name for s in sources.values()})
    file_bytes = sum(f.stat().st_size for f in weight_files(folder))
    return ModelInfo(folder.name, folder, spec.family, spec.architecture, n_params, 4 * n_params, file_bytes)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def list_model_folders(path: str | Path) -> FolderScan:
    """The model folders directly inside ``path``, valid ones described, others skipped with a reason.

    A missing ``path`` gives an empty scan.
    """
    root = Path(path)
    models, skipped = [], []
    if not root.is_dir():
        return FolderScan([], [])
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            models.append(inspect_folder(folder))
        except ValueError as exc:
            skipped.append((folder, str(exc)))
    return FolderScan(models, skipped)
