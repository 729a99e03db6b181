"""The two ways to run the tests: ``./test.sh`` (everything, what CI runs) and ``./test.sh --quick`` (all but the
browser tests), as the README names them."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import REPO_ROOT

TEST_SH = REPO_ROOT / "test.sh"


def test_ci_runs_the_whole_suite():
    commands = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert commands == ["./test.sh"]


def test_quick_leaves_out_the_browser_tests_only():
    selection = re.search(r'^QUICK_SELECTION="([^"]+)"', TEST_SH.read_text(encoding="utf-8"), re.M)
    assert selection and selection.group(1) == "not browser"


def test_test_sh_hands_quick_to_pytest_as_a_selection():
    """The argument handling of test.sh, run alone: --quick becomes -m "not browser", the rest goes through."""
    script = TEST_SH.read_text(encoding="utf-8")
    parsing = script[script.index("QUICK_SELECTION="):script.index("pick_python()")]
    shown = subprocess.run(["bash", "-c", parsing + 'printf "%s\\n" "${pytest_args[@]}"', "test.sh",
                            "tests/core", "--quick", "-x"], capture_output=True, text=True, check=True).stdout
    assert shown.splitlines() == ["-m", "not browser", "tests/core", "-x"]
    plain = subprocess.run(["bash", "-c", parsing + 'printf "%s\\n" "${pytest_args[@]}"', "test.sh", "-q"],
                           capture_output=True, text=True, check=True).stdout
    assert plain.splitlines() == ["-q"]


def test_the_readme_names_both_commands():
    testing = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("## Testing", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\./test\.sh\s+#", testing, re.M) and re.search(r"^\./test\.sh --quick\s+#", testing, re.M)
