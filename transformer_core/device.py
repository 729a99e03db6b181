"""Device choice: CUDA if present, else Apple's MPS, else the CPU — the same code runs on all three."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys

import torch


def available_devices() -> list[str]:
    """Devices usable in this process, best first, e.g. ``["cuda", "cpu"]``."""
    devices = []
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    devices.append("cpu")
    return devices


def pick_device(preferred: str | None = None) -> torch.device:
    """The preferred device when it is available, otherwise the best available one."""
    devices = available_devices()
    if preferred is not None and preferred in devices:
        return torch.device(preferred)
    return torch.device(devices[0])


def configure_threads(max_threads: int | None = None) -> int:
    """Use the CPU cores this process may run on (capped), returning the thread count chosen.

    Small models gain little beyond a few threads, and oversubscription on shared machines costs a lot, so the
    default cap is 4; ``TE_NUM_THREADS`` overrides it.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    cap = max_threads or int(os.environ.get("TE_NUM_THREADS", "4"))
    threads = max(1, min(cores, cap))
    torch.set_num_threads(threads)
    return threads


def trim_memory() -> bool:
    """Hand memory that freed tensors left in the C heap back to the operating system; True if it could.

    glibc keeps freed blocks for reuse, so a server's resident size would not shrink after a run frees its
    optimiser state; ``malloc_trim`` returns them. Elsewhere (macOS, musl, Windows) this does nothing.
    """
    gc.collect()
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False
