"""The resource guard: estimated memory, step time and checkpoint size of a training run, against this host's limits.

:func:`check_budget` refuses a run before anything is built (every estimate comes from shapes on the meta device,
see :mod:`transformer_core.sizing`) and suggests what to change; :func:`model_limit_problems` checks a described
model (for example an uploaded checkpoint's) against the sizes the host offers; :func:`run_problems` checks a whole
run that arrived from elsewhere (a trainer's job) against every bound a page's controls keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from explorer.host import HostProfile, Limits, host_profile, limits_for
from explorer.i18n import N_, _, num
from explorer.i18n.message import Message, Num
from transformer_core.config import ViTConfig
from transformer_core.tasks.base import ModelConfig, Task
from transformer_core.training import TrainConfig

if TYPE_CHECKING:  # sizing builds models; imported where used to keep this module's import light
    from transformer_core.sizing import StepEstimate

CPU_FLOPS_PER_THREAD = 8e9  # sustained FLOP/s of one CPU thread on these small matrices (measured ~18e9, halved)
GPU_FLOPS = 2e12  # sustained FLOP/s of a GPU on these small matrices (kernel launches dominate)
STEP_OVERHEAD_S = 0.004  # fixed cost of a step: Python, optimiser bookkeeping, batch generation
SUGGESTED_BATCHES = (128, 64, 32, 16, 8)  # batch sizes the guard may suggest, largest first
FF_PER_WIDTH = 4  # the widest feed-forward layer offered is this many times the widest model


@dataclass(frozen=True)
class GuardResult:
    """The resource guard's verdict on a run before it starts.

    Its words are kept as :class:`~explorer.i18n.message.Message` values (a verdict is remembered across sessions);
    :attr:`reason` and :attr:`suggestion` say them in the language active where they are read.
    """

    ok: bool  # whether the run fits the budget
    problem: Message  # what exceeds the budget, in English words ("" when ok)
    fix: Message  # what to change so that it fits, in English words ("" when ok)
    memory_bytes: int  # estimated training memory of all lanes together
    step_seconds: float  # estimated seconds of one step of all lanes together
    memory_budget_bytes: int  # the budget it was compared with
    step_budget_s: float  # the budget it was compared with
    checkpoint_bytes: int  # weights one lane's checkpoint would hold (compared with Limits.max_checkpoint_bytes)

    @property
    def reason(self) -> str:
        """What exceeds the budget, in the active language ("" when ok)."""
        return self.problem.text()

    @property
    def suggestion(self) -> str:
        """What to change so that it fits, in the active language ("" when ok)."""
        return self.fix.text()


def estimate_step_seconds(flops_per_step: float, device: str, threads: int) -> float:
    """Rough wall-clock seconds of one training step with ``flops_per_step`` FLOPs on ``device``."""
    rate = GPU_FLOPS if device in ("cuda", "mps") else CPU_FLOPS_PER_THREAD * max(1, threads)
    return STEP_OVERHEAD_S + flops_per_step / rate


def check_budget(
    task: Task,
    model_config: ModelConfig,
    train_config: TrainConfig,
    *,
    host: HostProfile | None = None,
    lanes: int = 1,
    threads: int | None = None,
    process_bytes: int = 0,
) -> GuardResult:
    """Refuse runs whose estimated memory or step time exceed this host's budget (tighter on small hosts).

    Also refused: a model whose checkpoint would be larger than ``Limits.max_checkpoint_bytes``, the size the
    app's upload limit can take back.

    ``lanes`` counts the configurations trained side by side (2 when comparing); each is assumed as large as
    this one. ``threads`` is the number of torch threads the run will train with (``None``: the host's
    ``limits.threads``); a page that trains each session on one thread must say so, or the step time is
    underestimated on hosts with more cores. The estimate comes from
    :func:`transformer_core.sizing.estimate_training_step`. ``process_bytes`` is the memory of the process the run
    trains in besides its model (a trainer process's own: ``TrainingPlace.overhead_bytes``), counted once.
    """
    limits = limits_for(host if host is not None else host_profile())
    threads = limits.threads if threads is None else threads
    estimate = _estimate(task, model_config, train_config.batch_size)
    batch, device = train_config.batch_size, train_config.device
    memory, seconds = _cost(estimate, batch, batch, device, lanes, threads)
    memory += process_bytes
    saved = checkpoint_bytes(task, model_config, estimate)
    problems, lanes_matter = [], False  # whether the problems grow with the number of lanes (Compare)
    if saved > limits.max_checkpoint_bytes:
        problems.append(
            Message(
                N_("its checkpoint would take about {size}, more than the {limit} that can be loaded again here"),
                {"size": _mib(saved), "limit": _mib(limits.max_checkpoint_bytes)},
            )
        )
    if memory > limits.memory_budget_bytes:
        lanes_matter = True
        problems.append(
            Message(
                N_(
                    "it needs about {memory} of memory for training, more than the {limit} this "
                    "server allows per visitor"
                ),
                {"memory": _mib(memory), "limit": _mib(limits.memory_budget_bytes)},
            )
        )
    if seconds > limits.step_time_budget_s:
        lanes_matter = True
        problems.append(
            Message(
                N_("one step would take about {seconds} s, longer than the {limit} s allowed"),
                {"seconds": Num(float(f"{seconds:.2g}")), "limit": Num(limits.step_time_budget_s)},
            )
        )
    fixes = []
    if problems:
        for smaller in SUGGESTED_BATCHES if saved <= limits.max_checkpoint_bytes else ():
            if smaller < batch:
                m, t = _cost(estimate, batch, smaller, device, lanes, threads)
                if m + process_bytes <= limits.memory_budget_bytes and t <= limits.step_time_budget_s:
                    fixes.append(Message(N_("a batch size of {batch}"), {"batch": smaller}))
                    break
        fixes.append(Message(N_("a smaller d_model or d_ff, or fewer layers")))
        if lanes > 1 and lanes_matter:  # each checkpoint holds one lane: Compare does not change its size
            fixes.append(Message(N_("turning Compare off")))
    return GuardResult(
        ok=not problems,
        problem=_listed(TOO_BIG, problems),
        fix=_listed(TRY, fixes),
        memory_bytes=memory,
        step_seconds=seconds,
        memory_budget_bytes=limits.memory_budget_bytes,
        step_budget_s=limits.step_time_budget_s,
        checkpoint_bytes=saved,
    )


def checkpoint_bytes(task: Task, model_config: ModelConfig, estimate: StepEstimate | None = None) -> int:
    """Bytes of the weights a checkpoint of ``task``'s model holds (tied weights are saved once per name).

    Counted on the meta device; a configuration the task refuses counts its parameters from ``estimate``.
    """
    try:
        with torch.device("meta"):
            model = task.build_model(model_config)
    except ValueError:
        return estimate.weights_bytes if estimate is not None else 0
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def model_limit_problems(config: ModelConfig, limits: Limits) -> list[str]:
    """What in ``config`` is larger than the models this host offers, in words; empty when it fits.

    For a model described elsewhere, e.g. an uploaded checkpoint, before it is built.
    """
    problems = []
    if config.d_model > limits.max_d_model:
        problems.append(
            _("d_model {d_model} (this server trains up to {limit})").format(
                d_model=num(config.d_model), limit=limits.max_d_model
            )
        )
    layers = max(config.n_layers, getattr(config, "n_decoder_layers", None) or 0)
    if layers > limits.max_layers:
        problems.append(_("{layers} layers (up to {limit})").format(layers=num(layers), limit=limits.max_layers))
    if config.d_ff > FF_PER_WIDTH * limits.max_d_model:
        problems.append(
            _("d_ff {d_ff} (up to {limit})").format(d_ff=num(config.d_ff), limit=FF_PER_WIDTH * limits.max_d_model)
        )
    return problems


MAX_LANES = 2  # configurations one run trains side by side (Compare)


def run_problems(
    task: Task,
    specs: Sequence[Any],
    *,
    host: HostProfile | None = None,
    threads: int | None = None,
    process_bytes: int = 0,
) -> list[str]:
    """What in a run described elsewhere (``specs``: its lanes, each with ``model_config`` and ``train_config``)
    goes beyond this host's limits, in words; empty when the run fits. The same bounds as the page's controls
    (model sizes, steps, batch) and the same budget as :func:`check_budget`."""
    limits = limits_for(host if host is not None else host_profile())
    if not 1 <= len(specs) <= MAX_LANES:
        return [_("{count} configurations (a run trains 1 or {lanes})").format(count=len(specs), lanes=MAX_LANES)]
    problems = []
    for spec in specs:
        problems += model_limit_problems(spec.model_config, limits)
        train = spec.train_config
        if train.steps > limits.max_steps:
            problems.append(
                _("{steps} steps (up to {limit})").format(steps=num(train.steps), limit=num(limits.max_steps))
            )
        if train.batch_size > limits.max_batch:
            problems.append(
                _("a batch of {batch} (up to {limit})").format(batch=num(train.batch_size), limit=limits.max_batch)
            )
    if problems:  # sizes out of bounds: not even estimated
        return problems
    for spec in specs:
        verdict = check_budget(
            task,
            spec.model_config,
            spec.train_config,
            host=host,
            lanes=len(specs),
            threads=threads,
            process_bytes=process_bytes,
        )
        if not verdict.ok:
            problems.append(verdict.reason)
    return problems


def _estimate(task: Task, model_config: ModelConfig, batch_size: int) -> StepEstimate:
    """The sizing estimate of one step of ``task`` with this model at ``batch_size``."""
    from transformer_core.families import family
    from transformer_core.sizing import estimate_training_step

    length = None if isinstance(model_config, ViTConfig) else model_config.max_len
    return estimate_training_step(model_config, kind=family(task.family).kind, batch_size=batch_size, seq_len=length)


def _cost(
    estimate: StepEstimate, estimated_batch: int, batch_size: int, device: str, lanes: int, threads: int
) -> tuple[int, float]:
    """(memory in bytes, seconds) of one step of ``lanes`` such configurations at ``batch_size``.

    ``estimate`` was made at ``estimated_batch``. Activations and FLOPs grow linearly with the batch while
    weights, gradients and AdamW states do not, so other batch sizes are scaled from that one estimate
    instead of building the model again for each.
    """
    ratio = batch_size / estimated_batch
    memory = estimate.total_bytes - estimate.activations_bytes + round(estimate.activations_bytes * ratio)
    seconds = estimate_step_seconds(estimate.flops_per_step * ratio, device, threads)
    return lanes * memory, lanes * seconds


def _mib(n: int) -> Message:
    return Message(N_("{size} MB"), {"size": Num(n / 2**20, 0)})


# The verdict's sentences by how many parts they join (at most three problems, three fixes).
TOO_BIG = (
    N_("This run is too big: {first}."),
    N_("This run is too big: {first} and {second}."),
    N_("This run is too big: {first} and {second} and {third}."),
)
TRY = (N_("Try {first}."), N_("Try {first}, or {second}."), N_("Try {first}, or {second}, or {third}."))


def _listed(sentences: tuple[str, ...], parts: list[Message]) -> Message:
    """One of ``sentences`` (by the number of ``parts``) holding the parts; empty when there are none."""
    if not parts:
        return Message("")
    names = ("first", "second", "third")
    return Message(sentences[len(parts) - 1], dict(zip(names, parts, strict=False)))
