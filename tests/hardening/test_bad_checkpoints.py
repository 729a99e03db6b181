"""Bad checkpoints: pickles are never executed, damaged or mismatched files get a clear CheckpointError.

Checked through ``transformer_core.checkpoint.load_checkpoint`` and through the Live Training page's uploader,
which judges a file's described model from its header before anything is built. A checkpoint of another task
switches the page to that task, and the notice says so.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from tests.app.conftest import app_at, assert_no_exception
from tests.hardening.test_bad_configs import _rss_mib
from tests.safetensors_header import read_metadata, rewrite_metadata
from transformer_core.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer_core.models import CausalLM, Seq2SeqTransformer
from transformer_core.tasks import get_task


class _Payload:
    """Unpickling this object creates ``marker`` — what a malicious checkpoint would do, harmlessly."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _pickles(marker: Path) -> dict[str, bytes]:
    """The payload in every pickle protocol, and inside a torch.save zip (what a .pt/.pth file is)."""
    out = {f"protocol{p}": pickle.dumps(_Payload(marker), protocol=p) for p in range(pickle.HIGHEST_PROTOCOL + 1)}
    buf = io.BytesIO()
    torch.save({"state_dict": _Payload(marker)}, buf)
    out["torch_save_zip"] = buf.getvalue()
    return out


@pytest.fixture(scope="module")
def reverse_checkpoint() -> bytes:
    task = get_task("reverse")
    config = task.default_model_config()
    return save_checkpoint(task.build_model(config), config, task_name="reverse")


def test_the_payload_is_live(tmp_path: Path) -> None:
    """Unpickling the test payload really runs code — so its absence below proves that nothing was unpickled."""
    marker = tmp_path / "ran"
    pickle.loads(_pickles(marker)["protocol4"])
    assert marker.exists()


def test_pickles_are_refused_and_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "code-ran"
    for name, data in _pickles(marker).items():
        with pytest.raises(CheckpointError) as info:
            load_checkpoint(data)
        assert "pickle" in str(info.value) or "not a safetensors file" in str(info.value), name
        assert not marker.exists(), f"{name}: loading the file ran code"


