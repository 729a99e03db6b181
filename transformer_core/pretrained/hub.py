"""Fetch a model's files from the Hugging Face Hub, cache first.

Only the files a model needs are fetched: its JSON settings, its ``.safetensors`` weights and its tokenizer
files; never pickles or code. ``huggingface_hub`` is imported inside the functions, so the rest of the library
works without it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from pathlib import Path

# The files a model needs; fnmatch patterns, matched against paths at the top of the repository.
ALLOW_PATTERNS = ["config.json", "model.safetensors", "model-*.safetensors", "model.safetensors.index.json",
                  "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                  "vocab.json", "merges.txt", "modules.json", "1_Pooling/config.json", "preprocessor_config.json"]
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


class HubError(ValueError):
    """A model could not be fetched from the Hub; the message says why and what to do instead."""


def looks_like_model_id(source: str) -> bool:
    """Whether ``source`` has the form of a Hub model id, e.g. ``"gpt2"`` or ``"google/vit-base-patch16-224"``."""
    return bool(_MODEL_ID.match(source)) and ".." not in source


def _hub():
    try:
        import huggingface_hub
    except ImportError as exc:
        raise HubError("Fetching models needs the huggingface_hub package (pip install huggingface_hub), or "
                       "a local model folder.") from exc
    return huggingface_hub


def _offline_advice(model_id: str, exc: Exception) -> HubError:
    name = model_id.split("/")[-1]
    kind = type(exc).__name__
    if kind in ("RepositoryNotFoundError", "GatedRepoError"):
        return HubError(f"The Hugging Face Hub has no public model called {model_id!r} ({kind}).")
    return HubError(
        f"Could not fetch {model_id!r} from the Hugging Face Hub and it is not in the local cache ({kind}). "
        f"This machine may be offline. On a machine with internet run `python -m transformer_core.pretrained "
        f"download {model_id} --to models/`, then copy the folder models/{name} here."
    )


def fetch_file(model_id: str, filename: str, *, cache_dir: Path | None = None) -> Path:
    """One file of a Hub model, from the local cache when it is there, otherwise downloaded.

    Raises:
        HubError: when the file is neither cached nor downloadable (offline, unknown model...).
    """
    hub = _hub()
    try:
        return Path(hub.hf_hub_download(model_id, filename, cache_dir=cache_dir, local_files_only=True))
    except Exception:  # not cached yet: go online
        pass
    try:
        return Path(hub.hf_hub_download(model_id, filename, cache_dir=cache_dir))
    except Exception as exc:  # huggingface_hub raises many error types (offline, HTTP, not found...)
        raise _offline_advice(model_id, exc) from exc


def fetch_model(model_id: str, *, cache_dir: Path | None = None, local_dir: Path | None = None) -> Path:
    """The folder holding a Hub model's needed files (cache first; ``local_dir`` copies them there).

    Raises:
        HubError: when the files are neither cached nor downloadable.
    """
    hub = _hub()
    if local_dir is None:
        try:
            folder = Path(hub.snapshot_download(model_id, allow_patterns=ALLOW_PATTERNS, cache_dir=cache_dir,
                                                local_files_only=True))
            if (folder / "config.json").is_file() and any(folder.glob("model*.safetensors*")):
                return folder
        except Exception:  # not cached (or only partly): go online
            pass
    try:
        return Path(hub.snapshot_download(model_id, allow_patterns=ALLOW_PATTERNS, cache_dir=cache_dir,
                                          local_dir=local_dir))
    except Exception as exc:  # huggingface_hub raises many error types (offline, HTTP, not found...)
        raise _offline_advice(model_id, exc) from exc


def needed_files(names: list[str]) -> list[str]:
    """The names (at the top of a repository) that match :data:`ALLOW_PATTERNS`, in their given order."""
    return [n for n in names if "/" not in n and any(fnmatch.fnmatch(n, p) for p in ALLOW_PATTERNS)]


def download_with_progress(model_id: str, local_dir: Path,
                           progress: Callable[[int, int, str], None] | None = None) -> Path:
    """Fetch a Hub model's needed files into ``local_dir`` one by one, reporting progress after each file.

    Args:
        model_id: e.g. ``"gpt2"``.
        local_dir: the folder the files go to (created if missing).
        progress: called as ``progress(bytes_done, bytes_total, file_name)`` before each file and at the end.

    Raises:
        HubError: when the Hub cannot be reached or has no such model.
    """
    hub = _hub()
    try:
        info = hub.HfApi().model_info(model_id, files_metadata=True)
        sizes = {s.rfilename: int(s.size or 0) for s in info.siblings or []}
        files = needed_files(list(sizes))
        total, done = sum(sizes[f] for f in files), 0
        for name in files:
            if progress:
                progress(done, total, name)
            hub.hf_hub_download(model_id, name, local_dir=local_dir)
            done += sizes[name]
    except Exception as exc:  # huggingface_hub raises many error types (offline, HTTP, not found...)
        raise _offline_advice(model_id, exc) from exc
    if progress:
        progress(total, total, "")
    return Path(local_dir)
