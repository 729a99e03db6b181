"""How big is the machine the app runs on, and how large may models, batches and runs be on it?

A free cloud host (Streamlit Community Cloud, a small container) gives the app one or two shared CPU cores and
at most a few GB of memory, shared by every visitor. :func:`detect_host` reads what this process may really
use — the CPU affinity and CPU quota, and the memory limit of its control group (cgroup v2 or v1) or else the
machine's memory — and :func:`limits` turns that into the defaults and limits the pages offer.

A host is small when it has less than 1 GB of memory, at most one core, less than 3 GB with at most two cores
(Community Cloud gives about 2.7 GB and two shared cores), or when the app runs from ``/mount/src``, where
Community Cloud checks out every app. An ordinary two-core laptop with 8 GB or more is not small.

The environment variable ``TE_SMALL_HOST`` overrides the detection: ``1`` forces the small-host limits, ``0``
the normal ones. ``TE_CGROUP_ROOT`` points the detection at another cgroup folder than ``/sys/fs/cgroup``: a
folder holding a ``memory.max`` and a ``cpu.max`` (cgroup v2) or v1's ``memory/memory.limit_in_bytes`` and
``cpu/cpu.cfs_quota_us`` gives the app those limits, as a container would (the classroom benchmark runs the app
under Community Cloud's this way).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

GIB = 1024**3
MIB = 1024**2
SMALL_MEMORY_BYTES = 1 * GIB  # less memory than this makes a host "small"
SMALL_CORES = 1  # this many usable CPU cores or fewer makes a host "small"
SHARED_MEMORY_BYTES = 3 * GIB  # less memory than this ...
SHARED_CORES = 2  # ... with this many cores or fewer also makes a host "small" (Community Cloud: ~2.7 GB, 2 cores)
CLOUD_SOURCE = Path("/mount/src")  # Streamlit Community Cloud checks the app out here and runs it from there
UNLIMITED = 2**60  # cgroup v1 reports "no limit" as a number near 2**63
ENV_OVERRIDE = "TE_SMALL_HOST"  # "1" forces the small-host limits, "0" the normal ones
ENV_CGROUP_ROOT = "TE_CGROUP_ROOT"  # where the cgroup file system is read from, when not /sys/fs/cgroup
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Of the memory this process may use, the share that runs holding training state may take together: the rest is
# the web server's (about 300 MB with torch), its pages' models and the sessions' data. Community Cloud's 2.7 GB
# gives about 1.1 GB.
TRAINING_MEMORY_FRACTION = 0.4


@dataclass(frozen=True)
class HostProfile:
    """What this process may use on its machine."""

    cores: int  # CPU cores it may run on (affinity, capped by a CPU quota)
    memory_bytes: int  # memory it may use (control-group limit, or the machine's total memory)
    small: bool  # whether the app should lower its defaults and limits


@dataclass(frozen=True)
class Limits:
    """App-wide defaults and limits for model size, training and inputs on this host."""

    max_d_model: int  # widest model width offered for models that are built and run
    max_layers: int  # most layers (per stack) offered for models that are built and run
    max_steps: int  # longest training run a visitor may start
    max_batch: int  # largest training batch
    default_steps: int  # most training steps preselected on the training page (a task's shorter default wins)
    max_image_size: int  # uploaded images are scaled down to at most this many pixels per side
    max_text_chars: int  # a visitor's own training text is cut to this many (kept per session, 8 bytes each as ids)
    memory_budget_bytes: int  # memory one visitor's model, optimiser and activations may take
    step_time_budget_s: float  # longest estimated time of one training step (all lanes) before a run is refused
    measure_time_budget_s: float  # longest estimated step the Model Builder times for real on a click
    threads: int  # torch threads per process
    max_checkpoint_bytes: int  # largest checkpoint a run may produce (the upload limit must take it back)
    max_live_runs: int  # live-training runs that may train at the same time in this server process
    max_trainers: int  # trainer processes held at once (running and paused runs); paused ones give theirs back
    # Memory that every run holding training state may take together (model, optimiser, activations and trainer
    # process); limits_for sets it from the host's memory (TRAINING_MEMORY_FRACTION), never below two runs' budget.
    training_memory_bytes: int


# The step-time budgets keep the Live Training page responsive: a click is handled after the step under way,
# so Pause takes effect within about one step (all lanes) plus a redraw — well under a second. The Model
# Builder's real-step timing runs once, on a click, so it may take longer.
NORMAL_LIMITS = Limits(
    max_d_model=512, max_layers=8, max_steps=5000, max_batch=256, default_steps=1000,
    max_image_size=224, max_text_chars=1_000_000, memory_budget_bytes=1 * GIB, step_time_budget_s=0.4,
    measure_time_budget_s=2.0, threads=4, max_checkpoint_bytes=60 * MIB, max_live_runs=6,
    max_trainers=12, training_memory_bytes=4 * GIB,
)
SMALL_LIMITS = Limits(
    max_d_model=128, max_layers=4, max_steps=1000, max_batch=64, default_steps=300,
    max_image_size=96, max_text_chars=200_000, memory_budget_bytes=128 * MIB, step_time_budget_s=0.25,
    measure_time_budget_s=0.5, threads=1, max_checkpoint_bytes=32 * MIB, max_live_runs=2,
    max_trainers=4, training_memory_bytes=1 * GIB,
)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cgroup_paths(proc_root: Path) -> dict[str, str]:
    """Controller name ("" for cgroup v2) -> this process's path inside that hierarchy."""
    paths: dict[str, str] = {}
    for line in (_read(proc_root / "self" / "cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                paths[controller] = parts[2]
    return paths


def _candidates(cgroup_root: Path, sub: str, own: str | None, name: str) -> list[Path]:
    """The limit file of this process's own group first, then the one at the root of the mount."""
    base = cgroup_root / sub if sub else cgroup_root
    found = [base / own.lstrip("/") / name] if own and own != "/" else []
    return [*found, base / name]


def cgroup_memory_limit(cgroup_root: Path, proc_root: Path) -> int | None:
    """The control group's memory limit in bytes, or ``None`` when there is none."""
    own = _cgroup_paths(proc_root)
    files = _candidates(cgroup_root, "", own.get(""), "memory.max") + _candidates(
        cgroup_root, "memory", own.get("memory"), "memory.limit_in_bytes")
    limits = []
    for path in files:
        text = _read(path)
        if text and text.isdigit() and int(text) < UNLIMITED:
            limits.append(int(text))
    return min(limits) if limits else None


def cgroup_cpu_quota(cgroup_root: Path, proc_root: Path) -> float | None:
    """CPU cores allowed by the control group's quota (e.g. 0.5), or ``None`` when there is no quota."""
    own = _cgroup_paths(proc_root)
    for path in _candidates(cgroup_root, "", own.get(""), "cpu.max"):
        fields = (_read(path) or "").split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]) > 0:
            return int(fields[0]) / int(fields[1])
    for controller in ("cpu", "cpu,cpuacct"):
        paths = _candidates(cgroup_root, controller, own.get("cpu"), "cpu.cfs_quota_us")
        for quota_path in paths:
            quota = _read(quota_path)
            period = _read(quota_path.with_name("cpu.cfs_period_us"))
            if quota and period and quota.isdigit() and period.isdigit() and int(period) > 0:
                return int(quota) / int(period)
    return None


