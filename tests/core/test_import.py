"""Package hygiene (no UI import, no output at import time) and device choice."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import transformer_core
from tests.conftest import REPO_ROOT
from transformer_core import available_devices, configure_threads, pick_device

IMPORT_EVERYTHING = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    import transformer_core
    names = [m.name for m in pkgutil.walk_packages(transformer_core.__path__, "transformer_core.")]
    for name in names:
        importlib.import_module(name)
    ui = sorted(m for m in ("streamlit", "plotly", "altair") if m in sys.modules)
    sys.stderr.write(f"{len(names)} {','.join(ui) or '-'}")
    """
)


def test_importing_every_module_pulls_in_no_ui_library_and_prints_nothing():
    result = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    count, ui_modules = result.stderr.split()
    assert int(count) >= 10  # config, masks, attention, ..., sizing, presets, tasks
    assert ui_modules == "-"
    assert result.stdout == ""


LIGHT_IMPORT = textwrap.dedent(
    """
    import sys
    import transformer_core, transformer_core.training, transformer_core.train, transformer_core.bench
    import transformer_core.tasks.sequences, transformer_core.tasks.language, explorer.render.timelapse
    sys.stderr.write(",".join(sorted(m for m in ("pandas", "PIL", "matplotlib") if m in sys.modules)) or "-")
    """
)


def test_training_and_the_command_lines_need_neither_pandas_nor_pillow():
    result = subprocess.run([sys.executable, "-c", LIGHT_IMPORT], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "-"


def test_public_api_is_exported():
    for name in transformer_core.__all__:
        assert hasattr(transformer_core, name), name
    for name in ("count_parameters", "parameter_breakdown", "estimate_training_step", "build_preset", "PRESETS"):
        assert name in transformer_core.__all__


def test_available_devices_end_with_cpu():
    devices = available_devices()
    assert devices[-1] == "cpu" and len(set(devices)) == len(devices)
    assert pick_device().type == devices[0]
    assert pick_device("cpu") == torch.device("cpu")


def test_pick_device_falls_back_to_cpu_without_accelerators(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    if getattr(torch.backends, "mps", None) is not None:
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert available_devices() == ["cpu"]
    assert pick_device() == torch.device("cpu")
    assert pick_device("cuda") == torch.device("cpu")  # unavailable preference: best available instead


@pytest.mark.parametrize("cap", [1, 2])
def test_configure_threads_respects_the_cap(cap):
    before = torch.get_num_threads()
    try:
        threads = configure_threads(cap)
        assert 1 <= threads <= cap and torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
