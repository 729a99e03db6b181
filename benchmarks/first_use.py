"""What PyTorch imports on first use costs a server and its trainers, and what importing it up front saves.

``import torch`` leaves ``torch._dynamo`` out; the first optimiser step, or the first model built on the meta device
(the Model Builder), imports it then: about 800 modules. The app imports it once, before it freezes its heap
(``explorer/heap.py: LAZY_MODULES``), and the trainers' fork server imports it for every trainer
(``explorer/runs/trainer_link.py``). Measured here, each in fresh processes:

- **the server**: the app's modules imported and its heap settled as ``app.py`` does it, then the Model Builder's
  first model built on the meta device (timed), then the objects a full collection walks; once with the lazy
  modules imported before the freeze (the app) and once without (``LAZY_MODULES`` emptied);
- **a trainer**: a process from a fork server whose preload is the app's list or the list without the lazy modules
  trains one AdamW step of a small model; the time from ``start()`` to the step's end, for the second and third
  trainer of each fork server (the first also starts the fork server), and the trainer's resident memory after.

Usage::

    python benchmarks/first_use.py
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SERVER = """
import gc, json, sys, time
import ui.pages, ui.common.sidebar, ui.training.run
from explorer import heap
if {empty}:
    heap.LAZY_MODULES = ()
start = time.perf_counter()
heap.settle_heap()
settled = time.perf_counter() - start
from explorer.lab.builder import BuilderSettings, build
modules = len(sys.modules)
start = time.perf_counter()
build(BuilderSettings(), "meta")
first = time.perf_counter() - start
start = time.perf_counter()
gc.collect()
collect = time.perf_counter() - start
print(json.dumps(dict(settle_s=settled, first_build_s=first, imported=len(sys.modules) - modules,
                      walked=len(gc.get_objects()), full_collection_s=collect)))
"""


def server(lazy_first: bool) -> dict[str, float]:
    """The figures of a fresh server process (see the module docstring)."""
    done = subprocess.run([sys.executable, "-c", SERVER.format(empty=not lazy_first)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _one_step(conn) -> None:
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
    optimiser = torch.optim.AdamW(model.parameters())
    model(torch.randn(8, 64)).pow(2).mean().backward()
    optimiser.step()
    with open("/proc/self/status") as status:
        rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    conn.send(rss)


def trainers(preload: list[str], count: int = 3) -> list[tuple[float, int]]:
    """``count`` processes from one new fork server with ``preload``: (seconds from start to a first step, RSS)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload)
    out = []
    for _ in range(count):
        parent, child = ctx.Pipe()
        start = time.perf_counter()
        proc = ctx.Process(target=_one_step, args=(child,))
        proc.start()
        rss = parent.recv()
        out.append((time.perf_counter() - start, rss))
        proc.join()
    from multiprocessing import forkserver

    forkserver._forkserver._stop()  # the next preload list gets a fork server of its own
    return out


def main() -> None:
    from explorer.heap import LAZY_MODULES

    print(f"lazy modules imported up front: {', '.join(LAZY_MODULES)}")
    for lazy_first in (False, True):
        f = server(lazy_first)
        label = "imported before the freeze" if lazy_first else "imported on first use"
        print(f"server, {label}: settling the heap {f['settle_s']:.2f} s; the Model Builder's first meta model "
              f"{f['first_build_s']:.2f} s ({f['imported']} modules imported then); a full collection then walks "
              f"{f['walked']:,} objects in {f['full_collection_s'] * 1000:.0f} ms")
    base = ["explorer.runs.trainer_process"]
    for preload, label in ((base, "without"), ([*base, *LAZY_MODULES], "with")):
        runs = trainers(preload)
        later = runs[1:]
        print(f"trainers from a fork server {label} the lazy modules: first step after "
              + ", ".join(f"{t:.2f} s" for t, _ in runs) + " (the first also starts the fork server); "
              f"resident memory {sum(r for _, r in later) / len(later) / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
