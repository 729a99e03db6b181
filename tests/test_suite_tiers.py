"""The two ways to run the tests: ``./test.sh`` (everything, what CI runs) and ``./test.sh --quick`` (all but the
browser tests), as the README names them."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess

from tests.conftest import REPO_ROOT

TEST_SH = REPO_ROOT / "test.sh"
PARALLEL = ["-n", "auto", "--dist", "loadfile"]


def planned(*args: str) -> list[list[str]]:
    """The pytest runs ``./test.sh ARGS`` would make, read from its plan (``TE_TEST_PLAN=1``: nothing runs)."""
    shown = subprocess.run(["bash", str(TEST_SH), *args], capture_output=True, text=True, check=True, timeout=60,
                           env={**os.environ, "TE_TEST_PLAN": "1"}).stdout
    return [shlex.split(line)[1:] for line in shown.splitlines()]


def test_ci_runs_the_whole_suite():
    commands = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert commands == ["./test.sh"]


def test_the_whole_suite_runs_the_tests_without_a_browser_then_the_browser_tests_in_one_process_then_alone():
    assert planned() == [[*PARALLEL, "-m", "not browser"], ["-m", "browser and not alone"],
                         ["-m", "browser and alone"]]


def test_quick_leaves_out_the_browser_and_slow_tests_and_passes_the_rest_on():
    quick = [*PARALLEL, "-m", "not browser and not slow"]
    assert planned("--quick") == [quick]
    assert planned("tests/core", "--quick", "-x") == [[*quick, "tests/core", "-x"]]


def test_other_arguments_go_to_one_pytest_as_given():
    assert planned("tests/core", "-x", "-q") == [["tests/core", "-x", "-q"]]
    assert planned("-m", "browser and slow") == [["-m", "browser and slow"]]


def test_the_readme_names_both_commands():
    testing = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("## Testing", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\./test\.sh\s+#", testing, re.M) and re.search(r"^\./test\.sh --quick\s+#", testing, re.M)


def test_browser_tests_share_one_app_server_per_environment(monkeypatch):
    from tests.e2e import conftest as e2e

    started, stopped = [], []

    @contextlib.contextmanager
    def fake_server(env):
        started.append(env)
        yield f"http://127.0.0.1:{8000 + len(started)}"
        stopped.append(env)

    monkeypatch.setattr(e2e, "serve_app", fake_server)
    servers = e2e.AppServers()
    first = servers.get({"TE_SMALL_HOST": "1", "TE_RECORDINGS_MB": "0"})
    assert servers.get({"TE_RECORDINGS_MB": "0", "TE_SMALL_HOST": "1"}) == first  # the same environment, any order
    assert servers.get({"TE_SMALL_HOST": "1"}) != first and servers.get() != first
    assert len(servers) == 3 and started[0] == {"TE_RECORDINGS_MB": "0", "TE_SMALL_HOST": "1"}
    servers.close()
    assert len(stopped) == 3
