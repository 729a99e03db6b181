"""The pretrained models the app offers: local folders, the Hugging Face cache and a curated list to download.

:func:`catalogue` lists every valid folder in the models folder (``TE_MODELS_DIR``, default ``models/``) and in
the Hugging Face cache, marks the ones this host's memory allows (the others say why they are greyed out), keeps
the folders it skipped with their reasons, and adds the curated models not yet on disk. :func:`hub_reachable`
tells, within a bounded time, whether downloads can work at all; :func:`offline_advice` says what to do when not.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from explorer.host import MIB, HostProfile, host_profile
from transformer_core.pretrained import FolderScan, ModelInfo, list_cached_models, list_model_folders, models_dir
from transformer_core.pretrained.hub import download_with_progress

HUB_HOST = "huggingface.co"  # where downloads come from
HUB_TIMEOUT_S = 2.0  # longest wait for the Hub check, name lookup included
SMALL_HOST_MODEL_BYTES = 160 * MIB  # largest model (float32 weights) a small host loads
MODEL_MEMORY_SHARE = 4  # elsewhere a model may take a quarter of the host's memory ...
MAX_MODEL_BYTES = 2048 * MIB  # ... but never more than this


@dataclass(frozen=True)
class Curated:
    """A published model the app suggests, with what it is good for."""

    model_id: str  # Hugging Face model id
    family: str  # "gpt2", "bert", "distilbert", "roberta" or "vit"
    n_params: int  # parameters (tied weights counted once)
    download_bytes: int  # size of the files fetched (config, safetensors weights, tokenizer)
    good_for: str  # one line for the menu

    @property
    def n_bytes(self) -> int:
        """Memory of its float32 weights once loaded."""
        return 4 * self.n_params


CURATED = (
    Curated("gpt2", "gpt2", 124_439_808, 550 * MIB, "GPT-2 small: next-token predictions, induction heads"),
    Curated("distilgpt2", "gpt2", 81_912_576, 355 * MIB, "a smaller GPT-2 (6 layers): quicker next tokens"),
    Curated("bert-base-uncased", "bert", 109_514_298, 442 * MIB, "BERT: fill in [MASK], attention both ways"),
    Curated("google/bert_uncased_L-4_H-256_A-4", "bert", 11_200_000, 45 * MIB,
            "a small BERT (4 layers, 4 heads): fill-ins on small machines"),
    Curated("distilbert/distilbert-base-uncased", "distilbert", 66_985_530, 258 * MIB,
            "DistilBERT: BERT's fill-ins at half the depth (6 layers)"),
    Curated("FacebookAI/roberta-base", "roberta", 124_695_897, 480 * MIB,
            "RoBERTa: fill in <mask>, byte-level BPE tokens"),
    Curated("google/vit-base-patch16-224", "vit", 86_567_656, 347 * MIB, "ViT-B/16: 1,000 ImageNet labels"),
    Curated("facebook/deit-tiny-patch16-224", "vit", 5_717_416, 23 * MIB, "DeiT-tiny: ImageNet labels, tiny"),
)


@dataclass(frozen=True)
class Offer:
    """A model on disk the app can load, and whether this host allows it."""

    info: ModelInfo  # what its headers say
    where: str  # "models folder" or "Hugging Face cache"
    allowed: bool  # whether its weights fit this host's model budget
    reason: str  # why it is greyed out ("" when allowed)

    @property
    def source(self) -> str:
        """What :func:`~transformer_core.pretrained.load_pretrained` takes: the folder's path."""
        return str(self.info.path)

    @property
    def label(self) -> str:
        """A menu label: name, family and parameters."""
        return f"{self.info.name} ({self.info.family}, {params_text(self.info.n_params)} parameters)"


