"""Measure loading and first use of full-size pretrained models on transformer_core, on the CPU.

Builds random-initialised GPT-2 small (124 M parameters) and ViT-B/16 (86 M) with ``transformers`` (a
development dependency), saves them as model folders in a temporary directory, then, in a fresh process for
each, measures what a server pays for them: the time ``load_pretrained`` takes, the process memory it adds
compared with the weights' own size, and the first forward pass with attention weights (32 tokens; one 224²
picture), also as a ratio to the same forward pass in ``transformers`` (median of three, alternated), which
holds on a busy machine where the seconds do not. Last, the Attention Lab's response to a new sentence with the
GPT-2 as its Pretrained source: the page's script time in Streamlit's ``AppTest`` (as in ``page_latency.py``; the
browser's drawing comes on top), after the model was chosen (and loaded) once. Prints, for example::

    gpt2-small: 124,439,808 parameters, 475 MB of weights; load 0.61 s; memory +475 MB = 1.00x the weights
    (target <= 1.2x; 1.14x with the libraries' one-time 68 MB); first forward 0.09 s on 32 tokens
    (target <= 0.5 s, 0.18x; second 0.05 s; 0.80x the time transformers takes for it)
    Attention Lab with gpt2-small: a new sentence 0.69 s (median of 3, the last 12 tokens; target <= 1.0 s, 0.69x);
    switching to Pretrained the first time 1.85 s (loads the model); load average 2.6, 3.0, 3.9 on 2 cores

The libraries' one-time cost is what the first load of any model adds to a process (measured on a tiny model
first), so the per-model figure is what each further model costs a server.

Usage::

    python benchmarks/pretrained.py          # both models
    python benchmarks/pretrained.py --json   # also print the figures as JSON
    python benchmarks/pretrained.py --runs 5 # time five sentences on the Attention Lab

Linux only (reads /proc). Targets: memory after loading at most 1.2x the weights, first forward at most 0.5 s,
the page's response to a new sentence at most 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MEMORY_RATIO, TARGET_FORWARD_S = 1.2, 0.5
TARGET_PAGE_S = 1.0  # the Attention Lab's script time for a new sentence with a pretrained model

# Runs in a fresh process: load the folder, then time the first forward pass with attention weights.
MEASURE = """
import json, sys, time
import torch
from transformer_core.pretrained import load_pretrained

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

folder, tiny, kind = sys.argv[1:4]
before = rss()
load_pretrained(tiny)  # the first load of any model initialises the libraries once per process
warm = rss()
start = time.perf_counter()
pre = load_pretrained(folder)
load_s = time.perf_counter() - start
after = rss()
if kind == "text":
    x = torch.tensor([pre.tokenizer.encode("the cat sat on the mat " * 6).ids[:32]])
else:
    from PIL import Image
    x = pre.preprocess(Image.new("RGB", (320, 240), (120, 180, 60)))
def timed(model, *args, **kwargs):
    start = time.perf_counter()
    with torch.no_grad():
        out = model(*args, **kwargs)
    return time.perf_counter() - start, out

first, (logits, attention) = timed(pre.model.forward_with_attention, x)
second, _ = timed(pre.model.forward_with_attention, x)
# The same forward in transformers (eager attention, weights returned), alternated with ours: a ratio that does not
# depend on how busy the machine is.
import statistics, transformers
cls = transformers.GPT2LMHeadModel if kind == "text" else transformers.ViTForImageClassification
ref = cls.from_pretrained(folder, attn_implementation="eager").eval()
ratios = [timed(pre.model.forward_with_attention, x)[0] / timed(ref, x, output_attentions=True)[0] for _ in range(3)]
weights = sum(p.numel() * p.element_size() for p in pre.model.parameters())
print(json.dumps({"n_params": pre.n_params, "weights_bytes": weights, "load_s": load_s, "once_bytes": warm - before,
                  "memory_bytes": after - warm, "forward_s": first, "second_forward_s": second,
                  "vs_transformers": statistics.median(ratios),
                  "tokens": next(iter(attention.values()))[0].shape[-1]}))
"""


# Runs in a fresh process whose models folder holds the full-size GPT-2: the Attention Lab's script time (AppTest, as
# in page_latency.py) for a new sentence with the Pretrained source, after an untimed first load of the model.
PAGE = """
import json, os, statistics, sys, time
from streamlit.testing.v1 import AppTest

app, model, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
at = AppTest.from_file(app, default_timeout=600)
at.run()
at.switch_page("pages/attention.py").run()
start = time.perf_counter()
at.radio(key="attn.source").set_value("pretrained").run()  # the menu's first (and only) model: loaded here
first_s = time.perf_counter() - start
assert at.selectbox(key="attn.pretrained").value == model
sentences = ["a cat naps in the warm sun", "attention is all you need", "the quick brown fox jumps over",
             "my dog ran far away today", "we read the paper twice", "colourless green ideas sleep"]
