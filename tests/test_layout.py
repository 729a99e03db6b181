"""The layers of the code base: pages -> ui -> explorer -> transformer_core, each importing only those below it.

Imports are read from the source (imports made inside functions count too), so a cycle or an upward import fails
here even when it happens to work at run time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

LAYERS = {"app": 3, "pages": 3, "ui": 2, "explorer": 1, "transformer_core": 0}  # may import equal or lower only
PAGE_PACKAGES = ("attention", "positional", "vit", "builder", "training", "lessons", "home")
# Words that would mean the library knows about the app (the product name in the checkpoint format is fine).
APP_WORDS = re.compile(r"streamlit|community cloud|\blessons?\b|\bpages?\b|\bhosts?\b|\bui\.|(?<!-)\bexplorer\b",
                       re.IGNORECASE)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files() -> dict[str, Path]:
    """Every module of the app and the library, by dotted name."""
    files = [REPO_ROOT / "app.py"]
    for top in ("pages", "ui", "explorer", "transformer_core"):
        files += sorted((REPO_ROOT / top).rglob("*.py"))
    return {module_name(p): p for p in files}


def imported_names(path: Path, module: str) -> set[str]:
    """Dotted names imported anywhere in the file, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)
            names.add(base)
    return names


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``files`` it imports (a name resolves to its longest known prefix)."""
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in imported_names(path, module):
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                targets.add(name)
        graph[module] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(source_files())


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from ui.common.urlstate import settle_choice\n", encoding="utf-8")
    assert "ui.common.urlstate.settle_choice" in imported_names(lazy, "ui.common.charts")


def test_no_import_cycles(graph):
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_each_layer_imports_only_the_layers_below_it(graph):
    upward = [f"{m} imports {t}" for m, targets in graph.items() for t in targets
              if LAYERS[t.split(".")[0]] > LAYERS[m.split(".")[0]]]
    assert upward == []


def test_ui_common_imports_no_page_package(graph):
    page_prefixes = tuple(f"ui.{p}" for p in PAGE_PACKAGES)
    crossing = [f"{m} imports {t}" for m, targets in graph.items() if m.startswith("ui.common")
                for t in targets if t.startswith(page_prefixes)]
    assert crossing == []


@pytest.mark.parametrize("forbidden", ["streamlit", "plotly", "altair", "ui", "pages"])
def test_explorer_and_the_library_never_import_the_ui(forbidden):
    files = source_files()
    offenders = [m for m, p in files.items() if m.split(".")[0] in ("explorer", "transformer_core")
                 and any(n == forbidden or n.startswith(forbidden + ".") for n in imported_names(p, m))]
    assert offenders == []


def test_the_library_never_names_the_app():
    mentions = []
    for path in sorted((REPO_ROOT / "transformer_core").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if APP_WORDS.search(line.replace("Transformer Explorer", "")):
                mentions.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert mentions == []


def test_pip_installs_the_library_alone():
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^include = \["transformer_core", "transformer_core\.\*"\]$', pyproject, re.M)


# --- ARCHITECTURE.md's map ---------------------------------------------------------------------------------------
# Convention (stated under "## Map" in ARCHITECTURE.md): under its layer's "### `<layer>/`" heading, every module is
# named in backticks by its path relative to the layer (`runs/live.py`), every package by its path with a trailing
# slash (`runs/`); `__init__.py` files are not listed.

MAPPED_LAYERS = ("transformer_core", "explorer", "ui")
MAX_EXPLORER_TOP_LEVEL = 8  # modules directly in explorer/, besides its packages


def layer_entries(root: Path) -> dict[str, Path]:
    """A layer's modules and packages by path relative to it (``runs/live.py``, ``runs/``) -> the file saying what
    each holds (a package's ``__init__.py``)."""
    entries: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts:
            continue
        for depth in range(1, len(rel.parts)):  # every folder between the layer and the file is a package
            entries.setdefault("/".join(rel.parts[:depth]) + "/", root.joinpath(*rel.parts[:depth], "__init__.py"))
        if path.name != "__init__.py":
            entries[rel.as_posix()] = path
    return entries


def mapped_names(architecture: str, layer: str) -> set[str]:
    """Every backticked name under the map's ``### `<layer>/``` heading."""
    _, found, rest = architecture.partition("\n## Map\n")
    assert found, "ARCHITECTURE.md has no '## Map' section"
    the_map = rest.split("\n## ", 1)[0]
    for section in re.split(r"(?m)^### ", the_map)[1:]:
        if section.startswith(f"`{layer}/`"):
            return set(re.findall(r"`([^`\s]+)`", section))
    return set()


def first_line(path: Path) -> str:
    if not path.exists():
        return "(no __init__.py: say what it holds)"
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "(no docstring: write one)"
    return doc.split("\n\n")[0].replace("\n", " ")


def missing_from_map(repo: Path, layer: str) -> list[str]:
    """Rows to add to ARCHITECTURE.md's map for every module or package of ``layer`` that it does not name."""
    named = mapped_names((repo / "ARCHITECTURE.md").read_text(encoding="utf-8"), layer)
    return [f"| `{name}` | {first_line(path)} |" for name, path in layer_entries(repo / layer).items()
            if name not in named]


def test_the_map_checker_names_what_is_missing(tmp_path):
    (tmp_path / "explorer" / "runs").mkdir(parents=True)
    (tmp_path / "explorer" / "runs" / "__init__.py").write_text('"""Runs."""\n', encoding="utf-8")
    (tmp_path / "explorer" / "runs" / "live.py").write_text('"""Live runs.\n\nMore."""\n', encoding="utf-8")
    (tmp_path / "explorer" / "runs" / "session.py").write_text('"""A session\'s run."""\n', encoding="utf-8")
    (tmp_path / "explorer" / "guard.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "ARCHITECTURE.md").write_text(
        "# A\n\n## Map\n\n### `explorer/`\n#### `runs/`\n| `runs/live.py` | live |\n\n### `ui/`\n| `guard.py` | x |\n"
        "\n## Next\n`guard.py`\n", encoding="utf-8")
    assert missing_from_map(tmp_path, "explorer") == ["| `guard.py` | (no docstring: write one) |",
                                                      "| `runs/session.py` | A session's run. |"]


@pytest.mark.parametrize("layer", MAPPED_LAYERS)
def test_architecture_maps_every_module(layer):
    missing = missing_from_map(REPO_ROOT, layer)
    assert not missing, (f"ARCHITECTURE.md's map does not name {len(missing)} module(s) of {layer}/. Add these rows "
                         f"under its '### `{layer}/`' heading (paths relative to {layer}/), with a better line if "
                         "the docstring's is long:\n" + "\n".join(missing))


def test_explorer_keeps_few_top_level_modules():
    top = sorted(p.name for p in (REPO_ROOT / "explorer").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_EXPLORER_TOP_LEVEL, (
        f"explorer/ has {len(top)} top-level modules, at most {MAX_EXPLORER_TOP_LEVEL} allowed: {', '.join(top)}. "
        "Put a service in the package it belongs to (runs/, pretrained/, lab/, render/, lessons/).")


# --- Every name in ARCHITECTURE.md still exists, and the file stays short ------------------------------------------
# A backticked path (`runs/live.py`, `ui/common/`, `tests/app/conftest.py`) must exist: in the map relative to its
# layer, elsewhere relative to the repository or a layer. Every other backticked name (`RunSession`, `TE_TRAINER`,
# `LiveRun.advance`) must still occur in the code. Spans with a placeholder (`pages/<name>.py`) and fenced blocks are
# not read.

MAX_ARCHITECTURE_LINES = 250
CODE_GLOBS = ("**/*.py", "*.toml", "*.sh", "*.txt", ".streamlit/*.toml", ".ci/*", "deploy/*")
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "node_modules"}
PATH = re.compile(r"^[\w.-]*/[\w./-]*$|^[\w-]+\.(py|md)$")  # has a slash, or is a .py or .md file name
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def backticked(markdown: str) -> list[str]:
    """The backticked spans of ``markdown`` outside fenced blocks, placeholders (``<name>``) left out."""
    prose = re.sub(r"(?ms)^```.*?^```", "", markdown)
    return [span for span in re.findall(r"`([^`\n]+)`", prose) if "<" not in span]


def code_words(repo: Path) -> set[str]:
    """Every word of the code, configuration and scripts of ``repo`` (the guides and README are not code)."""
    words: set[str] = set()
    for pattern in CODE_GLOBS:
        for path in repo.glob(pattern):
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(repo).parts):
                words.update(re.findall(r"\w+", path.read_text(encoding="utf-8", errors="replace")))
    return words


