"""Measure the interpretability methods on a GPT-2-small-shaped model (random weights) and a 10-token text.

1. Gradient × input (one forward and backward pass).
2. Integrated gradients, 32 points along the path, batched.
3. Residual patching: 12 layers × 10 positions (12 batched passes of 10 copies).
4. Head patching: 12 layers × 12 heads (12 batched passes of 12 copies).
5. Direct logit attribution (one pass and the arithmetic).
6. What the probe points cost a plain forward pass when no method is active: the forward as it is, against the
   same forward with the probe calls replaced by nothing (interleaved rounds, medians).

Prints each figure beside its target, for example::

    gradient x input: 0.21 s, 0.20 s of CPU (median of 3; target <= 1 s, 0.21x)
    ...
    1 thread; load average 1.2, 1.4, 1.6 on 2 cores

Usage::

    python benchmarks/interpret.py            # one CPU thread, as the targets are stated
    python benchmarks/interpret.py --threads 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer_core import bert, blocks, feed_forward, models, vit  # noqa: E402
from transformer_core.attribution import token_attributions  # noqa: E402
from transformer_core.config import TransformerConfig  # noqa: E402
from transformer_core.patching import (  # noqa: E402
    direct_logit_attribution,
    logit_difference,
    patch_heads,
    patch_residual,
)
from transformer_core.pretrained.gpt2 import GPT2LM  # noqa: E402

GPT2_SMALL = dict(vocab_size=50257, max_len=1024, d_model=768, n_heads=12, n_layers=12, d_ff=3072, norm_position="pre",
                  positional="learned", activation="gelu_tanh", tie_weights=True, embed_scale=False)
TARGETS_S = {"gradient x input": 1.0, "integrated gradients (32 points)": 10.0,
             "residual patching (12 layers x 10 positions)": 15.0, "head patching (12 x 12 heads)": 15.0,
             "direct logit attribution": 0.5}
TEXT = [464, 1893, 286, 4881, 318, 6342, 13, 383, 3139, 286]  # 10 token ids
CORRUPT = [464, 1893, 286, 4486, 318, 6342, 13, 383, 3139, 286]  # one token changed


def _timed(fn: Callable[[], object], runs: int) -> float:
    return _timed_cpu(fn, runs)[0]


def _timed_cpu(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall-clock seconds and median CPU seconds of this process (the latter moves less with the load of a
    shared machine: time spent waiting for a core is not counted)."""
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


@contextmanager
def _no_probes():
    """The models with their probe calls replaced by the identity (what the forward cost before they existed)."""
    modules = (bert, blocks, feed_forward, models, vit)
    saved = [m.probe for m in modules]
    for m in modules:
        m.probe = lambda module, point, x: x
    try:
        yield
    finally:
        for m, fn in zip(modules, saved, strict=True):
            m.probe = fn


def _probe_overhead(model: torch.nn.Module, rounds: int = 7) -> float:
    ids = torch.tensor(TEXT)[None]
    with_probes, without = [], []
    with torch.no_grad():
        model(ids)
        for _ in range(rounds):
            with_probes.append(_timed(lambda: model(ids), 1))
            with _no_probes():
                without.append(_timed(lambda: model(ids), 1))
    return statistics.median(with_probes) / statistics.median(without)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = GPT2LM(TransformerConfig(**GPT2_SMALL)).eval().requires_grad_(False)
    metric = logit_difference(6342, 4881)
    runs = {
        "gradient x input": (lambda: token_attributions(model, TEXT, 6342), 3),
        "integrated gradients (32 points)": (
            lambda: token_attributions(model, TEXT, 6342, method="integrated_gradients", steps=32), 1),
        "residual patching (12 layers x 10 positions)": (lambda: patch_residual(model, TEXT, CORRUPT, metric), 1),
        "head patching (12 x 12 heads)": (lambda: patch_heads(model, TEXT, CORRUPT, metric), 1),
        "direct logit attribution": (lambda: direct_logit_attribution(model, TEXT, 6342, 4881), 3),
    }
    for name, (fn, n) in runs.items():
        fn()  # warm-up: first calls allocate
        seconds, cpu = _timed_cpu(fn, n)
        target = TARGETS_S[name]
        print(f"{name}: {seconds:.2f} s, {cpu:.2f} s of CPU ({'median of ' + str(n) if n > 1 else 'one run'}; "
              f"target <= {target:g} s, {seconds / target:.2f}x)")
    print(f"probe points in a plain forward pass (none active): {_probe_overhead(model):.3f}x the forward without "
          "them")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.threads} thread{'s' if args.threads > 1 else ''}; load average {load} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
