"""The memory of a process and everything it started, counted as the kernel shares it out (Linux ``/proc``).

The served app is a process tree: the web server, the fork server trainers start from, and one trainer per run.
Resident sizes count the pages they share (torch's libraries, the fork server's heap) once per process, so a sum
of them overstates the tree many times; the proportional set size (PSS, from ``/proc/<pid>/smaps_rollup``)
splits each shared page between the processes that map it, so the tree's PSS counts every page once.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["children", "pss_bytes", "tree", "tree_pss_bytes"]


def children(pid: int, proc_root: str | Path = "/proc") -> list[int]:
    """The ids of ``pid``'s child processes (those that still run)."""
    found = []
    for stat in Path(proc_root).glob("[0-9]*/stat"):
        try:
            after_name = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while we looked
        if int(after_name[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def tree(pid: int, proc_root: str | Path = "/proc") -> list[int]:
    """``pid`` and all its descendants, parents first."""
    order, at = [pid], 0
    while at < len(order):
        order += children(order[at], proc_root)
        at += 1
    return order


def pss_bytes(pid: int, proc_root: str | Path = "/proc") -> int:
    """Process ``pid``'s proportional set size in bytes (0 when it has ended or cannot be read)."""
    try:
        for line in (Path(proc_root) / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_pss_bytes(pid: int, proc_root: str | Path = "/proc") -> int:
    """The memory of ``pid`` and its descendants, each shared page counted once (the sum of their PSS)."""
    return sum(pss_bytes(p, proc_root) for p in tree(pid, proc_root))
