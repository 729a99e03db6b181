"""The pretrained models the app offers: local folders, the Hugging Face cache and a curated list to download.

:func:`catalogue` lists every valid folder in the models folder (``TE_MODELS_DIR``, default ``models/``) and in
the Hugging Face cache, marks the ones this host's memory allows (the others say why they are greyed out), keeps
the folders it skipped with their reasons, and adds the curated models not yet on disk. A model known under
two names (``gpt2`` and ``openai-community/gpt2``) is one model: :data:`ALIASES` is the one table of such names.
:func:`hub_reachable` tells, within a bounded time, whether downloads can work at all; :func:`offline_advice` says
what to do when not; :func:`download` fetches a curated model within its listed size and this host's room.
Every text meant for visitors names folders relative to the models folder, never the server's paths.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from explorer.host import MIB, HostProfile, host_profile
from explorer.i18n import N_, _, num
from explorer.pretrained.published import QWEN25_05B, SMOLLM2_135M, SMOLLM2_360M, LlamaShape
from transformer_core.pretrained import FolderScan, ModelInfo, list_cached_models, list_model_folders, models_dir
from transformer_core.pretrained.folders import without_paths
from transformer_core.pretrained.hub import HubError, download_with_progress
from transformer_core.pretrained.hub import hub_reachable as _hub_answers

HUB_TIMEOUT_S = 2.0  # longest wait for the Hub check, name lookup included
SMALL_FILES_BYTES = 16 * MIB  # room for a model's config and tokenizer files besides its weights
SMALL_HOST_MODEL_BYTES = 160 * MIB  # largest model (float32 weights) a small host loads
MODEL_MEMORY_SHARE = 4  # elsewhere a model may take a quarter of the host's memory ...
MAX_MODEL_BYTES = 2048 * MIB  # ... but never more than this


@dataclass(frozen=True)
class Curated:
    """A published model the app suggests, with what it is good for."""

    model_id: str  # Hugging Face model id
    family: str  # "gpt2", "llama", "qwen2", "bert", "distilbert", "roberta" or "vit"
    n_params: int  # parameters (tied weights counted once)
    download_bytes: int  # most bytes its files may list (config, safetensors weights, tokenizer); more is refused
    good_for: str  # one line for the menu (English, marked for translation: shown as ``_(good_for)``)

    @property
    def n_bytes(self) -> int:
        """Memory of its float32 weights once loaded."""
        return 4 * self.n_params


def _published(model_id: str, family: str, shape: LlamaShape, good_for: str) -> Curated:
    """A curated Llama-family model whose sizes are computed from its published config's shapes: its parameters,
    and a download of its bfloat16 safetensors weights plus room for its config and tokenizer files."""
    return Curated(model_id, family, shape.n_params, shape.weight_bytes + SMALL_FILES_BYTES, good_for)


CURATED = (
    Curated("gpt2", "gpt2", 124_439_808, 550 * MIB, N_("GPT-2 small: next-token predictions, induction heads")),
    Curated("distilgpt2", "gpt2", 81_912_576, 355 * MIB, N_("a smaller GPT-2 (6 layers): quicker next tokens")),
    _published("HuggingFaceTB/SmolLM2-135M", "llama", SMOLLM2_135M,
               N_("SmolLM2-135M: a modern small LLM (RMSNorm, SwiGLU, RoPE, 3 K/V heads for 9 query heads)")),
    _published("HuggingFaceTB/SmolLM2-360M", "llama", SMOLLM2_360M,
               N_("SmolLM2-360M: the same design, wider and deeper (5 K/V heads for 15 query heads)")),
    _published("Qwen/Qwen2.5-0.5B", "qwen2", QWEN25_05B,
               N_("Qwen2.5-0.5B: a modern LLM with Q/K/V biases and 2 K/V heads for 14 query heads")),
    Curated("bert-base-uncased", "bert", 109_514_298, 442 * MIB, N_("BERT: fill in [MASK], attention both ways")),
    Curated("google/bert_uncased_L-2_H-128_A-2", "bert", 4_416_698, 20 * MIB,
            N_("BERT-Tiny (2 layers, 2 heads): fill-ins on small machines")),
    Curated("distilbert/distilbert-base-uncased", "distilbert", 66_985_530, 280 * MIB,
            N_("DistilBERT: BERT's fill-ins at half the depth (6 layers)")),
    Curated("FacebookAI/roberta-base", "roberta", 124_695_897, 500 * MIB,
            N_("RoBERTa: fill in <mask>, byte-level BPE tokens")),
    Curated("google/vit-base-patch16-224", "vit", 86_567_656, 347 * MIB, N_("ViT-B/16: 1,000 ImageNet labels")),
    Curated("WinKawaks/vit-tiny-patch16-224", "vit", 5_717_416, 25 * MIB, N_("ViT-Ti/16: ImageNet labels, tiny")),
)
# Names the Hub also knows a model by (its organisation's name, or the old name without one) -> the name used here.
ALIASES = {
    "openai-community/gpt2": "gpt2", "openai-community/gpt2-medium": "gpt2-medium",
    "openai-community/gpt2-large": "gpt2-large", "openai-community/gpt2-xl": "gpt2-xl",
    "distilbert/distilgpt2": "distilgpt2", "google-bert/bert-base-uncased": "bert-base-uncased",
    "google-bert/bert-base-cased": "bert-base-cased", "google-bert/bert-large-uncased": "bert-large-uncased",
    "distilbert/distilbert-base-uncased": "distilbert-base-uncased", "FacebookAI/roberta-base": "roberta-base",
}


def canonical(name: str) -> str:
    """The name a model goes by here, whichever of its Hub names ``name`` is (``openai-community/gpt2`` -> ``gpt2``)."""
    return ALIASES.get(name, name)


def same_model(a: str, b: str) -> bool:
    """Whether two model ids (or folder names) are the same published model."""
    return canonical(a) == canonical(b)


@dataclass(frozen=True)
class Offer:
    """A model on disk the app can load, and whether this host allows it."""

    info: ModelInfo  # what its headers say
    where: str  # "models folder" or "Hugging Face cache" (English, compared in code; shown as ``_(where)``)
    allowed: bool  # whether its weights fit this host's model budget
    reason: str  # why it is greyed out ("" when allowed; English: shown through :func:`shown_reason`)

    @property
    def source(self) -> str:
        """What :func:`~transformer_core.pretrained.load_pretrained` takes: the folder's path."""
        return str(self.info.path)

    @property
    def label(self) -> str:
        """A menu label: name, family and parameters."""
        return _("{name} ({family}, {params} parameters)").format(name=self.info.name, family=self.info.family,
                                                                  params=params_text(self.info.n_params))


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
    return f"{num(n / 1e6, 1)}M" if n >= 1e6 else num(n)