def path_exists(repo: Path, name: str) -> bool:
    return any((root / name.rstrip("/")).exists() for root in (repo, *(repo / layer for layer in MAPPED_LAYERS)))


def stale_names(repo: Path) -> list[str]:
    """The names ARCHITECTURE.md gives that no longer exist: map paths that are no module of their layer, other
    paths that are no file, and names that occur nowhere in the code."""
    text = (repo / "ARCHITECTURE.md").read_text(encoding="utf-8")
    stale = []
    for layer in MAPPED_LAYERS:
        entries = layer_entries(repo / layer)
        stale += [f"`{name}` (no such module in {layer}/)" for name in sorted(mapped_names(text, layer))
                  if name.endswith((".py", "/")) and name != f"{layer}/" and name not in entries
                  and not (repo / name).exists()]
    return list(dict.fromkeys(stale + stale_backticked(repo, text)))


def stale_backticked(repo: Path, text: str) -> list[str]:
    """The backticked paths in ``text`` that are no file or folder, and names that occur nowhere in the code."""
    stale = []
    words = code_words(repo)
    for span in dict.fromkeys(backticked(text)):
        paths = [part for part in span.split() if PATH.match(part)]
        if gone := [p for p in paths if not path_exists(repo, p)]:
            stale.append(f"`{span}` ({', '.join(gone)}: no such file or folder)")
        if gone := [w for part in span.split() if part not in paths
                    for w in IDENTIFIER.findall(part) if len(w) > 1 and w not in words]:
            stale.append(f"`{span}` ({', '.join(gone)}: not in the code)")
    return list(dict.fromkeys(stale))


