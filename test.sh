#!/usr/bin/env bash
# Run every test (library, AppTest and headless-browser tests) on a fresh machine:
# create .venv if needed, install requirements-dev.txt, make sure a Chromium, a redis-server and nginx exist
# (apt-get, as root; without them the tests that need them skip, with the reason), run pytest.
#   ./test.sh           every test: those without a browser first, one pytest worker per core (pytest-xdist), then
#                       the browser tests in one process (they time what they see, so they get the machine alone),
#                       those marked alone last (they load the cores on purpose)
#   ./test.sh --quick   every test but the browser ones and those marked slow (library, services, pages with
#                       AppTest), one worker per core
#   ./test.sh ARGS      pytest ARGS, as given (e.g. tests/core -x -q); with --quick: all but the browser tests, ARGS
# Each pytest run ends with its 25 slowest tests. TE_TEST_PLAN=1 prints the pytest commands and runs nothing.
set -euo pipefail
cd "$(dirname "$0")"
# Keep compiled modules (and pytest's rewritten test modules) between processes: each pytest worker, app server and
# benchmark otherwise compiles the project again, seconds of CPU each, where the environment turns this off.
unset PYTHONDONTWRITEBYTECODE

NO_BROWSER="not browser"  # the tests that need no Chromium and no app server
QUICK_SELECTION="not browser and not slow"  # --quick leaves out the browser tests and those marked slow
BROWSER_SELECTION="browser and not alone"  # the browser tests that may share the machine
ALONE_SELECTION="browser and alone"  # the browser tests that need the machine to themselves
PARALLEL=(-n auto --dist loadfile)  # pytest-xdist: a worker per core, each file on one worker in its own order
args=()
quick=""
for arg in "$@"; do
    if [[ "$arg" == "--quick" ]]; then
        quick=1
    else
        args+=("$arg")
    fi
done
plan=()  # the pytest runs, one per line, each a sequence of arguments separated by the unit separator
join_run() { local IFS=$'\x1f'; plan+=("$*"); }
if [[ -n "$quick" ]]; then
    join_run "${PARALLEL[@]}" -m "$QUICK_SELECTION" "${args[@]}"
elif [[ ${#args[@]} -eq 0 ]]; then
    join_run "${PARALLEL[@]}" -m "$NO_BROWSER"
    join_run -m "$BROWSER_SELECTION"
    join_run -m "$ALONE_SELECTION"
else
    join_run "${args[@]}"
fi
if [[ -n "${TE_TEST_PLAN:-}" ]]; then
    for run in "${plan[@]}"; do
        IFS=$'\x1f' read -r -a run_args <<<"$run"
        printf 'pytest'
        printf ' %q' "${run_args[@]}"
        printf '\n'
    done
    exit 0
fi

pick_python() {
    local candidate
    for candidate in python3.11 python3.12 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then
            echo "$candidate"
            return 0
        fi
    done
    echo "test.sh: no python3 found; install Python 3.11 or newer." >&2
    return 1
}

find_chromium() {
    local candidate
    for candidate in /usr/bin/chromium chromium chromium-browser google-chrome; do
        if command -v "$candidate" >/dev/null 2>&1; then
            return 0
        fi
    done
    return 1
}

install_start=$SECONDS
if [[ ! -x .venv/bin/python ]]; then
    python_bin="$(pick_python)"
    echo "Creating .venv with $python_bin"
    "$python_bin" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt

# Debian packages, installed as root with apt-get; each group on its own, so that one failed install (e.g. offline)
# neither stops the suite nor the other groups: the tests that need a missing package skip, with the reason.
apt_updated=""
apt_install() {  # apt_install "what needs them" PACKAGE...
    local what=$1
    shift
    if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: not root (or no apt-get), cannot install $*: $what will be skipped." >&2
        return 1
    fi
    echo "Installing Debian packages: $*"
    if [[ -z "$apt_updated" ]]; then
        apt-get update -qq || true
        apt_updated=1
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
        echo "test.sh: apt-get could not install $*: $what will be skipped." >&2
        return 1
    fi
}

# The browser tests need a Chromium, and an emoji font so that screenshots show the page icons (not for --quick).
if [[ -n "$quick" ]]; then
    :
elif ! find_chromium; then
    apt_install "the browser tests" chromium fonts-noto-color-emoji ||
        echo "Or install a browser with '.venv/bin/python -m playwright install chromium'." >&2
elif command -v fc-list >/dev/null 2>&1 && [[ "$(fc-list : family)" != *[Ee]moji* ]]; then
    apt_install "emoji in screenshots" fonts-noto-color-emoji || true
fi
# Chinese pages and exports need a CJK font: Chromium's screenshots and the PNG charts (explorer/render) use Noto CJK.
if ! command -v fc-list >/dev/null 2>&1 || [[ "$(fc-list :lang=zh family)" != *CJK* ]]; then
    apt_install "Chinese text in screenshots and exported charts" fonts-noto-cjk || true
fi
# The Redis run-store tests start and stop their own redis-server on a free port.
if ! command -v redis-server >/dev/null 2>&1; then
    apt_install "the Redis run-store tests" redis-server || true
fi
# The proxy tests put nginx in front of two app servers (deploy/nginx.conf); Debian's nginx-light is enough.
if [[ -z "$quick" ]] && ! command -v nginx >/dev/null 2>&1 && [[ ! -x /usr/sbin/nginx ]]; then
    apt_install "the proxy tests" nginx-light || true
fi
echo "Install phase: $((SECONDS - install_start)) s"

if ! .venv/bin/python -c "import xdist" 2>/dev/null; then
    echo "test.sh: pytest-xdist is missing; the tests run in one process." >&2
fi

test_start=$SECONDS
status=0
for run in "${plan[@]}"; do
    IFS=$'\x1f' read -r -a run_args <<<"$run"
    if ! .venv/bin/python -c "import xdist" 2>/dev/null && [[ "${run_args[0]:-}" == "-n" ]]; then
        while [[ "${run_args[0]:-}" == -* && "${run_args[0]}" != "-m" ]]; do  # drop the xdist options
            run_args=("${run_args[@]:2}")
        done
    fi
    run_start=$SECONDS
    rc=0
    .venv/bin/python -m pytest --durations=25 "${run_args[@]}" || rc=$?  # ends with the 25 slowest tests
    echo "pytest ${run_args[*]}: $((SECONDS - run_start)) s"
    if [[ $status -eq 0 ]]; then
        status=$rc
    fi
done
echo "Test phase: $((SECONDS - test_start)) s"
if [[ $status -eq 5 ]]; then
    echo "test.sh: pytest collected no tests; treating this as an error." >&2
fi
exit "$status"
