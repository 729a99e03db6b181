"""Fetch a model's files from the Hugging Face Hub, cache first, all from one commit.

Only the files a model needs are fetched (see :mod:`.download`): its JSON settings, its ``.safetensors`` weights
and its tokenizer files; never pickles or code. ``huggingface_hub`` is imported inside the functions, so the rest
of the library works without it; it also decides where the Hub is (``HF_ENDPOINT``), which proxy to use
(``HTTPS_PROXY``) and which token to send (``HF_TOKEN``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .download import CONFIG, INDEX, LIMIT_WHY, SINGLE, Progress, fetch_commit, hub_package, list_files
from .hub_errors import HubError

__all__ = ["HubError", "download_with_progress", "fetch_model", "hub_reachable", "looks_like_model_id"]

PROBE_MODEL = "openai-community/gpt2"  # asked about by hub_reachable(); any answer means the Hub is there
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def looks_like_model_id(source: str) -> bool:
    """Whether ``source`` has the form of a Hub model id, e.g. ``"gpt2"`` or ``"google/vit-base-patch16-224"``."""
    return bool(_MODEL_ID.match(source)) and ".." not in source


def _cached_folder(model_id: str, cache_dir: Path | None) -> Path | None:
    """The cached snapshot ``main`` points to, when it holds a config and weights; nothing goes online."""
    try:
        folder = Path(hub_package().snapshot_download(model_id, cache_dir=cache_dir, local_files_only=True))
    except Exception:  # not cached (or only partly)
        return None
    complete = (folder / CONFIG).is_file() and ((folder / SINGLE).is_file() or (folder / INDEX).is_file())
    return folder if complete else None


def fetch_model(model_id: str, *, cache_dir: Path | None = None, local_dir: Path | None = None,
                check: Callable[[Path], None] | None = None, max_bytes: int | None = None,
                progress: Progress | None = None) -> Path:
    """The folder holding a Hub model's needed files: the cache's copy, else fetched from one commit.

    Args:
        model_id: e.g. ``"gpt2"``.
        cache_dir: the Hugging Face cache (default: its usual place).
        local_dir: fetch into this folder instead of the cache (the cache is then not looked at).
        check: called with the folder before any weight is fetched (and on a cached copy), to refuse a model
            from its config.json.
        max_bytes: refuse a download that lists more bytes than this.
        progress: ``progress(bytes_done, bytes_total, file_name)``, see :func:`.download.fetch_commit`.

    Raises:
        HubError: when the files are neither cached nor downloadable, with what happened.
    """
    if local_dir is None:
        cached = _cached_folder(model_id, cache_dir)
        if cached is not None:
            if check is not None:
                check(cached)
            return cached
    return fetch_commit(list_files(model_id), local_dir=local_dir, cache_dir=cache_dir, check=check,
                        max_bytes=max_bytes, progress=progress)


def download_with_progress(model_id: str, local_dir: Path, progress: Progress | None = None, *,
                           max_bytes: int | None = None, limit_why: str = LIMIT_WHY) -> Path:
    """Fetch a Hub model's needed files into ``local_dir`` from one commit, reporting progress by bytes.

    Raises:
        HubError: for pickle-only repositories, downloads over ``max_bytes``, and every Hub failure.
    """
    return fetch_commit(list_files(model_id), local_dir=Path(local_dir), max_bytes=max_bytes, limit_why=limit_why,
                        progress=progress)


def hub_reachable(timeout: float) -> bool:
    """Whether the Hub answers within ``timeout`` seconds, asked through ``huggingface_hub`` itself.

    So ``HF_ENDPOINT``, proxies and ``HF_HUB_OFFLINE`` count as they do for downloads. Any HTTP answer (even an
    error status) means it is reachable; what a download then meets is explained when it happens.
    """
    try:
        hub = hub_package()
    except HubError:
        return False
    try:
        hub.HfApi().model_info(PROBE_MODEL, timeout=timeout)
    except hub.errors.OfflineModeIsEnabled:
        return False
    except hub.errors.HfHubHTTPError:
        return True
    except Exception:  # no answer: connection refused, DNS, proxy, TLS, timeout
        return False
    return True
