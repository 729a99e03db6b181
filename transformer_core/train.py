"""Train a built-in task from the command line.

Examples::

    python -m transformer_core.train --task reverse --steps 300 --seed 0
    python -m transformer_core.train --task char_lm --text-file notes.txt --save model.safetensors
    python -m transformer_core.train --task char_lm --temperature 0.5 --top-k 5
    python -m transformer_core.train --task sort --d-model 128 --n-layers 3 --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from .device import configure_threads
from .patterns import describe_best_head
from .tasks import get_task, registry, task_names
from .tasks.language import SAMPLE_TEMPERATURE
from .training import TrainConfig, Trainer, default_train_config

MODEL_FLAGS = ("d_model", "n_heads", "n_layers", "d_ff")
TRAIN_FLAGS = ("steps", "seed", "lr", "batch_size", "schedule", "warmup_steps", "eval_every", "device")
SAMPLE_CHARS = 300  # characters of text the trained char_lm writes at the end of the text output


def peak_memory_mb() -> float | None:
    """Peak resident memory of this process in MB, or None where the platform cannot tell."""
    try:  # Linux: the high-water mark of this program (getrusage would include a parent's before exec)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024**2 if sys.platform == "darwin" else peak / 1024


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(prog="python -m transformer_core.train", description=__doc__.split("\n")[0])
    p.add_argument("--task", choices=task_names(), default="reverse", help="which built-in task to train")
    p.add_argument("--steps", type=int, help="optimisation steps (default: the task's recommendation)")
    p.add_argument("--seed", type=int, default=0, help="seed of weights, batches and dropout")
    p.add_argument("--lr", type=float, help="peak learning rate of AdamW")
    p.add_argument("--batch-size", type=int, help="examples per step")
    p.add_argument("--schedule", choices=("constant", "cosine"), help="learning-rate schedule")
    p.add_argument("--warmup-steps", type=int, help="linear warm-up steps")
    p.add_argument("--eval-every", type=int, help="evaluate every this many steps")
    p.add_argument("--d-model", type=int, help="model width")
    p.add_argument("--n-heads", type=int, help="attention heads per layer")
    p.add_argument("--n-layers", type=int, help="layers (encoder and decoder each, for seq2seq)")
    p.add_argument("--d-ff", type=int, help="feed-forward hidden width")
    add_task_options(p)
    p.add_argument("--temperature", type=float, help=f"{_text_tasks()}: temperature of the final text sample "
                   f"(default {SAMPLE_TEMPERATURE}; 0 = greedy)")
    p.add_argument("--top-k", type=int,
                   help=f"{_text_tasks()}: sample only among the k likeliest characters (default: all)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or mps")
    p.add_argument("--threads", type=int, help="CPU threads (default: all cores, at most 4)")
    p.add_argument("--save", type=Path, help="write the trained model to this .safetensors file")
    p.add_argument("--json", action="store_true", help="print one JSON object with the results")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _text_tasks() -> str:
    """The tasks whose trained model writes text, e.g. ``"char_lm"``."""
    return ", ".join(n for n in task_names() if registry.entry(n).writes_text)


def _only(names: tuple[str, ...]) -> str:
    """``"the reverse, copy and sort tasks"``."""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"the {listed} task{'s' if len(names) > 1 else ''}"


def add_task_options(parser: argparse.ArgumentParser) -> None:
    """Add every registered task's own options, each help naming the tasks that understand it."""
    for flag, (option, names) in registry.cli_options().items():
        parser.add_argument(flag, type=option.type, help=f"{option.help} ({_only(names)})")


def _task_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``args.task`` given on the command line; ``ValueError`` for another task's option."""
    options: dict[str, Any] = {}
    for flag, (option, names) in registry.cli_options().items():
        value = getattr(args, option.dest, None)
        if value is None:
            continue
        if args.task not in names:
            raise ValueError(f"{flag} applies only to {_only(names)}.")
        task_option = next(o for o in registry.entry(args.task).cli_options if o.flag == flag)
        options[task_option.option] = task_option.read(value) if task_option.read else value
    return options


def make_trainer(args: argparse.Namespace) -> Trainer:
    """Build the task, model configuration and trainer the arguments describe (ValueError if invalid)."""
    task = get_task(args.task, **_task_options(args))
    model_overrides = {k: getattr(args, k) for k in MODEL_FLAGS if getattr(args, k) is not None}
    model_config = dataclasses.replace(task.default_model_config(), **model_overrides)
    train_overrides = {k: getattr(args, k) for k in TRAIN_FLAGS if getattr(args, k) is not None}
    train_config: TrainConfig = default_train_config(task, **train_overrides)
    return Trainer(task, model_config, train_config)


def save_problem(path: Path) -> str | None:
    """Why the trained model could not be written to ``path``, or None if it looks writable.

    Checked before training, so a typo in the folder name does not throw away a finished run.
    """
    folder = path.parent
    if path.is_dir():
        return f"--save {path} is a folder; give a file name such as {path / 'model.safetensors'}"
    if not folder.is_dir():
        return f"--save {path}: the folder {folder} does not exist; create it first or choose another one"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"--save {path}: this program is not allowed to write to the folder {folder}"
    return None


