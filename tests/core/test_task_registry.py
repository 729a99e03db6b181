"""Tasks register themselves: a task defined outside the package is built, trained and offered by the CLI."""

from __future__ import annotations

import json

import pytest

from tests.rotate_task import NAME, RotateTask, registered
from transformer_core import train
from transformer_core.tasks import TASK_NAMES, get_task, registry, task_names
from transformer_core.tasks.base import generator_for
from transformer_core.tasks.sequences import DIGIT0

TINY = ["--d-model", "16", "--n-heads", "2", "--n-layers", "1", "--d-ff", "32", "--batch-size", "8", "--quiet"]


def _digits(ids: list[int]) -> list[int]:
    return [i - DIGIT0 for i in ids if i >= DIGIT0]


def test_a_registered_task_is_built_by_name_and_rotates_its_digits():
    with registered():
        assert task_names() == (*TASK_NAMES, NAME)
        task = get_task(NAME, shift=2, seq_len=5)
        assert isinstance(task, RotateTask) and task.shift == 2
        batch = task.sample_batch(16, generator_for(0))
        rows = zip(batch["src"].tolist(), batch["tgt_out"].tolist(), batch["lengths"].tolist(), strict=True)
        for src, out, n in rows:
            digits = _digits(src)
            assert len(digits) == n and _digits(out) == digits[2:] + digits[:2]  # the rotation, by list slicing
        with pytest.raises(ValueError, match="accepts: shift, seq_len, min_len"):
            get_task(NAME, kind="sort")
    assert NAME not in task_names()
    with pytest.raises(ValueError, match="Unknown task 'rotate'"):
        get_task(NAME)


def test_a_name_is_registered_once():
    with registered() as entry, pytest.raises(ValueError, match="already registered"):
        registry.register(entry)


def test_the_cli_offers_the_task_and_its_own_option(capsys):
    with registered():
        parser = train.build_parser()
        task_action = next(a for a in parser._actions if a.dest == "task")
        assert NAME in task_action.choices
        assert "--rotate-by" in parser.format_help()
        trainer = train.make_trainer(parser.parse_args(["--task", NAME, "--rotate-by", "3"]))
        assert trainer.task.shift == 3
        assert train.main(["--task", NAME, "--rotate-by", "1", "--steps", "3", "--json", *TINY]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["task"] == NAME and result["steps"] == 3
        assert train.main(["--task", "reverse", "--rotate-by", "1", "--steps", "2", *TINY]) == 2
        assert "--rotate-by applies only to the rotate task" in capsys.readouterr().err
    assert "--rotate-by" not in train.build_parser().format_help()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_every_task_declares_the_options_it_is_rebuilt_with(name):
    """What ``Task.options()`` returns passes the entry's declaration, and rebuilds the same task."""
    options = get_task(name).options()
    assert registry.checked_options(name, options) == options
    assert {o.name for o in registry.entry(name).options} == set(options)
    assert get_task(name, **registry.checked_options(name, options)).options() == options


@pytest.mark.parametrize(("name", "options", "message"), [
    ("reverse", {"eval_size": 10**8}, "Undeclared option\\(s\\) eval_size"),  # declared by the builder, not shared
    ("reverse", {"seq_len": 10**400}, "between 1 and 64"),
    ("reverse", {"seq_len": 8.0}, "must be a whole number"),
    ("reverse", {"seq_len": True}, "must be a whole number"),
    ("vit_shapes", {"noise": float("nan")}, "must be a number"),
    ("protein", {"pool": "max"}, "one of mean, cls"),
    ("reverse", ["seq_len"], "not a mapping"),
    ("nope", {}, "Unknown task"),
])
def test_options_from_elsewhere_are_checked_against_the_declaration(name, options, message):
    with pytest.raises(ValueError, match=message):
        registry.checked_options(name, options)
