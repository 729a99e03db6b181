#!/usr/bin/env bash
# Run every test (library, AppTest and headless-browser tests) on a fresh machine:
# create .venv if needed, install requirements-dev.txt, make sure a Chromium exists (apt-get, as root), run pytest.
# Extra arguments go to pytest, e.g. ./test.sh -m "not browser" or ./test.sh tests/core -x -q
set -euo pipefail
cd "$(dirname "$0")"

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

# System packages for the browser tests: a Chromium, and an emoji font so screenshots show the page icons.
missing=()
if ! find_chromium; then
    missing+=(chromium fonts-noto-color-emoji)
elif command -v fc-list >/dev/null 2>&1 && [[ "$(fc-list : family)" != *[Ee]moji* ]]; then
    missing+=(fonts-noto-color-emoji)
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing Debian packages: ${missing[*]}"
        # A failed install (e.g. offline) must not stop the suite: without Chromium the browser tests skip.
        if ! { apt-get update -qq &&
               DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
        then
            echo "test.sh: apt-get could not install ${missing[*]}; tests that need them will be skipped." >&2
        fi
    elif ! find_chromium; then
        echo "No Chromium found: browser tests will be skipped." >&2
        echo "Install one with 'sudo apt-get install chromium' or '.venv/bin/python -m playwright install chromium'." >&2
    fi
fi
echo "Install phase: $((SECONDS - install_start)) s"

test_start=$SECONDS
status=0
.venv/bin/python -m pytest "$@" || status=$?
echo "Test phase: $((SECONDS - test_start)) s"
if [[ $status -eq 5 ]]; then
    echo "test.sh: pytest collected no tests; treating this as an error." >&2
fi
exit "$status"
