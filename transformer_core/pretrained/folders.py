"""Describe model folders without loading them: family, parameters and sizes, from the headers alone.

Two places hold models: a models folder (``models/`` by default, ``TE_MODELS_DIR`` moves it) with one folder per
model, and the Hugging Face cache, where a model downloaded once stays available offline.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .loader import matched_sources, read_config
from .weights import stored_tensors, weight_files


@dataclass(frozen=True)
class ModelInfo:
    """A valid model folder, described from its config.json and weight headers."""

    name: str  # the folder's name (the model id for models in the Hugging Face cache)
    path: Path  # the folder
    family: str  # "gpt2", "llama", "qwen2", "bert", "distilbert", "roberta" or "vit"
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
    sources = matched_sources(spec, stored)
    # Counted as the model takes them: GPT-2's packed Q, K, V are three of ours, RoBERTa uses part of its table.
    n_params = sum(_numel(s.shape if s.convert is None else s.convert(torch.empty(s.shape, device="meta")).shape)
                   for s in sources.values())
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
            skipped.append((folder, without_paths(str(exc), {folder: folder.name}, {root: "the models folder"})))
    return FolderScan(models, skipped)


def without_paths(text: str, names: dict[Path, str], roots: dict[Path, str] | None = None) -> str:
    """``text`` with no path of this machine in it: each path of ``names`` written as its name there, and
    anything inside a root of ``roots`` written relative to it (the root alone as its description there).

    Reasons may be shown to people who use a server, not run it; where it keeps its files is not theirs to see. Longer
    paths are replaced first, so a model folder inside the models folder becomes its own name.
    """
    places = [(p, n + "/", n) for p, n in names.items()] + [(p, "", d) for p, d in (roots or {}).items()]
    for path, inside, alone in sorted(places, key=lambda place: -len(str(place[0]))):
        for form in dict.fromkeys((str(path.resolve()), str(path.absolute()), str(path))):
            if form not in (".", ""):
                text = text.replace(form + os.sep, inside).replace(form, alone)
    return text


def models_dir() -> Path:
    """The models folder: ``TE_MODELS_DIR`` when set, else ``models`` in the current directory."""
    return Path(os.environ.get("TE_MODELS_DIR") or "models")


def _hub_cache() -> Path:
    try:
        from huggingface_hub import constants
    except ImportError:
        home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
        return Path(os.environ.get("HF_HUB_CACHE") or home / "hub")
    return Path(constants.HF_HUB_CACHE)


def list_cached_models(cache_dir: str | Path | None = None) -> FolderScan:
    """The models of the Hugging Face cache (the revision ``main`` points to), named by model id.

    Only what is already on disk is looked at; nothing is downloaded. ``load_pretrained(info.name)`` then loads a
    listed model without going online.
    """
    cache = Path(cache_dir) if cache_dir is not None else _hub_cache()
    models, skipped = [], []
    for repo in sorted(cache.glob("models--*")) if cache.is_dir() else []:
        model_id = repo.name.removeprefix("models--").replace("--", "/")
        ref = repo / "refs" / "main"
        snapshot = repo / "snapshots" / ref.read_text().strip() if ref.is_file() else None
        if snapshot is None or not snapshot.is_dir():
            skipped.append((repo, "no downloaded revision"))
            continue
        try:
            models.append(dataclasses.replace(inspect_folder(snapshot), name=model_id))
        except ValueError as exc:
            places = {snapshot: model_id, repo: model_id}
            skipped.append((repo, without_paths(str(exc), places, {cache: "the Hugging Face cache"})))
    return FolderScan(models, skipped)
