"""Every text box of the app says how many characters it takes (``max_chars``): the browser then refuses more,
so no page receives a text larger than it was made for."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOXES = ("text_area", "text_input")


def _boxes(path: Path) -> list[tuple[int, bool]]:
    """(line, has max_chars) of every text box drawn in ``path``, directly or through a helper given the widget."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        passed = [a for a in node.args if isinstance(a, ast.Attribute) and a.attr in BOXES]
        if name in BOXES or passed:
            found.append((node.lineno, any(k.arg == "max_chars" for k in node.keywords)))
    return found


def test_every_text_box_has_max_chars() -> None:
    files = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").rglob("*.py"))]
    boxes = {f"{path.relative_to(ROOT)}:{line}": ok for path in files for line, ok in _boxes(path)}
    assert len(boxes) >= 6  # the scan finds the boxes (the Lab's text, lessons, watch codes, own text, ...)
    assert [where for where, ok in boxes.items() if not ok] == []