@pytest.mark.parametrize(("name", "mutate", "phrase"), [
    ("empty", lambda d: b"", "too short"),
    ("truncated", lambda d: d[: len(d) // 2], "could not be read"),
    ("header_garbage", lambda d: d[:8] + b"\xff" * (len(d) - 8), "not readable"),
    ("random_bytes", lambda d: bytes(range(256)) * 8, "not a safetensors file"),
    ("zip", lambda d: _zip_bytes(), "pickle"),
])
def test_damaged_file_gets_a_clear_message(reverse_checkpoint: bytes, name, mutate, phrase) -> None:
    with pytest.raises(CheckpointError, match=phrase):
        load_checkpoint(mutate(reverse_checkpoint))


def _zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("archive/data.pkl", b"not really")
    return buf.getvalue()


def test_plain_safetensors_without_a_description_is_refused() -> None:
    data = save_tensors({"weight": torch.zeros(2, 2)})
    with pytest.raises(CheckpointError, match="not saved by Transformer Explorer"):
        load_checkpoint(data)


def test_weights_of_the_wrong_shape_are_named(reverse_checkpoint: bytes) -> None:
    task = get_task("reverse")
    config = task.default_model_config()
    wider = replace(config, d_model=config.d_model * 2, d_ff=config.d_ff * 2)
    data = rewrite_metadata(reverse_checkpoint, config=json.dumps(asdict(wider)))
    with pytest.raises(CheckpointError, match="wrong shapes") as info:
        load_checkpoint(data)
    v = config.vocab_size
    assert f"src_embed.tokens.weight ({v}, {config.d_model}) (expected ({v}, {wider.d_model}))" in str(info.value)


def test_missing_weights_are_named(reverse_checkpoint: bytes) -> None:
    loaded = load_checkpoint(reverse_checkpoint)
    state = {k: v for k, v in loaded.model.state_dict().items() if not k.startswith("encoder.0.")}
    metadata = read_metadata(reverse_checkpoint)
    with pytest.raises(CheckpointError, match="missing weights"):
        load_checkpoint(save_tensors({k: v.contiguous() for k, v in state.items()}, metadata=metadata))


def test_damaged_description_is_refused(reverse_checkpoint: bytes) -> None:
    for changes, phrase in [({"config": "{not json"}, "not valid JSON"),
                            ({"config": json.dumps({"d_model": -3})}, "invalid"),
                            ({"config": json.dumps({"colour": "red"})}, "unknown settings"),
                            ({"model_class": "os.system"}, "Unknown model type")]:
        with pytest.raises(CheckpointError, match=phrase):
            load_checkpoint(rewrite_metadata(reverse_checkpoint, **changes))


def test_another_tasks_checkpoint_is_refused_by_name(reverse_checkpoint: bytes) -> None:
    with pytest.raises(CheckpointError, match="'reverse' task, not 'sort'"):
        load_checkpoint(reverse_checkpoint, expected_task="sort")
    assert load_checkpoint(reverse_checkpoint, expected_task="reverse").task_name == "reverse"


def _notices(at) -> tuple[list[str], list[str]]:
    return [e.value for e in at.error], [s.value for s in at.success]


def test_live_training_uploader_refuses_bad_checkpoints(tmp_path: Path, reverse_checkpoint: bytes) -> None:
    at = app_at("pages/training.py")
    assert_no_exception(at)
    marker = tmp_path / "code-ran"
    bad = {
        "evil.safetensors": _pickles(marker)["protocol4"],
        "zipped.safetensors": _pickles(marker)["torch_save_zip"],
        "cut.safetensors": reverse_checkpoint[: len(reverse_checkpoint) // 2],
        "wide.safetensors": rewrite_metadata(reverse_checkpoint, config=json.dumps(
            asdict(replace(get_task("reverse").default_model_config(), d_model=128, d_ff=512)))),
    }
    for file_name, data in bad.items():
        at.file_uploader(key="live.upload").set_value((file_name, data, "application/octet-stream"))
        at.run()
        assert_no_exception(at)
        errors, _ = _notices(at)
        assert any(f"{file_name} was not loaded" in e for e in errors), f"{file_name}: {errors}"
        assert not marker.exists(), f"{file_name}: uploading the file ran code"
    at.file_uploader(key="live.upload").set_value(("good.safetensors", reverse_checkpoint, "application/octet-stream"))
    at.run()
    assert_no_exception(at)
    errors, successes = _notices(at)
    assert any("Loaded good.safetensors" in s for s in successes), (errors, successes)


def _forbid_building_huge_models(monkeypatch) -> list[int]:
    """Make every model class fail when built for real wider than 1024 or with more than 1,000 tokens;
    returns the widths seen on the meta device (shapes only), which is allowed."""
    seen = []
    for cls in (Seq2SeqTransformer, CausalLM):
        original = cls.__init__

        def guarded(self, config, *args, _original=original, **kwargs):
            huge = config.d_model > 1024 or config.vocab_size > 1000
            if huge and torch.get_default_device().type != "meta":
                raise AssertionError(f"a model with d_model {config.d_model}, vocab {config.vocab_size} was built")
            seen.append(config.d_model)
            _original(self, config, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", guarded)
    return seen


@pytest.mark.parametrize(("change", "phrase"), [
    ({"d_model": 4096, "n_heads": 32, "n_layers": 48, "d_ff": 16384},
     "larger than this server trains: d_model 4,096 (this server trains up to 512), 48 layers (up to 8), "
     "d_ff 16,384 (up to 2048)"),
    ({"vocab_size": 10_000_000}, "settings this page cannot reproduce"),
], ids=["4096x48", "10M-vocab"])
def test_uploaded_checkpoint_with_a_huge_claimed_model_is_refused_before_building(
        monkeypatch, reverse_checkpoint: bytes, change, phrase) -> None:
    at = app_at("pages/training.py")
    before_settings = {k: at.session_state[k] for k in ("live.d_model", "live.layers", "live.task")}
    forged = rewrite_metadata(reverse_checkpoint, config=json.dumps(
        {**asdict(get_task("reverse").default_model_config()), **change}))
    assert len(forged) < 1_000_000  # under 1 MB, claiming a model of gigabytes
    _forbid_building_huge_models(monkeypatch)
    rss = _rss_mib()
    at.file_uploader(key="live.upload").set_value(("huge.safetensors", forged, "application/octet-stream"))
    at.run()
    assert_no_exception(at)
    errors, successes = _notices(at)
    assert any("huge.safetensors was not loaded" in e and phrase in e for e in errors), errors
    assert not successes and _rss_mib() - rss < 200
    assert {k: at.session_state[k] for k in before_settings} == before_settings  # settings left as they were


def test_uploaded_half_precision_checkpoint_is_refused_with_the_reason(reverse_checkpoint: bytes) -> None:
    metadata = read_metadata(reverse_checkpoint)
    tensors = {k: v.half() for k, v in load_tensors(reverse_checkpoint).items()}
    at = app_at("pages/training.py")
    at.file_uploader(key="live.upload").set_value(
        ("half.safetensors", save_tensors(tensors, metadata=metadata), "application/octet-stream"))
    at.run()
    assert_no_exception(at)
    errors, _ = _notices(at)
    assert any("half.safetensors was not loaded" in e and "F16, expected F32" in e for e in errors), errors


def test_a_checkpoint_of_another_task_switches_the_page_with_a_notice() -> None:
    task = get_task("sort")
    config = task.default_model_config()
    data = save_checkpoint(task.build_model(config), config, task_name="sort")
    at = app_at("pages/training.py")
    assert at.session_state["live.task"] == "reverse"
    at.file_uploader(key="live.upload").set_value(("sorter.safetensors", data, "application/octet-stream"))
    at.run()
    assert_no_exception(at)
    errors, successes = _notices(at)
    assert not errors and any(
        "Loaded sorter.safetensors. It was trained on the Sort task, so the page switched from Reverse to Sort."
        in s for s in successes), successes
    assert at.session_state["live.task"] == "sort" and at.session_state["live.session"].run.task.name == "sort"
