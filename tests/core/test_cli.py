"""The command lines: ``train --json`` output, errors, saving, and the benchmark's reference models."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_core import bench, train
from transformer_core.checkpoint import load_checkpoint
from transformer_core.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--d-model", "32", "--n-heads", "2", "--n-layers", "1", "--d-ff", "64", "--batch-size", "16", "--quiet"]


def test_json_output_parses_and_has_the_promised_fields(capsys, tmp_path):
    path = tmp_path / "model.safetensors"
    code = train.main(["--task", "reverse", "--steps", "6", "--seed", "3", "--json", "--save", str(path), *TINY])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    for key in ("task", "steps", "seconds", "steps_per_second", "loss", "accuracy", "status", "memory_mb"):
        assert key in result
    assert result["task"] == "reverse" and result["steps"] == 6 and result["metric"] == "accuracy"
    assert result["model_config"]["d_model"] == 32
    loaded = load_checkpoint(path.read_bytes(), expected_task="reverse")
    assert loaded.config.d_model == 32 and loaded.extra["step"] == 6


def test_module_entry_point_runs_in_a_fresh_process(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 20, encoding="utf-8")
    cmd = [sys.executable, "-m", "transformer_core.train", "--task", "char_lm", "--text-file", str(text),
           "--steps", "3", "--json", "--threads", "1", *TINY]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout)
    assert result["task"] == "char_lm" and "val_loss" in result and result["steps"] == 3


def test_text_summary_and_invalid_arguments(capsys):
    assert train.main(["--task", "copy", "--steps", "2", *TINY]) == 0
    assert "copy: 2 steps" in capsys.readouterr().out
    assert train.main(["--task", "copy", "--n-heads", "5", "--quiet"]) == 2
    assert "not divisible" in capsys.readouterr().err
    assert train.main(["--task", "protein", "--seq-len", "5", "--quiet"]) == 2
    capsys.readouterr()
    assert train.main(["--task", "char_lm", "--min-len", "3", "--quiet"]) == 2
    assert "--min-len applies only" in capsys.readouterr().err
    assert train.main(["--task", "reverse", "--seq-len", "4", "--min-len", "6", "--quiet"]) == 2
    assert "min_len=6 must be between 1 and seq_len=4" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.main(["--task", "nonsense"])


@pytest.mark.parametrize("name", ["reverse", "char_lm", "protein"])
def test_bench_references_have_identical_size(name):
    task = get_task(name)
    ours = task.build_model(task.default_model_config())
    ref, _ = bench._reference(task)
    assert sum(p.numel() for p in ref.parameters()) == sum(p.numel() for p in ours.parameters())


@pytest.mark.parametrize(("task", "metric"), [("protein", "r2"), ("char_lm", "accuracy")])
def test_json_output_has_the_task_metrics(capsys, task, metric):
    assert train.main(["--task", task, "--steps", "2", "--json", *TINY]) == 0
    result = json.loads(capsys.readouterr().out)
    assert isinstance(result[metric], float) and result["eval_loss"] is not None
    if task == "char_lm":  # accuracy comes besides the headline metric, which stays the validation loss
        assert result["metric"] == "val_loss" and 0.0 <= result["accuracy"] <= 1.0
        assert result["bits_per_char"] == pytest.approx(result["val_loss"] / math.log(2))


def test_a_task_without_a_held_out_split_says_so(capsys):
    loud = [arg for arg in TINY if arg != "--quiet"]  # the note goes to stderr unless --quiet
    assert train.main(["--task", "reverse", "--seq-len", "2", "--steps", "2", "--json", *loud]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert "evaluation uses sequences the model also trains on" in result["notice"]
    assert "note: Only 110 different sequences" in captured.err
    assert train.main(["--task", "reverse", "--steps", "2", "--json", *TINY]) == 0
    assert "notice" not in json.loads(capsys.readouterr().out)  # the default lengths hold sequences out


def test_bench_smoke_run_prints_ratios_and_time_to_target_rows(capsys):
    assert bench.main(["--smoke", "--tasks", "reverse,protein", "--json", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    *tables, last = out.strip().splitlines()
    text = "\n".join(tables)
    assert "| model | ours ms/step | torch.nn ms/step | ratio | snapshot step / plain step |" in text
    for name in ("reverse", "char_lm", "protein"):
        assert re.search(rf"^\| {name} \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [\d.]+x \|$", text, re.M), name
    assert "| task | target | steps to target | seconds to target | final | steps run | seconds |" in text
    assert re.search(rf"^\| reverse \| accuracy >= 0.99 \| .+ \| {bench.SMOKE_STEPS} \| [\d.]+ \|$", text, re.M)
    assert re.search(r"^\| protein \| r2 >= 0.9 \| ", text, re.M)
    result = json.loads(last)
    speed = {row["task"]: row for row in result["speed"]}
    for row in speed.values():
        assert row["ratio"] == pytest.approx(row["ours_ms"] / row["torch_ms"]) and row["snapshot_ratio"] > 0
        assert row["params_ours"] == row["params_torch"]
    assert [t["task"] for t in result["tasks"]] == ["reverse", "protein"]
    assert all(t["steps_run"] == bench.SMOKE_STEPS for t in result["tasks"]) and result["memory_mb"] is None


def test_diverged_run_exits_1_with_strict_json(capsys):
    assert train.main(["--task", "copy", "--steps", "5", "--lr", "1e9", "--json", *TINY]) == 1
    result = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"non-JSON {name}"))
    assert result["status"] == "diverged" and "lower the learning rate" in result["stop_reason"]


def test_unwritable_save_destination_is_refused_before_training(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(train, "run", lambda *a, **k: pytest.fail("trained although the model cannot be saved"))
    for path, fragment in ((tmp_path / "missing" / "m.safetensors", "does not exist"), (tmp_path, "is a folder")):
        with pytest.raises(SystemExit) as exit_info:
            train.main(["--task", "copy", "--steps", "2", "--save", str(path), *TINY])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "--save" in err and fragment in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


def test_failed_save_after_training_is_reported(capsys, monkeypatch, tmp_path):
    def disk_full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", disk_full)
    path = tmp_path / "m.safetensors"
    assert train.main(["--task", "copy", "--steps", "2", "--json", "--save", str(path), *TINY]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["saved"] is None  # the run's results are still printed
    assert f"could not save the model to {path}: No space left on device" in err


@pytest.mark.slow
def test_char_lm_text_output_ends_with_a_sample_drawn_as_asked(capsys, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("abc abd abe\n" * 40, encoding="utf-8")
    base = ["--task", "char_lm", "--text-file", str(text), "--steps", "3", *TINY]
    assert train.main([*base, "--top-k", "1", "--temperature", "2"]) == 0
    out = capsys.readouterr().out
    assert "sample (temperature 2, top-k 1):" in out
    greedy = out.split("top-k 1):\n", 1)[1]
    assert set(greedy.strip()) <= set("abcde \n") and len(greedy) == train.SAMPLE_CHARS + 1
    assert train.main([*base, "--temperature", "0"]) == 0  # top-k 1 is greedy, whatever the temperature
    assert capsys.readouterr().out.split("top-k all):\n", 1)[1] == greedy
    assert train.main([*base, "--json", "--top-k", "3"]) == 0
    assert "sample" not in json.loads(capsys.readouterr().out)  # JSON output stays one object


@pytest.mark.parametrize(("flags", "phrase"), [
    (["--task", "copy", "--top-k", "3"], "only to the char_lm task"),
    (["--task", "char_lm", "--top-k", "0"], "at least 1"),
    (["--task", "char_lm", "--temperature", "-1"], "between 0"),
])
def test_sampling_flags_are_checked_before_training(capsys, flags, phrase):
    with pytest.raises(SystemExit) as exit_info:
        train.main([*flags, "--quiet"])
    assert exit_info.value.code == 2 and phrase in capsys.readouterr().err
