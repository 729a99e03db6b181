"""Impossible and huge configurations are refused with the reason, before anything is allocated.

The live-training resource guard (``explorer.guard.check_budget``) refuses d_model 4096 × 48 layers and a
10,000-token sequence; the Model Builder still counts such models (on the meta device) and shows them as too big.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from explorer.guard import check_budget
from explorer.host import GIB, HostProfile
from tests.app.conftest import app_at, assert_no_exception
from transformer_core import TransformerConfig, ViTConfig
from transformer_core.tasks import get_task
from transformer_core.training import TrainConfig, default_train_config

NORMAL_HOST = HostProfile(cores=2, memory_bytes=16 * GIB, small=False)
SMALL_HOST = HostProfile(cores=1, memory_bytes=GIB // 2, small=True)


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _huge(task_name: str) -> TransformerConfig:
    base = get_task(task_name).default_model_config()
    return replace(base, d_model=4096, n_heads=32, n_layers=48, d_ff=16384)


@pytest.mark.parametrize(("task_name", "host"), [("reverse", NORMAL_HOST), ("char_lm", SMALL_HOST)],
                         ids=["seq2seq-normal-host", "char_lm-small-host"])
def test_guard_refuses_a_4096_wide_48_layer_model(task_name: str, host: HostProfile) -> None:
    task = get_task(task_name)
    before = _rss_mib()
    verdict = check_budget(task, _huge(task_name), TrainConfig(), host=host)
    assert _rss_mib() - before < 200  # judged from shapes on the meta device: 10 billion weights were not made
    assert not verdict.ok
    assert verdict.reason.startswith("This run is too big") and "memory" in verdict.reason
    assert verdict.memory_bytes > verdict.memory_budget_bytes
    assert "smaller d_model" in verdict.suggestion


def test_guard_refuses_a_10000_token_sequence() -> None:
    task = get_task("char_lm")
    config = replace(task.default_model_config(), max_len=10_000)
    verdict = check_budget(task, config, TrainConfig(), host=NORMAL_HOST)
    assert not verdict.ok
    assert "too big" in verdict.reason and ("memory" in verdict.reason or "step would take" in verdict.reason)


def test_guard_counts_both_lanes_when_comparing() -> None:
    task = get_task("reverse")
    config = task.default_model_config()
    one = check_budget(task, config, TrainConfig(), host=NORMAL_HOST)
    two = check_budget(task, config, TrainConfig(), host=NORMAL_HOST, lanes=2)
    assert one.ok and two.memory_bytes == 2 * one.memory_bytes


def test_guard_accepts_the_default_run_of_every_task() -> None:
    """The run the Live Training page preselects (one thread per session) fits even a small host."""
    from transformer_core.tasks import TASK_NAMES

    for name in TASK_NAMES:
        task = get_task(name)
        verdict = check_budget(task, task.default_model_config(), default_train_config(task), host=SMALL_HOST,
                               threads=1)
        assert verdict.ok, f"{name}: {verdict.reason}"


@pytest.mark.parametrize(("build", "phrase"), [
    (lambda: TransformerConfig(d_model=4096, n_heads=7), "n_heads"),
    (lambda: TransformerConfig(d_model=0), "d_model"),
    (lambda: TransformerConfig(n_layers=-48), "n_layers"),
    (lambda: TransformerConfig(max_len=0), "max_len"),
    (lambda: TransformerConfig(dropout=1.5), "dropout"),
    (lambda: TransformerConfig(d_model=6, n_heads=2, positional="rope"), "even"),
    (lambda: ViTConfig(image_size=32, patch_size=5), "patch_size"),
])
def test_impossible_configurations_are_refused_with_the_reason(build, phrase: str) -> None:
    with pytest.raises(ValueError, match=phrase):
        build()


def test_model_builder_shows_a_huge_model_as_too_big() -> None:
    at = app_at("pages/builder.py")
    at.number_input(key="mb.layers").set_value(48)
    at.select_slider(key="mb.d_model").set_value(4096)
    at.run()
    at.number_input(key="mb.seq").set_value(10_000)
    at.run()
    assert_no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Parameters"].endswith(" G") and metrics["Training memory"].endswith("TB"), metrics
    assert any("far too big to build here" in i.value for i in at.info)
    refusals = [w.value for w in at.warning]
    assert any("Too big to run here" in w and "nothing was allocated" in w for w in refusals), refusals
    assert not [b for b in at.button if b.key == "mb.measure"], "a real step must not be offered"