@dataclass(frozen=True)
class Catalogue:
    """Everything the model menu shows."""

    offers: list[Offer]  # models on disk, allowed ones first
    skipped: list[tuple[str, str]]  # folders that are not valid models: (name, reason)
    downloadable: list[tuple[Curated, bool, str]]  # curated models not on disk: (model, allowed, reason)
    budget_bytes: int  # largest model this host loads

    def allowed(self, family: str | None = None) -> list[Offer]:
        """The offers this host allows, of one family or all."""
        return [o for o in self.offers if o.allowed and (family is None or o.info.family == family)]


def params_text(n: int) -> str:
    """A parameter count in short words: ``124.4M``, ``5.7M``, ``3,184``."""
    return f"{n / 1e6:,.1f}M" if n >= 1e6 else f"{n:,}"


def model_budget_bytes(profile: HostProfile) -> int:
    """Largest model (float32 weights) one server loads on this host; one shared copy serves every visitor."""
    if profile.small:
        return SMALL_HOST_MODEL_BYTES
    return min(MAX_MODEL_BYTES, profile.memory_bytes // MODEL_MEMORY_SHARE)


def _fits(n_bytes: int, budget: int, small: bool) -> tuple[bool, str]:
    if n_bytes <= budget:
        return True, ""
    host = "this small host" if small else "this machine"
    return False, f"needs {n_bytes / MIB:,.0f} MB of memory; {host} loads models up to {budget / MIB:,.0f} MB"


def _offers(scan: FolderScan, where: str, budget: int, small: bool) -> list[Offer]:
    return [Offer(info, where, *_fits(info.n_bytes, budget, small)) for info in scan.models]


def catalogue(*, folder: str | Path | None = None, cache_dir: str | Path | None = None,
              profile: HostProfile | None = None) -> Catalogue:
    """The models on offer: the models folder, the Hugging Face cache, then the curated ones not on disk.

    Args:
        folder: the models folder (default :func:`~transformer_core.pretrained.models_dir`).
        cache_dir: the Hugging Face cache (default: its usual place).
        profile: the host (default: this machine).
    """
    profile = profile or host_profile()
    budget = model_budget_bytes(profile)
    local = list_model_folders(folder if folder is not None else models_dir())
    cached = list_cached_models(cache_dir)
    offers = _offers(local, "models folder", budget, profile.small) + _offers(
        cached, "Hugging Face cache", budget, profile.small)
    offers.sort(key=lambda o: not o.allowed)  # stable: folder order kept within each group
    skipped = [(p.name, why) for p, why in local.skipped + cached.skipped]
    on_disk = {o.info.name for o in offers}
    downloadable = [(c, *_fits(c.n_bytes, budget, profile.small)) for c in CURATED
                    if c.model_id not in on_disk and c.model_id.split("/")[-1] not in on_disk]
    return Catalogue(offers, skipped, downloadable, budget)


def hub_reachable(*, host: str = HUB_HOST, port: int = 443, timeout: float = HUB_TIMEOUT_S) -> bool:
    """Whether a connection to the Hub opens within ``timeout`` seconds (name lookup included).

    ``HF_HUB_OFFLINE=1`` answers ``False`` at once.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    result: list[bool] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=attempt, daemon=True)  # getaddrinfo ignores the socket's timeout
    worker.start()
    worker.join(timeout)
    return bool(result and result[0])


def offline_advice(model_id: str = "gpt2") -> str:
    """What to do when this machine cannot reach the Hub (Markdown)."""
    name = model_id.split("/")[-1]
    return (f"This machine cannot reach the Hugging Face Hub, so models cannot be downloaded here. On a machine "
            f"with internet run `python -m transformer_core.pretrained download {model_id} --to models/`, then "
            f"copy the folder `models/{name}` into `{models_dir()}` here.")


def download(model: Curated, *, folder: str | Path | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Path:
    """Fetch a curated model's files into ``<models folder>/<name>``, reporting progress after each file.

    Raises:
        ValueError: (``HubError``) when the Hub cannot be reached or has no such model.
    """
    target = Path(folder if folder is not None else models_dir()) / model.model_id.split("/")[-1]
    return download_with_progress(model.model_id, target, progress)
