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
stamp="$venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -e "$stamp" ]; then
    echo "setup: installing the project and its dependencies (about a minute)"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e '.[dev]'
    rm -f "$venv"/.installed-*
    touch "$stamp"
fi