def sample_problem(args: argparse.Namespace) -> str | None:
    """Why --temperature / --top-k cannot be used as given, or None."""
    writes_text = registry.entry(args.task).writes_text
    if (args.temperature is not None or args.top_k is not None) and not writes_text:
        return f"--temperature and --top-k apply only to {_only(tuple(_text_tasks().split(', ')))}"
    if args.temperature is not None and not 0 <= args.temperature <= 10:
        return f"--temperature {args.temperature:g} must be between 0 (greedy) and 10"
    if args.top_k is not None and args.top_k < 1:
        return f"--top-k {args.top_k} must be at least 1"
    return None


def sample_text(trainer: Trainer, args: argparse.Namespace) -> str:
    """The trained character model's own writing, with the settings it was drawn with."""
    temperature = SAMPLE_TEMPERATURE if args.temperature is None else args.temperature
    text = trainer.task.generate_text(trainer.model, "", SAMPLE_CHARS, temperature=temperature, top_k=args.top_k,
                                      seed=args.seed)
    return f"sample (temperature {temperature:g}, top-k {args.top_k or 'all'}):\n{text}"


def save_model(trainer: Trainer, path: Path) -> str | None:
    """Write the trained model to ``path``; returns the reason when that fails (disk full, folder removed...)."""
    try:
        path.write_bytes(trainer.checkpoint())
    except OSError as exc:
        return f"could not save the model to {path}: {exc.strerror or exc}"
    return None


def progress_bar(trainer: Trainer, stream: TextIO, width: int = 30) -> None:
    """Redraw a one-line progress bar with the latest loss and metric."""
    total = trainer.config.steps
    filled = int(width * trainer.step / total)
    last = trainer.last_eval or {}
    metric = last.get(trainer.task.metric_name)
    shown = f" {trainer.task.metric_name} {metric:.4f}" if metric is not None else ""
    loss = trainer.history[-1]["loss"] if trainer.history else float("nan")
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {trainer.step}/{total} loss {loss:.4f}{shown}  ")
    stream.flush()


def run(trainer: Trainer, *, show_progress: bool) -> None:
    """Train to the end, redrawing the progress bar at most ten times a second."""
    last_draw = 0.0

    def on_step(_row: dict[str, float]) -> None:
        nonlocal last_draw
        now = time.perf_counter()
        if show_progress and (now - last_draw > 0.1 or trainer.done):
            progress_bar(trainer, sys.stderr)
            last_draw = now

    trainer.run(callback=on_step)
    if show_progress:
        sys.stderr.write("\n")


def report(trainer: Trainer, baseline_mb: float | None) -> dict[str, Any]:
    """The final results as plain data."""
    result = trainer.summary()
    peak = peak_memory_mb()
    result["memory_mb"] = round(peak - baseline_mb, 1) if peak is not None and baseline_mb is not None else None
    result["parameters"] = sum(p.numel() for p in trainer.model.parameters())
    result["model_config"] = dataclasses.asdict(trainer.model_config)
    last = trainer.snapshots[-1] if trainer.snapshots else None
    result["patterns"] = [describe_best_head(k, v) for k, v in last.scores.items()] if last else []
    return result


def _strict_json(value: Any) -> Any:
    """Replace NaN and infinities (e.g. the loss of a diverged run) by None, which strict JSON allows."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict_json(v) for v in value]
    return value


def _print_text(result: dict[str, Any]) -> None:
    metric = result["metric"]
    value = result.get(metric)
    shown = f"{value:.4f}" if value is not None else "n/a"
    print(f"{result['task']}: {result['steps']} steps in {result['seconds']:.1f} s "
          f"({result['steps_per_second']:.1f} steps/s), {result['status']}")
    print(f"final loss {result['loss']:.4f}, {metric} {shown} (target {result['target']})"
          + (f", target reached at step {result['target_step']}" if result["target_step"] else ""))
    for line in result["patterns"]:
        print(line)
    if result["stop_reason"]:
        print(result["stop_reason"])


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code.

    0 = finished, 1 = diverged, 2 = invalid arguments (argparse exits with 2 itself) or the model was not saved.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.save is not None and (problem := save_problem(args.save)):
        parser.error(problem)  # exits with code 2 before any training time is spent
    if problem := sample_problem(args):
        parser.error(problem)
    configure_threads(args.threads)
    baseline = peak_memory_mb()
    try:
        trainer = make_trainer(args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    notice = getattr(trainer.task, "notice", None)  # e.g. too few possible sequences to hold any out
    if notice and not args.quiet:
        print(f"note: {notice}", file=sys.stderr)
    run(trainer, show_progress=not args.quiet and sys.stderr.isatty())
    result = report(trainer, baseline)
    if notice:
        result["notice"] = notice
    save_error = save_model(trainer, args.save) if args.save is not None else None
    if args.save is not None:
        result["saved"] = None if save_error else str(args.save)
    if args.json:
        print(json.dumps(_strict_json(result), allow_nan=False))
    else:
        _print_text(result)
        if registry.entry(args.task).writes_text and trainer.status != "diverged":  # NaNs cannot be sampled
            print(sample_text(trainer, args))
    if save_error:  # after the results, so the run's numbers are still shown
        print(f"error: {save_error}", file=sys.stderr)
        return 2
    return 1 if trainer.status == "diverged" else 0


if __name__ == "__main__":
    sys.exit(main())
