"""The README and the guides in docs/: their code examples run as printed (with fewer training steps, to stay fast),
the README stays short, and every relative link in them resolves, anchors included."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LIBRARY = ROOT / "docs" / "library.md"  # the library's tour, moved out of the README
README_MAX_LINES = 250
DOCUMENTS = [README, ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)


def run_printed(code: str, name: str) -> list[str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, name, "exec"), {})  # noqa: S102
    return printed.getvalue().splitlines()


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_library_example_runs():
    code = python_blocks(README)[0]
    assert "steps=300" in code, "the example's training length changed; update this test's shortening"
    lines = run_printed(code.replace("steps=300", "steps=12"), "README.md")
    assert len(lines) == 1 and 0.0 <= float(lines[0]) <= 1.0  # the held-out accuracy


def test_library_tour_runs():
    code = python_blocks(LIBRARY)[0]
    assert "steps=300" in code, "the example's training length changed; update this test's shortening"
    lines = run_printed(code.replace("steps=300", "steps=12"), "docs/library.md")
    assert "'task': 'reverse'" in lines[0] and "'steps': 12" in lines[0]  # the summary
    assert lines[1].startswith("step,loss,lr")  # the CSV header
    assert len([line for line in lines[2:] if line]) == 12  # one CSV row per step


def test_library_generation_example_runs():
    code = next(b for b in python_blocks(LIBRARY) if "generate(model" in b)
    lines = run_printed(code, "docs/library.md")
    assert len(lines) == 9 and lines[0].split()[0] == "4" and lines[0].endswith("(6, 4)")
    assert lines[-1] == str(2 * 2 * 2 * 8 * 12 * 4)


def test_library_interventions_example_runs():
    code = next(b for b in python_blocks(LIBRARY) if "head_importance(" in b)
    lines = run_printed(code, "docs/library.md")
    assert all(float(line) > 0 for line in lines[:2])  # the two ablated losses
    assert lines[2] == "(2, 4) (2, 32, 3)"


def test_library_interpretability_example_runs():
    code = next(b for b in python_blocks(LIBRARY) if "token_attributions(" in b)
    assert run_printed(code, "docs/library.md") == ["(6,) True", "(2, 6) 1.0", "True (2, 4)", "(2, 6, 256)"]


# --- links -----------------------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|!?\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slug(h) for h in re.findall(r"(?m)^#{1,6} (.+)$", text)}


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # not http:, mailto:, ...


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading in {file_part or path.name})")
    return broken


def test_the_link_checker_finds_broken_links(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n\n## What a student's `own` text is\n", encoding="utf-8")
    doc = tmp_path / "b.md"
    doc.write_text("[ok](a.md#what-a-students-own-text-is) [web](https://x.org/y) [self](#b)\n# B\n"
                   "[gone](c.md) [bad](a.md#nope) ![pic](missing.png)\n```\n[code](ignored.md)\n```\n",
                   encoding="utf-8")
    assert broken_links(doc) == ["c.md (no such file)", "a.md#nope (no such heading in a.md)",
                                 "missing.png (no such file)"]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_the_readme_links_every_guide():
    linked = {t.partition("#")[0] for t in relative_links(README)}
    guides = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert guides <= linked, f"README.md does not link {sorted(guides - linked)}"
