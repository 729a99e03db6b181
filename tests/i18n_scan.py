"""What the translation tests read from the code: the messages marked for translation, and the strings a person
reads that are not marked (an ``st.*`` call given a bare English text, a message constant without ``N_``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_file

ROOT = Path(__file__).resolve().parents[1]
TRANSLATED = ("app.py", "pages", "ui", "explorer")  # the code whose strings a person reads; the library is English
WRAPPERS = {"_", "N_", "ngettext", "pgettext"}

# Streamlit calls whose first argument (or these keywords) a person reads. On a container other than ``st``
# (a column, the sidebar, a tab) only the distinctive names count, since ``f.write(...)`` is not a page.
_TEXT_CALLS = {
    "title", "header", "subheader", "caption", "markdown", "write", "text", "info", "warning", "error", "success",
    "toast", "button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "slider", "select_slider",
    "number_input", "text_input", "text_area", "file_uploader", "download_button", "expander", "popover", "metric",
    "spinner", "status", "link_button", "segmented_control", "pills", "color_picker", "form_submit_button",
    "camera_input", "chat_input", "dialog", "tabs", "page_link", "image",
}
_ON_CONTAINERS = _TEXT_CALLS - {"write", "text", "title", "image", "status", "dialog", "tabs"}
_READ_KEYWORDS = {"label", "help", "placeholder", "caption", "text", "title", "body"}
_NO_LABEL = {"image", "progress", "page_link"}  # the first argument is not a text
_MESSAGE_NAME = re.compile(r"^[A-Z][A-Z0-9_]*(MESSAGE|NOTICE|TEXT|LABEL|TITLE|CAPTION|HELP|HINT|REASON|TIP)S?$")


@dataclass(frozen=True)
class Unwrapped:
    """A string a person reads that no ``_()`` reaches."""

    where: str  # "ui/x.py:12"
    text: str  # the start of the string

    def __str__(self) -> str:
        return f"{self.where}: {self.text!r}"


def python_files() -> list[Path]:
    """Every Python file whose strings are translated."""
    files: list[Path] = []
    for name in TRANSLATED:
        path = ROOT / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def messages() -> dict[tuple[str | None, str], tuple[str | tuple[str, ...], str]]:
    """Every marked message: (context, msgid) → (the message or its singular/plural pair, where it first is)."""
    found: dict[tuple[str | None, str], tuple[str | tuple[str, ...], str]] = {}
    for path in python_files():
        for lineno, message, _comments, context in extract_from_file("python", str(path), keywords=DEFAULT_KEYWORDS):
            key = (context, message if isinstance(message, str) else message[0])
            found.setdefault(key, (message, f"{path.relative_to(ROOT)}:{lineno}"))
    return found


def _readable(text: str) -> bool:
    """Whether ``text`` holds words a person reads (not markup, a formula, an icon name or a key)."""
    text = re.sub(r"<[^>]*>", " ", text)  # HTML tags and style sheets' tags
    text = re.sub(r"\$[^$]*\$", " ", text)  # inline LaTeX
    text = re.sub(r":material/[a-z_]+:", " ", text)
    if text.lstrip().startswith(("{", "@", ".", "#", "[data-", "div", "section")) and "{" in text:
        return False  # CSS
    if re.fullmatch(r"[a-z0-9_.:/-]+", text.strip()):
        return False  # a key, a parameter's name ("max_len", "pe.shuffle_text")
    two_words = re.search(r"[A-Za-z]{2,}[^A-Za-z]+[A-Za-z]{2,}", text)
    return bool(two_words) or bool(re.fullmatch(r"\W*[A-Z][a-z]+\W*", text))


def _bare_text(node: ast.AST) -> str | None:
    """The text of ``node`` when it is an English literal nobody translates; None when wrapped or not a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if _readable(node.value) else None
    if isinstance(node, ast.JoinedStr):
        parts = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        return parts if _readable(parts) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _bare_text(node.left) or _bare_text(node.right)
    if isinstance(node, (ast.List, ast.Tuple)):
        return next((t for t in map(_bare_text, node.elts) if t), None)
    if isinstance(node, ast.IfExp):
        return _bare_text(node.body) or _bare_text(node.orelse)
    return None


_NOT_PAGES = re.compile(r"log|parser", re.IGNORECASE)  # loggers and argument parsers write for developers


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def unwrapped_in(source: str, where: str) -> Iterator[Unwrapped]:
    """The strings a person reads in ``source`` that are not marked for translation."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, root = node.func.attr, _root(node.func)
            on_st = root == "st"
            if name not in (_TEXT_CALLS if on_st else _ON_CONTAINERS) or _NOT_PAGES.search(root or ""):
                continue
            read = [] if name in _NO_LABEL else node.args[:1]
            read += [k.value for k in node.keywords if k.arg in _READ_KEYWORDS]
            for arg in read:
                text = _bare_text(arg)
                if text:
                    yield Unwrapped(f"{where}:{arg.lineno}", text[:60])
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            text = _bare_text(stmt.value)
            if text and any(_MESSAGE_NAME.match(n) for n in names):
                yield Unwrapped(f"{where}:{stmt.lineno}", text[:60])


def unwrapped() -> list[Unwrapped]:
    """Every unmarked string a person reads, in the whole translated code."""
    found: list[Unwrapped] = []
    for path in python_files():
        found += unwrapped_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return found


def translated_at_import(source: str, where: str) -> Iterator[str]:
    """Places where ``_()``/``ngettext()`` runs at import time (module level, class bodies, default arguments):
    there no session has chosen a language yet, so the text would stay English."""
    tree = ast.parse(source)

    def calls(node: ast.AST) -> Iterator[ast.Call]:
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Call) or not isinstance(sub.func, ast.Name):
                continue
            if sub.func.id in {"_", "ngettext", "pgettext"}:
                yield sub

    def visit(body: list[ast.stmt]) -> Iterator[str]:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for default in stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]:
                    yield from (f"{where}:{c.lineno}" for c in calls(default))
                for deco in stmt.decorator_list:
                    yield from (f"{where}:{c.lineno}" for c in calls(deco))
            elif isinstance(stmt, ast.ClassDef):
                yield from visit(stmt.body)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
                yield from (f"{where}:{c.lineno}" for c in calls(stmt))
            else:
                yield from (f"{where}:{c.lineno}" for c in calls(stmt))

    yield from visit(tree.body)


def underscore_assigned(source: str, where: str) -> Iterator[str]:
    """Places that assign ``_`` in a file that translates with it (it would shadow the translator)."""
    tree = ast.parse(source)
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "_"]
    if any(isinstance(n.ctx, ast.Load) for n in names):
        yield from (f"{where}:{n.lineno}" for n in names if isinstance(n.ctx, ast.Store))
