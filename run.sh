#!/usr/bin/env bash
# Start Transformer Explorer on a fresh machine: create .venv if needed, install requirements.txt, run the app.
# Extra arguments go to `streamlit run`, e.g. ./run.sh --server.port 8600
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
    echo "run.sh: no python3 found; install Python 3.11 or newer." >&2
    return 1
}

if [[ ! -x .venv/bin/python ]]; then
    python_bin="$(pick_python)"
    echo "Creating .venv with $python_bin"
    "$python_bin" -m venv .venv
fi

start=$SECONDS
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
echo "Dependencies ready in $((SECONDS - start)) s"

exec .venv/bin/python -m streamlit run app.py "$@"