def model_budget_bytes(profile: HostProfile) -> int:
    """Largest model (float32 weights) one server loads on this host; one shared copy serves every visitor."""
    if profile.small:
        return SMALL_HOST_MODEL_BYTES
    return min(MAX_MODEL_BYTES, profile.memory_bytes // MODEL_MEMORY_SHARE)


WHERE = (N_("models folder"), N_("Hugging Face cache"))  # the places an offer comes from (Offer.where)
_TOO_BIG = re.compile(r"needs ([\d,]+) MB of memory; (this small host|this machine) loads models up to ([\d,]+) MB")


def _fits(n_bytes: int, budget: int, small: bool) -> tuple[bool, str]:
    """Whether a model fits, and why not in English (the catalogue is cached for every visitor: see shown_reason)."""
    if n_bytes <= budget:
        return True, ""
    host = "this small host" if small else "this machine"
    return False, f"needs {n_bytes / MIB:,.0f} MB of memory; {host} loads models up to {budget / MIB:,.0f} MB"


def shown_reason(reason: str) -> str:
    """A greyed-out model's reason (``Offer.reason``, a ``downloadable`` entry's) in the session's language."""
    found = _TOO_BIG.fullmatch(reason)
    if found is None:
        return reason
    need, budget = (int(found.group(i).replace(",", "")) for i in (1, 3))
    if found.group(2) == "this small host":
        text = _("needs {need} MB of memory; this small host loads models up to {budget} MB")
    else:
        text = _("needs {need} MB of memory; this machine loads models up to {budget} MB")
    return text.format(need=num(need), budget=num(budget))


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
    offers: list[Offer] = []
    for offer in _offers(local, "models folder", budget, profile.small) + _offers(
            cached, "Hugging Face cache", budget, profile.small):
        if not any(same_model(o.info.name, offer.info.name) for o in offers):  # one model, one entry: a folder's
            offers.append(offer)
    offers.sort(key=lambda o: not o.allowed)  # stable: folder order kept within each group
    skipped = [(p.name, why) for p, why in local.skipped] + [(_cache_name(p), why) for p, why in cached.skipped]
    on_disk = {canonical(o.info.name) for o in offers} | {o.info.name.split("/")[-1] for o in offers}
    downloadable = [(c, *_fits(c.n_bytes, budget, profile.small)) for c in CURATED
                    if canonical(c.model_id) not in on_disk and c.model_id.split("/")[-1] not in on_disk]
    return Catalogue(offers, skipped, downloadable, budget)


def _cache_name(repo: Path) -> str:
    """A Hugging Face cache folder's model id (``models--org--name`` -> ``org/name``)."""
    return repo.name.removeprefix("models--").replace("--", "/")


def hub_reachable(*, timeout: float = HUB_TIMEOUT_S) -> bool:
    """Whether the Hub answers within ``timeout`` seconds (name lookup included), asked as downloads ask it.

    The question goes through huggingface_hub, so ``HF_ENDPOINT`` and the proxy settings it honours count.
    ``HF_HUB_OFFLINE=1`` answers ``False`` at once.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    result: list[bool] = []
    worker = threading.Thread(target=lambda: result.append(_hub_answers(timeout)), daemon=True)
    worker.start()  # in a thread: a name lookup ignores the request's timeout
    worker.join(timeout)
    return bool(result and result[0])


def offline_advice(model_id: str = "gpt2") -> str:
    """What to do when this machine cannot reach the Hub (Markdown); it names no path of this server."""
    name = model_id.split("/")[-1]
    return _("This machine cannot reach the Hugging Face Hub, so models cannot be downloaded here. On a machine with "
             "internet run `{command}`, then copy the folder `models/{name}` into this app's models folder "
             "(`TE_MODELS_DIR`).").format(command=f"python -m transformer_core.pretrained download {model_id} "
                                                  "--to models/", name=name)


def public_text(text: str, offer: Offer | None = None, *, folder: str | Path | None = None) -> str:
    """``text`` (an error about ``offer`` or the models folder) with the server's paths written as folder names."""
    names = {offer.info.path: offer.info.name} if offer is not None else {}
    return without_paths(text, names, {Path(folder if folder is not None else models_dir()): "the models folder"})


def download_limit(model: Curated, profile: HostProfile, folder: Path) -> tuple[int, str]:
    """Most bytes a download of ``model`` may list, and what sets that limit."""
    free = shutil.disk_usage(next(p for p in (folder, *folder.parents) if p.exists())).free
    limits = [(model.download_bytes, "its entry in this app's catalogue allows at most"),
              (model_budget_bytes(profile) + SMALL_FILES_BYTES, "this host's model budget allows at most"),
              (free, "the disk of the models folder has only")]
    return min(limits)


def download(model: Curated, *, folder: str | Path | None = None, profile: HostProfile | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Path:
    """Fetch a curated model's files into ``<models folder>/<name>``, all from one commit, reporting progress.

    A download whose listed files exceed what the catalogue entry lists, what this host's model budget allows or
    the disk's free room is refused before its weights are fetched.

    Raises:
        ValueError: (``HubError``) saying what happened: pickle-only, too large, gated, not found, rate-limited,
            a server error, offline.
    """
    root = Path(folder if folder is not None else models_dir())
    limit, why = download_limit(model, profile or host_profile(), root)
    try:
        return download_with_progress(model.model_id, root / model.model_id.split("/")[-1], progress,
                                      max_bytes=limit, limit_why=why)
    except HubError as exc:
        raise HubError(public_text(str(exc), folder=root)) from exc
