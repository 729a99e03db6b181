"""Measure the interventions of ``transformer_core.interventions`` on the CPU, all in one run.

1. The full head-importance map of the default reverse model (encoder–decoder, 2 layers, 4 heads, three stacks:
   24 heads), scored with the task's held-out loss (``task.evaluate``, 512 sequences): 25 evaluations.
2. The logit lens of a GPT-2-sized model (124 M parameters, random weights) over 32 tokens: 12 layers × 32
   positions through the final norm and the 50,257-token unembedding.
3. What the ablation path costs when nothing is switched off: the forward pass of both models as they are,
   against the same forward with the ablation check taken out of ``MultiHeadAttention.forward`` (interleaved
   rounds, medians), and, for reference, the forward with one head switched off.
4. Whether batching would help the map: the 25 forward passes over the held-out batch in one pass of 25 copies,
   against 25 passes one by one.

Prints, for example::

    head importance, reverse (24 heads, 25 evaluations): 1.21 s (median of 3; target <= 2 s, 0.61x; 1.01x the
    time of its 25 evaluations alone)
    logit lens, GPT-2 size (124,439,808 parameters, 32 tokens): 0.42 s (median of 3; target <= 1 s, 0.42x)
    ablation check when nothing is ablated: reverse forward 1.004x, GPT-2 forward 1.001x; one head off 1.01x
    the 25 forward passes of the map batched into one pass: 1.08x the time of running them one by one
    2 threads; load average 1.2, 1.4, 1.6 on 2 cores

Usage::

    python benchmarks/interventions.py          # the figures
    python benchmarks/interventions.py --json   # also as JSON
    python benchmarks/interventions.py --threads 1
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer_core import attention  # noqa: E402
from transformer_core.config import TransformerConfig  # noqa: E402
from transformer_core.interventions import ablate_heads, all_heads, head_importance, logit_lens  # noqa: E402
from transformer_core.pretrained.gpt2 import GPT2LM  # noqa: E402
from transformer_core.tasks import get_task  # noqa: E402

TARGET_IMPORTANCE_S, TARGET_LENS_S = 2.0, 1.0
GPT2_SMALL = dict(vocab_size=50257, max_len=1024, d_model=768, n_heads=12, n_layers=12, d_ff=3072, norm_position="pre",
                  positional="learned", activation="gelu_tanh", tie_weights=True, embed_scale=False)


def _timed(fn: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextmanager
def _without_ablation_check():
    """``MultiHeadAttention.forward`` with the line that consults the ablations removed."""
    source = textwrap.dedent(inspect.getsource(attention.MultiHeadAttention.forward))
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if "edit_heads(self, out)" in line)
    namespace = dict(vars(attention))
    exec("\n".join(lines[:start] + lines[start + 1:]), namespace)  # noqa: S102
    original = attention.MultiHeadAttention.forward
    attention.MultiHeadAttention.forward = namespace["forward"]
    try:
        yield
    finally:
        attention.MultiHeadAttention.forward = original


def _check_cost(forward: Callable[[], object], rounds: int = 21) -> float:
    """Median ratio of the forward with the ablation check to the forward without it, in interleaved rounds."""
    ratios = []
    for i in range(rounds):
        if i % 2:  # alternate which goes first, so that neither always runs on a warmer cache
            with_check = _timed(forward, runs=1)
        with _without_ablation_check():
            without = _timed(forward, runs=1)
        if not i % 2:
            with_check = _timed(forward, runs=1)
        ratios.append(with_check / without)
    return statistics.median(ratios)


def measure() -> dict:
    task = get_task("reverse")
    reverse = task.build_model(task.default_model_config()).eval()
    batch = task.sample_batch(task.eval_size, torch.Generator().manual_seed(0))

    def score(m):
        return task.evaluate(m, seed=0)["loss"]

    head_importance(reverse, score, heads=all_heads(reverse)[:1])  # warm up
    evaluations = len(all_heads(reverse)) + 1
    maps, loops = [], []
    for _ in range(3):  # interleaved with as many plain evaluations, so both see the same load on the machine
        maps.append(_timed(lambda: head_importance(reverse, score), runs=1))
        loops.append(_timed(lambda: [score(reverse) for _ in range(evaluations)], runs=1))
    importance_s = statistics.median(maps)

    torch.manual_seed(0)
    gpt2 = GPT2LM(TransformerConfig(**GPT2_SMALL)).eval()
    tokens = torch.randint(0, 50257, (32,), generator=torch.Generator().manual_seed(1))
    logit_lens(gpt2, tokens)  # warm up
    lens_s = _timed(lambda: logit_lens(gpt2, tokens))

    def reverse_forward():
        with torch.no_grad():
            reverse(batch["src"], batch["tgt_in"])

    def gpt2_forward():
        with torch.no_grad():
            gpt2(tokens[None])

    def one_head_off():
        with ablate_heads(reverse, [("cross", 1, 0)]):
            reverse_forward()

    off_ratios = [_timed(one_head_off, runs=1) / _timed(reverse_forward, runs=1) for _ in range(15)]
    copies = {k: v.repeat(len(all_heads(reverse)) + 1, 1) for k, v in batch.items()}

    def batched_forward():  # what batching the ablations would run: every evaluation in one pass
        with torch.no_grad():
            reverse(copies["src"], copies["tgt_in"])

    def separate_forwards():
        for _ in range(len(all_heads(reverse)) + 1):
            reverse_forward()

    batched = [_timed(batched_forward, runs=1) / _timed(separate_forwards, runs=1) for _ in range(3)]
    return {
        "importance_s": importance_s, "heads": len(all_heads(reverse)), "lens_s": lens_s,
        "importance_per_score": statistics.median(m / loop for m, loop in zip(maps, loops, strict=True)),
        "gpt2_params": sum(p.numel() for p in gpt2.parameters()),
        "check_reverse": _check_cost(reverse_forward), "check_gpt2": _check_cost(gpt2_forward, rounds=11),
        "one_head_off": statistics.median(off_ratios), "batched_ratio": statistics.median(batched),
        "threads": torch.get_num_threads(), "load": os.getloadavg(), "cores": os.cpu_count(),
    }


def describe(r: dict) -> str:
    load = ", ".join(f"{x:.1f}" for x in r["load"])
    return "\n".join([
        f"head importance, reverse ({r['heads']} heads, {r['heads'] + 1} evaluations): {r['importance_s']:.2f} s "
        f"(median of 3; target <= {TARGET_IMPORTANCE_S:g} s, {r['importance_s'] / TARGET_IMPORTANCE_S:.2f}x; "
        f"{r['importance_per_score']:.2f}x the time of its {r['heads'] + 1} evaluations alone)",
        f"logit lens, GPT-2 size ({r['gpt2_params']:,} parameters, 32 tokens): {r['lens_s']:.2f} s "
        f"(median of 3; target <= {TARGET_LENS_S:g} s, {r['lens_s'] / TARGET_LENS_S:.2f}x)",
        f"ablation check when nothing is ablated: reverse forward {r['check_reverse']:.3f}x, GPT-2 forward "
        f"{r['check_gpt2']:.3f}x; one head off {r['one_head_off']:.2f}x",
        f"the {r['heads'] + 1} forward passes of the map batched into one pass: {r['batched_ratio']:.2f}x the time of "
        "running them one by one",
        f"{r['threads']} threads; load average {load} on {r['cores']} cores",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results = measure()
    print(describe(results))
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
