"""Fetch a model's files from the Hugging Face Hub, cache first.

Only the files a model needs are fetched: its JSON settings, its ``.safetensors`` weights and its tokenizer
files; never pickles or code. ``huggingface_hub`` is imported inside the functions, so the rest of the library
works without it.
"""

from __future__ import annotations

import re
from pathlib import Path

# The files a model needs; fnmatch patterns, matched against paths at the top of the repository.
ALLOW_PATTERNS = ["config.json", "model.safetensors", "model-*.safetensors", "model.safetensors.index.json",
                  "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                  "preprocessor_config.json"]
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
