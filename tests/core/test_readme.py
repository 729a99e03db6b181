"""The README's library example runs as printed (with fewer training steps, to stay fast)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def library_example() -> str:
    """The first ```python block of the README."""
    match = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert match, "README.md has no ```python example"
    return match.group(1)


def test_readme_library_example_runs():
    code = library_example()
    assert "steps=300" in code, "the example's training length changed; update this test's shortening"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code.replace("steps=300", "steps=12"), "README.md", "exec"), {})  # noqa: S102
    lines = printed.getvalue().splitlines()
    assert "'task': 'reverse'" in lines[0] and "'steps': 12" in lines[0]  # the summary
    assert lines[1].startswith("step,loss,lr")  # the CSV header
    assert len([line for line in lines[2:] if line]) == 12  # one CSV row per step


def test_readme_interventions_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    code = next(b for b in blocks if "head_importance(" in b)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102
    lines = printed.getvalue().splitlines()
    assert all(float(line) > 0 for line in lines[:2])  # the two ablated losses
    assert lines[2] == "(2, 4) (2, 32, 3)"
