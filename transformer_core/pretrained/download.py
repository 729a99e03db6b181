"""Fetch one commit of a Hub model: list its files once, choose the few it needs, fetch them all from that commit.

One ``model_info`` call lists the repository at the commit its ``main`` branch points to, with every file's size.
Every file then comes from that commit's sha, so a repository that changes meanwhile cannot mix two versions.
Before anything large is fetched the listing must show safetensors weights (a repository with only pickles is
refused, naming what it has) and its size must fit the caller's limit. A file the listing gives no size for is
refused before it is fetched (it could be of any size), and a file that arrives larger than listed is deleted and
refused. A model stored as one ``model.safetensors`` is fetched as that file; one stored in shards as exactly the
shards its index names — never both, never others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .hub_errors import HubError, explain

SINGLE = "model.safetensors"  # a model's weights in one file
INDEX = "model.safetensors.index.json"  # the tensor -> shard map of a model stored in several files
CONFIG = "config.json"
# The small files a model may need besides its weights: settings, tokenizers of every kind, image settings.
SMALL_FILES = (CONFIG, INDEX, "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
               "vocab.json", "merges.txt", "preprocessor_config.json", "modules.json", "1_Pooling/config.json")
# Weight files that are never fetched: pickles (they can run code when opened) and other frameworks' formats.
OTHER_WEIGHTS = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".h5", ".msgpack", ".onnx", ".gguf")
MIB = 2**20
LIMIT_WHY = "the limit here is"  # what sets a download's size limit, unless the caller says

Progress = Callable[[int, int, str], None]  # (bytes done, bytes in all, file name about to be fetched)


@dataclass(frozen=True)
class RepoFiles:
    """A Hub repository's files at one commit."""

    model_id: str  # as asked for, e.g. "gpt2"
    sha: str  # the commit every file is fetched from
    sizes: dict[str, int]  # every file of that commit: path in the repository -> bytes (0 when not listed)
    unknown: frozenset[str] = frozenset()  # the files whose size the listing did not give

    def total(self, names: list[str]) -> int:
        """Bytes of the listed files."""
        return sum(self.sizes[n] for n in names)


def hub_package():
    try:
        import huggingface_hub
    except ImportError as exc:
        raise HubError("Fetching models needs the huggingface_hub package (pip install huggingface_hub), or "
                       "a local model folder.") from exc
    return huggingface_hub


def list_files(model_id: str) -> RepoFiles:
    """The files of ``model_id`` at the commit ``main`` points to now, with their sizes (one request).

    Raises:
        HubError: saying what went wrong (gated, not found, rate-limited, server error, offline).
    """
    try:
        info = hub_package().HfApi().model_info(model_id, files_metadata=True)
    except Exception as exc:  # huggingface_hub raises many error types: explain() sorts them
        raise explain(model_id, exc) from exc
    if not info.sha:
        raise HubError(f"The Hugging Face Hub did not say which version of {model_id!r} is current; try again.")
    siblings = info.siblings or []
    return RepoFiles(model_id, info.sha, {s.rfilename: int(s.size or 0) for s in siblings},
                     frozenset(s.rfilename for s in siblings if s.size is None))


def require_safetensors(files: RepoFiles) -> None:
    """Refuse a repository without safetensors weights at the top level, naming the weight files it does have.

    Raises:
        HubError: for a pickle-only (or weightless) repository, before anything is fetched.
    """
    if CONFIG not in files.sizes:
        raise HubError(f"{files.model_id!r} has no {CONFIG} on the Hugging Face Hub, so it is not a model this library "
                       f"can build.")
    if SINGLE in files.sizes or INDEX in files.sizes:
        return
    others = sorted(n for n in files.sizes if n.endswith(OTHER_WEIGHTS) or n.endswith(".safetensors"))
    has = f"only {', '.join(others[:6])}{' …' if len(others) > 6 else ''}" if others else "no weight files at all"
    raise HubError(f"{files.model_id!r} has no {SINGLE} on its main branch: it has {has}. Pickle files can run code "
                   f"when opened, so they are never downloaded. Look on the Hub for a safetensors version of "
                   f"this model (search for its name; many models have a copy or a conversion with {SINGLE}).")


def shard_names(index_file: Path, files: RepoFiles) -> list[str]:
    """The shards ``index_file`` names, each checked to be a plain ``.safetensors`` file of the listing.

    Raises:
        HubError: for a damaged index, or one naming files outside the repository's top level or not in it.
    """
    try:
        weight_map = json.loads(index_file.read_text(encoding="utf-8")).get("weight_map")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise HubError(f"{files.model_id!r} has a damaged {INDEX} ({type(exc).__name__}).") from exc
    if not isinstance(weight_map, dict) or not weight_map or not all(isinstance(v, str) for v in weight_map.values()):
        raise HubError(f"{files.model_id!r} has a damaged {INDEX}: it maps no tensors to files.")
    names = sorted(set(weight_map.values()))
    bad = [n for n in names if "/" in n or "\\" in n or not n.endswith(".safetensors") or n not in files.sizes]
    if bad:
        raise HubError(f"{files.model_id!r}'s {INDEX} names files its repository does not hold: {', '.join(bad[:3])}.")
    return names