def total_memory(proc_root: Path) -> int | None:
    """The machine's memory in bytes from ``/proc/meminfo`` (``MemTotal``), or ``None`` if unreadable."""
    for line in (_read(proc_root / "meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * 1024  # the file counts kB
    return None


def _affinity_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:  # the folder was removed under the process
        return Path("/")


def on_community_cloud(cwd: str | Path) -> bool:
    """Whether the app runs from Streamlit Community Cloud's checkout folder (``/mount/src/<repository>``)."""
    path = Path(cwd)
    return path == CLOUD_SOURCE or CLOUD_SOURCE in path.parents


def detect_host(*, proc_root: str | Path = "/proc", cgroup_root: str | Path | None = None,
                cores: int | None = None, environ: Mapping[str, str] | None = None,
                cwd: str | Path | None = None) -> HostProfile:
    """Measure the CPU cores and memory this process may use and decide whether the host is small.

    Args:
        proc_root, cgroup_root: where ``/proc`` and the cgroup file system are mounted (tests pass folders);
            ``cgroup_root`` defaults to ``TE_CGROUP_ROOT``, else ``/sys/fs/cgroup``.
        cores: CPU cores from the affinity mask; measured when ``None``.
        environ: environment to read ``TE_SMALL_HOST`` from; ``os.environ`` when ``None``.
        cwd: the folder the app runs from; the current working directory when ``None``.
    """
    environ = os.environ if environ is None else environ
    if cgroup_root is None:
        cgroup_root = environ.get(ENV_CGROUP_ROOT, "").strip() or CGROUP_ROOT
    proc_root, cgroup_root = Path(proc_root), Path(cgroup_root)
    cores = _affinity_cores() if cores is None else cores
    quota = cgroup_cpu_quota(cgroup_root, proc_root)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    known = [m for m in (cgroup_memory_limit(cgroup_root, proc_root), total_memory(proc_root)) if m]
    memory = min(known) if known else 4 * GIB  # unknown: assume an ordinary laptop
    small = (memory < SMALL_MEMORY_BYTES or cores <= SMALL_CORES or (quota is not None and quota < 1)
             or (memory < SHARED_MEMORY_BYTES and cores <= SHARED_CORES)
             or on_community_cloud(_cwd() if cwd is None else cwd))
    override = environ.get(ENV_OVERRIDE, "").strip()
    if override in ("0", "1"):
        small = override == "1"
    return HostProfile(cores=max(1, cores), memory_bytes=memory, small=small)


def limits_for(profile: HostProfile) -> Limits:
    """The defaults and limits for a host: the small-host set when ``profile.small``."""
    base = SMALL_LIMITS if profile.small else NORMAL_LIMITS
    training = max(2 * base.memory_budget_bytes, int(TRAINING_MEMORY_FRACTION * profile.memory_bytes))
    return replace(base, threads=max(1, min(base.threads, profile.cores)), training_memory_bytes=training)


@lru_cache(maxsize=1)
def host_profile() -> HostProfile:
    """This machine's profile, measured once per process."""
    return detect_host()


def limits() -> Limits:
    """The defaults and limits for this machine (measured once per process)."""
    return limits_for(host_profile())
