"""A fake Hugging Face Hub for the download tests: commits of one repository, served like huggingface_hub serves them.

It stands in for ``HfApi().model_info``, ``hf_hub_download`` and ``snapshot_download`` (their real signatures), keeps
a Hugging Face cache in the real layout (``models--org--name/snapshots/<sha>``, ``refs/main``), records every
request, and can fail the way the real Hub does (gated, not found, 429, 5xx, a missing file, no network), list a
file without its size, or serve a file larger than it lists.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import httpx2
import huggingface_hub
from huggingface_hub import errors

URL = "https://huggingface.co/api/models/someone/model"


def http_error(kind: type[errors.HfHubHTTPError], status: int) -> errors.HfHubHTTPError:
    """An error as huggingface_hub raises it for an HTTP answer with ``status``."""
    response = httpx2.Response(status, request=httpx2.Request("GET", URL))
    return kind(f"{status} Client Error.", response=response)


FAILURES = {  # what each failure raises, as the real library raises it
    "gated": lambda: http_error(errors.GatedRepoError, 403),
    "not found": lambda: http_error(errors.RepositoryNotFoundError, 404),
    "rate limit": lambda: http_error(errors.HfHubHTTPError, 429),
    "server error": lambda: http_error(errors.HfHubHTTPError, 503),
    "missing file": lambda: http_error(errors.RemoteEntryNotFoundError, 404),
    "offline": lambda: httpx2.ConnectError("[Errno -3] Temporary failure in name resolution"),
}


class FakeHub:
    """One repository with commits (sha -> folder of files) and a ``main`` branch that may move."""

    def __init__(self, cache: Path) -> None:
        self.cache, self.commits, self.main, self.calls = cache, {}, "", []
        self.fail_listing: str | None = None  # a FAILURES key raised by model_info
        self.fail_file: tuple[str, str] | None = None  # (file name, FAILURES key) raised when it is fetched
        self.move_main_to: str | None = None  # main moves to this commit right after it is listed
        self.unsized: set[str] = set()  # files listed without a size
        self.grown: dict[str, bytes] = {}  # file name -> bytes served after it, beyond what the listing says

    def commit(self, sha: str, folder: Path) -> None:
        """Add a commit holding ``folder``'s files and point ``main`` at it."""
        self.commits[sha], self.main = folder, sha

    def install(self, monkeypatch) -> FakeHub:
        """Stand in for huggingface_hub's functions for one test."""
        hub = self

        class Api:
            def __init__(self, *args, **kwargs) -> None:
                pass

            def model_info(self, repo_id, *, revision=None, timeout=None, files_metadata=False, token=None):
                return hub.model_info(repo_id, revision=revision, files_metadata=files_metadata)

        monkeypatch.setattr(huggingface_hub, "HfApi", Api)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", self.hf_hub_download)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", self.snapshot_download)
        return self

    def model_info(self, repo_id, *, revision=None, files_metadata=False):
        self.calls.append(("info", repo_id, revision))
        if self.fail_listing:
            raise FAILURES[self.fail_listing]()
        sha = revision or self.main
        folder = self.commits[sha]
        siblings = [SimpleNamespace(rfilename=(name := p.relative_to(folder).as_posix()),
                                    size=p.stat().st_size if files_metadata and name not in self.unsized else None)
                    for p in sorted(folder.rglob("*")) if p.is_file()]
        if self.move_main_to:
            self.main = self.move_main_to
        return SimpleNamespace(id=repo_id, sha=sha, siblings=siblings)

    def _snapshot(self, repo_id: str, sha: str) -> Path:
        return self.cache / f"models--{repo_id.replace('/', '--')}" / "snapshots" / sha

    def hf_hub_download(self, repo_id, filename, *, revision=None, cache_dir=None, local_dir=None,
                        local_files_only=False):
        self.calls.append(("file", filename, revision))
        if local_files_only:
            raise errors.LocalEntryNotFoundError("not cached")
        if self.fail_file and self.fail_file[0] == filename:
            raise FAILURES[self.fail_file[1]]()
        sha = revision or self.main
        target = (Path(local_dir) if local_dir else self._snapshot(repo_id, sha)) / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.commits[sha] / filename, target)
        if filename in self.grown:
            with target.open("ab") as fh:
                fh.write(self.grown[filename])
        if not local_dir and revision in (None, "main"):  # like huggingface_hub: only a branch name is recorded
            ref = self.cache / f"models--{repo_id.replace('/', '--')}" / "refs" / "main"
            ref.parent.mkdir(parents=True, exist_ok=True)
            ref.write_text(sha)
        return str(target)

    def snapshot_download(self, repo_id, *, cache_dir=None, local_files_only=False, allow_patterns=None, **_):
        self.calls.append(("snapshot", repo_id, local_files_only))
        ref = self.cache / f"models--{repo_id.replace('/', '--')}" / "refs" / "main"
        if not ref.is_file():
            raise errors.LocalEntryNotFoundError("not cached")
        return str(self._snapshot(repo_id, ref.read_text()))

    def fetched(self) -> list[str]:
        """The files fetched (not the cache look-ups), in order."""
        return [name for kind, name, _ in self.calls if kind == "file"]