def test_the_name_checker_finds_what_no_longer_exists(tmp_path):
    (tmp_path / "explorer" / "runs").mkdir(parents=True)
    (tmp_path / "explorer" / "runs" / "live.py").write_text('"""Live runs."""\nclass LiveRun:\n    pass\n')
    (tmp_path / "ARCHITECTURE.md").write_text(
        "# A\n`LiveRun` and `OldRun` in `explorer/runs/live.py`, not `explorer/gone.py`; `pages/<name>.py`.\n\n"
        "```\n`Fenced`\n```\n## Map\n\n### `explorer/`\n| `runs/` `runs/live.py` | `LiveRun` |\n| `runs/old.py` | x |\n"
        "\n## Next\n", encoding="utf-8")
    assert stale_names(tmp_path) == ["`runs/old.py` (no such module in explorer/)",
                                     "`OldRun` (OldRun: not in the code)",
                                     "`explorer/gone.py` (explorer/gone.py: no such file or folder)",
                                     "`runs/old.py` (runs/old.py: no such file or folder)"]


def test_every_name_in_architecture_still_exists():
    stale = stale_names(REPO_ROOT)
    assert not stale, ("ARCHITECTURE.md names what is no longer in the code; update or remove:\n" + "\n".join(stale))


def test_the_runs_guide_names_only_what_exists():
    """docs/runs.md tells how a run lives in the code, so its names are held to the code as this file's are."""
    stale = stale_backticked(REPO_ROOT, (REPO_ROOT / "docs" / "runs.md").read_text(encoding="utf-8"))
    assert not stale, "docs/runs.md names what is no longer in the code; update or remove:\n" + "\n".join(stale)


def test_architecture_stays_short():
    lines = (REPO_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_ARCHITECTURE_LINES, (
        f"ARCHITECTURE.md has {lines} lines, at most {MAX_ARCHITECTURE_LINES}: keep the map's rows terse (several "
        "modules per row) and tell stories in the guides (docs/), linked from here.")
