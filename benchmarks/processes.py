"""Process figures for the browser benchmarks: resident memory and CPU time of the server and of Chromium."""

from __future__ import annotations

import os
import time
from pathlib import Path


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_percent(pid: int, seconds: float = 3.0) -> float:
    """Share of one CPU core the process uses over the next ``seconds``."""
    before, start = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.perf_counter() - start)


def browser_pids() -> list[int]:
    """The Chromium processes this script started (descendants whose command line names Chromium)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, ppid = int(stat.parent.name), int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                if "chrom" in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace").lower():
                    found.append(child)
            except OSError:
                continue
    return found


def cpu_of(pids: list[int]) -> float:
    """CPU seconds used so far by the processes ``pids`` (those that are gone count 0)."""
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid)
        except (OSError, IndexError):
            continue
    return total
