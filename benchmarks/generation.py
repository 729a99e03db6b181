"""Measure cached generation on the CPU: milliseconds per new token, ours against transformers' ``generate``.

Builds random-initialised GPT-2 small (124 M parameters) and a SmolLM2-135M-shaped Llama (134.5 M: 30 layers,
9 query heads sharing 3 key/value heads) with ``transformers`` (a development dependency), saves each as a model
folder, loads it with the pretrained loader (so both libraries run the same weights), and generates 64 new tokens
after a 16-token prompt, greedy, on 1 CPU thread: ``transformer_core.generation.generate`` (which also hands out
every layer's attention row at each step) against ``model.generate(do_sample=False)`` (timed through a streamer),
alternated, three runs each. A new token's time is the median gap between consecutive tokens over the runs (the
prompt's first token is printed apart); medians and ratios of alternated runs hold on a busy machine where single
totals do not. It also checks that both wrote the same tokens,
and compares the memory our key/value cache holds after the run with ``kv_cache_bytes``. Prints, for example::

    gpt2-small: 40.1 ms per new token (target <= 40 ms); transformers 41.3 ms: 0.97x (target <= 1.0x);
    prompt to first token 95 ms, transformers 99 ms; same 64 tokens: True; cache 5.55 MB, kv_cache_bytes
    5.55 MB (79 tokens)

Usage::

    python benchmarks/generation.py          # both models
    python benchmarks/generation.py --runs 5 # median of five
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

from transformer_core.generation import generate, kv_cache_bytes  # noqa: E402
from transformer_core.kv_cache import KVCache  # noqa: E402
from transformer_core.pretrained.loader import build_model, read_config  # noqa: E402

PROMPT, NEW = 16, 64
TARGET_MS, TARGET_RATIO = 40.0, 1.0  # GPT-2 small's target per token; ours against transformers
MODELS = ("gpt2-small", "smollm2-135m")


def _hf_model(name: str):
    import transformers

    torch.manual_seed(0)
    if name == MODELS[0]:
        config = transformers.GPT2Config()  # 12 layers, 768 wide, 50,257 tokens
        return transformers.GPT2LMHeadModel(config).eval()
    config = transformers.LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0})
    return transformers.LlamaForCausalLM(config).eval()


def _sharpen(model) -> None:
    # Larger random weights than the init, so greedy decoding does not repeat one token (which would hide a
    # disagreement between the two libraries).
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.1)


class _Stamps:
    """A transformers streamer that only notes when each token arrives (the prompt is put first)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def put(self, value: torch.Tensor) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


def _gaps(times: list[float]) -> tuple[float, list[float]]:
    """(seconds to the first new token, seconds between the following ones)."""
    return times[1] - times[0], [b - a for a, b in zip(times[1:], times[2:], strict=False)]


def _cache_bytes(model, prompt: torch.Tensor, tokens: list[int]) -> tuple[int, int]:
    """(bytes our cache holds after reading the prompt and the tokens fed back, kv_cache_bytes for as many)."""
    cache = KVCache(len(model.blocks), capacity=prompt.size(1) + len(tokens))
    with torch.no_grad():
        model(torch.cat([prompt, torch.tensor([tokens[:-1]])], dim=1), cache=cache)
    return cache.nbytes, kv_cache_bytes(model.config, cache.length)


def measure(name: str, runs: int) -> str:
    """One model's line of figures."""
    hf = _hf_model(name)
    _sharpen(hf)
    with tempfile.TemporaryDirectory() as tmp:
        hf.save_pretrained(tmp)
        model = build_model(Path(tmp), read_config(Path(tmp)))  # the loader without a tokenizer
    vocab = model.config.vocab_size
    prompt = torch.randint(0, vocab, (1, PROMPT), generator=torch.Generator().manual_seed(1))

    def ours() -> tuple[list[float], list[int]]:
        times, tokens = [time.perf_counter()], []
        for step in generate(model, prompt, NEW):
            times.append(time.perf_counter())
            tokens.append(step.token_id)
        return times, tokens

    def theirs() -> tuple[list[float], list[int]]:
        stamps = _Stamps()
        with torch.no_grad():
            out = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=NEW,
                              min_new_tokens=NEW, do_sample=False, eos_token_id=None, pad_token_id=0,
                              streamer=stamps)
        return stamps.times, out[0, PROMPT:].tolist()

    ours(), theirs()  # warm-up: first-call allocations and kernel choices
    firsts: dict[str, list[float]] = {"ours": [], "theirs": []}
    steps: dict[str, list[float]] = {"ours": [], "theirs": []}
    for _ in range(runs):  # alternated, so that both meet the same load
        for who, run in (("ours", ours), ("theirs", theirs)):
            times, tokens = run()
            first, gaps = _gaps(times)
            firsts[who].append(first)
            steps[who] += gaps
            if who == "ours":
                my_tokens = tokens
            else:
                ref_tokens = tokens
    ms, ref_ms = (1000 * statistics.median(steps[who]) for who in ("ours", "theirs"))
    first_ms, ref_first_ms = (1000 * statistics.median(firsts[who]) for who in ("ours", "theirs"))
    held, formula = _cache_bytes(model, prompt, my_tokens)
    parts = [
        f"{name}: {ms:.1f} ms per new token" + (f" (target <= {TARGET_MS:.0f} ms)" if name == MODELS[0] else ""),
        f"transformers {ref_ms:.1f} ms: {ms / ref_ms:.2f}x (target <= {TARGET_RATIO:.1f}x)",
        f"prompt to first token {first_ms:.0f} ms, transformers {ref_first_ms:.0f} ms",
        f"same {NEW} tokens: {my_tokens == ref_tokens}",
        f"cache {held / 2**20:.2f} MB, kv_cache_bytes {formula / 2**20:.2f} MB ({PROMPT + NEW - 1} tokens)",
    ]
    return "; ".join(parts)


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per library (the median is printed)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS, help="the models to time")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"1 thread, torch {torch.__version__}, {PROMPT}-token prompt, {NEW} new tokens, greedy; "
          f"load average {_load()} on {os.cpu_count()} cores")
    for name in args.models:
        print(measure(name, args.runs), flush=True)
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