def check_size(files: RepoFiles, names: list[str], max_bytes: int | None, why: str = LIMIT_WHY) -> None:
    """Refuse a download whose listed size exceeds ``max_bytes``, or any of whose files has no listed size;
    ``why`` says what sets the limit.

    Raises:
        HubError: naming the size and the limit, or the file of unknown size.
    """
    unknown = sorted(n for n in names if n in files.unknown)
    if unknown:
        raise HubError(f"The Hugging Face Hub did not say how large {', '.join(unknown)} of {files.model_id!r} "
                       "is, so nothing of unknown size was downloaded; try again later.")
    total = files.total(names)
    if max_bytes is not None and total > max_bytes:
        raise HubError(f"{files.model_id!r} lists {size_text(total)} of files to download, but {why} "
                       f"{size_text(max_bytes)}, so its weights were not downloaded.")


def size_text(n_bytes: int) -> str:
    """A download size in words: ``548 MB``, ``17 kB``."""
    return f"{n_bytes / MIB:,.0f} MB" if n_bytes >= MIB else f"{max(1, round(n_bytes / 1024)):,} kB"


def _get(files: RepoFiles, name: str, local_dir: Path | None, cache_dir: Path | None) -> Path:
    """Fetch one file; a file that arrived larger than the listing said is deleted and refused."""
    try:
        path = Path(hub_package().hf_hub_download(files.model_id, name, revision=files.sha, local_dir=local_dir,
                                                  cache_dir=cache_dir))
    except Exception as exc:  # huggingface_hub raises many error types: explain() sorts them
        raise explain(files.model_id, exc, name) from exc
    received = path.stat().st_size
    if received > files.sizes.get(name, 0):
        real = path.resolve()  # the cache keeps a file's bytes once, behind a link
        path.unlink(missing_ok=True)
        real.unlink(missing_ok=True)
        raise HubError(f"{name} of {files.model_id!r} arrived with {size_text(received)}, more than the "
                       f"{size_text(files.sizes.get(name, 0))} its listing said; it was deleted. Try again later.")
    return path


def fetch_commit(files: RepoFiles, *, local_dir: Path | None = None, cache_dir: Path | None = None,
                 max_bytes: int | None = None, limit_why: str = LIMIT_WHY,
                 check: Callable[[Path], None] | None = None, progress: Progress | None = None) -> Path:
    """Fetch a model's needed files, all from the commit ``files`` lists, and return the folder holding them.

    Args:
        files: the repository's listing (:func:`list_files`).
        local_dir: a folder to put the files in; otherwise they go to the Hugging Face cache (``cache_dir``).
        max_bytes: refuse when the files to fetch list more bytes than this, before the weights are fetched.
        limit_why: what sets ``max_bytes``, for the refusal ("the disk has only").
        check: called with the folder once the small files are there, before any weight is fetched (e.g. to
            refuse a model over the caller's budget from its config.json).
        progress: called as ``progress(bytes_done, bytes_total, file_name)`` before each weight file and as
            ``progress(total, total, "")`` at the end.

    Raises:
        HubError: for pickle-only repositories, oversize downloads, damaged indexes and every Hub failure.
    """
    require_safetensors(files)
    single = SINGLE in files.sizes
    small = [n for n in SMALL_FILES if n in files.sizes and not (single and n == INDEX)]
    # Checked before anything is fetched, when the size is known (one file), and again once the index is read.
    check_size(files, small + ([SINGLE] if single else []), max_bytes, limit_why)
    folder = _get(files, CONFIG, local_dir, cache_dir).parent
    for name in small[1:]:
        _get(files, name, local_dir, cache_dir)
    weights = [SINGLE] if single else shard_names(folder / INDEX, files)
    check_size(files, small + weights, max_bytes, limit_why)
    if check is not None:
        check(folder)
    total, done = files.total(small + weights), files.total(small)
    for name in weights:
        if progress:
            progress(done, total, name)
        _get(files, name, local_dir, cache_dir)
        done += files.sizes[name]
    if local_dir is None:
        _point_main_at(folder, files.sha)
    else:
        _remove_stale_weights(folder, keep=set(weights))
    if progress:
        progress(total, total, "")
    return folder


def _point_main_at(snapshot: Path, sha: str) -> None:
    """Record in the Hugging Face cache that ``main`` is now ``sha`` (files fetched by sha do not record it)."""
    refs = snapshot.parent.parent / "refs"  # <cache>/models--org--name/snapshots/<sha> -> <...>/refs
    refs.mkdir(parents=True, exist_ok=True)
    (refs / "main").write_text(sha)


def _remove_stale_weights(folder: Path, keep: set[str]) -> None:
    """Delete weight files an earlier version left in ``folder``: the loader must read only this version's."""
    for path in folder.glob("model*.safetensors*"):
        if path.name not in keep and path.name != INDEX:
            path.unlink()
    if SINGLE in keep and (folder / INDEX).is_file():
        (folder / INDEX).unlink()
