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


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (a server and the trainers or helpers it started)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            child, ppid = int(stat.parent.name), int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(child)
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def tree_pss_bytes(pid: int) -> int:
    """Proportional set size of ``pid``'s process tree: pages shared between its processes counted once."""
    total = 0
    for member in process_tree(pid):
        try:
            for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except OSError:  # gone meanwhile
            continue
    return total


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds used so far in ``pid``'s process tree: each process's under ``"process[pid]"`` (its threads that
    ended included), and each live thread's under ``"process[pid]/tid:name"`` (Linux keeps 15 characters of a
    thread's name; Python's own threads are named after their process)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for member in process_tree(pid):
        try:
            process = Path(f"/proc/{member}/comm").read_text().strip()
            used[f"{process}[{member}]"] = cpu_seconds(member)
            tasks = list(Path(f"/proc/{member}/task").iterdir())
        except (OSError, IndexError):
            continue
        for task in tasks:
            try:
                name = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            used[f"{process}[{member}]/{task.name}:{name}"] = (int(fields[11]) + int(fields[12])) / ticks
    return used