times = []
for text in sentences[:runs]:
    start = time.perf_counter()
    at.text_input(key="attn.text").set_value(text).run()
    times.append(time.perf_counter() - start)
    if at.exception:
        raise SystemExit(at.exception[0].message)
tokens = [m.value.split("(")[1].split(")")[0] for m in at.markdown if m.value.startswith("**Tokens (")]
print(json.dumps({"first_s": first_s, "sentence_s": statistics.median(times), "runs": len(times),
                  "last_tokens": int(tokens[0]),
                  "load_average": os.getloadavg()}))
"""


def page_response(models: Path, model: str, runs: int = 3) -> dict:
    """The Attention Lab's script time for a new sentence with ``model`` from the models folder ``models``."""
    env = {**os.environ, "TE_MODELS_DIR": str(models), "HF_HUB_OFFLINE": "1", "HF_HOME": str(models.parent / "hf")}
    done = subprocess.run([sys.executable, "-c", PAGE, str(ROOT / "app.py"), model, str(runs)], cwd=ROOT,
                          capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe_page(r: dict) -> str:
    """One line: the page's response against its target, and the machine's load while it was measured."""
    load = ", ".join(f"{x:.1f}" for x in r["load_average"])
    return (f"Attention Lab with gpt2-small: a new sentence {r['sentence_s']:.2f} s (median of {r['runs']}, the last "
            f"{r['last_tokens']} tokens; target <= {TARGET_PAGE_S} s, {r['sentence_s'] / TARGET_PAGE_S:.2f}x); "
            f"switching to Pretrained the first time {r['first_s']:.2f} s (loads the model); load average {load} on "
            f"{os.cpu_count()} cores")


def _save_gpt2(folder: Path) -> None:
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(folder)  # 12 layers, 768 wide
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(["the cat sat on the mat"] * 8,
                            trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"], show_progress=False))
    tok.save(str(folder / "tokenizer.json"))


def _save_vit(folder: Path) -> None:
    import transformers

    labels = {i: f"class {i}" for i in range(1000)}
    config = transformers.ViTConfig(id2label=labels, label2id={v: k for k, v in labels.items()})  # ViT-B/16, 224²
    transformers.ViTForImageClassification(config).save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(
        {"do_resize": True, "size": {"height": 224, "width": 224}, "resample": 2, "do_rescale": True,
         "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5] * 3, "image_std": [0.5] * 3}))


def _save_tiny(folder: Path) -> None:
    import transformers

    config = transformers.ViTConfig(num_hidden_layers=1, num_attention_heads=1, hidden_size=8, intermediate_size=8,
                                    image_size=16, patch_size=8)
    transformers.ViTForImageClassification(config).save_pretrained(folder)


def measure(folder: Path, tiny: Path, kind: str) -> dict:
    """Load ``folder`` in a fresh process (after ``tiny``, to separate the one-time cost) and return its figures."""
    done = subprocess.run([sys.executable, "-c", MEASURE, str(folder), str(tiny), kind], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe(name: str, r: dict, unit: str) -> str:
    """One line of figures and ratios against the targets."""
    mb = 2**20
    ratio = r["memory_bytes"] / r["weights_bytes"]
    total = (r["memory_bytes"] + r["once_bytes"]) / r["weights_bytes"]
    return (f"{name}: {r['n_params']:,} parameters, {r['weights_bytes'] / mb:,.0f} MB of weights; "
            f"load {r['load_s']:.2f} s; memory +{r['memory_bytes'] / mb:,.0f} MB = {ratio:.2f}x the weights "
            f"(target <= {TARGET_MEMORY_RATIO}x; {total:.2f}x with the libraries' one-time "
            f"{r['once_bytes'] / mb:,.0f} MB); first forward {r['forward_s']:.2f} s on {r['tokens']} {unit} "
            f"(target <= {TARGET_FORWARD_S} s, {r['forward_s'] / TARGET_FORWARD_S:.2f}x; second "
            f"{r['second_forward_s']:.2f} s; {r['vs_transformers']:.2f}x the time transformers takes for it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--runs", type=int, default=3, help="sentences timed on the Attention Lab (median)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny"
        _save_tiny(tiny)
        for name, save, kind, unit in (("gpt2-small", _save_gpt2, "text", "tokens"),
                                       ("vit-b16", _save_vit, "image", "tokens (CLS + 196 patches)")):
            folder = Path(tmp) / name
            save(folder)
            results[name] = measure(folder, tiny, kind)
            print(describe(name, results[name], unit), flush=True)
        pages = Path(tmp) / "page-models"
        pages.mkdir()
        (pages / "gpt2-small").symlink_to(Path(tmp) / "gpt2-small")
        results["attention-lab"] = page_response(pages, "gpt2-small", args.runs)
        print(describe_page(results["attention-lab"]), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
