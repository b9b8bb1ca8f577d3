"""Convert a GGUF file to a Hugging Face safetensors folder, for engines that cannot read GGUF.

vLLM 0.32 dropped GGUF support, so the embedded model reaches it as a folder. transformers
dequantizes the GGUF on load but refuses to save a GGUF-loaded model, so the weights are moved
into a fresh model built from the same config (without its ``quantization_config``) and that
is saved. Nothing is ever downloaded.

    python -m chronoscope_dagster.llm.convert OUT_DIR [--gguf FILE] [--dtype float32|bfloat16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DTYPES = ("float32", "bfloat16", "float16")
MARKER = "conversion.json"
REQUIRED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    MARKER,
)


def convert_gguf(gguf: Path, out_dir: Path, dtype: str = "float32") -> Path:
    """Write ``out_dir`` (config, safetensors weights, tokenizer, chat template, generation
    config) from ``gguf`` and return it.

    A no-op when ``out_dir`` already holds a complete conversion of the same file to the same
    dtype; a stale conversion is replaced, and any other non-empty folder is an error. The
    folder is written beside ``out_dir`` under a temporary name and renamed, so readers never
    see half of it and concurrent conversions are safe. fp32 keeps the dequantized weights
    exactly; bfloat16 halves the folder and rounds them.
    """
    gguf = Path(gguf).expanduser().resolve()
    out_dir = Path(out_dir).expanduser().absolute()
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if not gguf.is_file():
        raise FileNotFoundError(f"no such GGUF file: {gguf}")
    provenance = _provenance(gguf, dtype)
    if is_complete(out_dir, provenance):
        return out_dir
    if out_dir.exists() and not (out_dir / MARKER).is_file() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} exists and is not a conversion; choose another folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{uuid.uuid4().hex[:12]}")
    tmp.mkdir()
    try:
        _write(gguf, tmp, dtype)
        (tmp / MARKER).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
        mode = (tmp / MARKER).stat().st_mode & 0o777
        for path in tmp.iterdir():
            path.chmod(mode)
        _replace(tmp, out_dir, provenance)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def is_complete(out_dir: Path, provenance: dict[str, Any] | None = None) -> bool:
    """Whether ``out_dir`` holds every file of a conversion (of ``provenance``, if given)."""
    if not all((out_dir / name).is_file() for name in REQUIRED_FILES):
        return False
    if provenance is None:
        return True
    try:
        return json.loads((out_dir / MARKER).read_text(encoding="utf-8")) == provenance
    except (OSError, ValueError):
        return False


def _provenance(gguf: Path, dtype: str) -> dict[str, Any]:
    return {"source": gguf.name, "source_bytes": gguf.stat().st_size, "dtype": dtype}


def _write(gguf: Path, out_dir: Path, dtype: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = getattr(torch, dtype)
    tokenizer = AutoTokenizer.from_pretrained(
        gguf.parent, gguf_file=gguf.name, local_files_only=True
    )
    loaded = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch_dtype, local_files_only=True
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    del loaded
    model.save_pretrained(out_dir)
    for key in ("is_local", "local_files_only"):
        tokenizer.init_kwargs.pop(key, None)
    tokenizer.save_pretrained(out_dir)


def _replace(tmp: Path, out_dir: Path, provenance: dict[str, Any]) -> None:
    """Rename ``tmp`` to ``out_dir``, moving a stale conversion out of the way first."""
    stale = out_dir.with_name(f".{out_dir.name}.stale-{tmp.name.rsplit('-', 1)[-1]}")
    if out_dir.exists():
        if is_complete(out_dir, provenance):
            return
        out_dir.rename(stale)
    try:
        tmp.rename(out_dir)
    except OSError:
        if not is_complete(out_dir, provenance):
            raise
    finally:
        shutil.rmtree(stale, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    from chronoscope_dagster.llm.embedded import embedded_gguf

    parser = argparse.ArgumentParser(
        prog="python -m chronoscope_dagster.llm.convert",
        description="Convert a GGUF model to a Hugging Face safetensors folder (offline).",
    )
    parser.add_argument("out_dir", type=Path, help="folder to write")
    parser.add_argument(
        "--gguf", type=Path, default=None, help="GGUF file (default: the embedded model)"
    )
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="weight dtype")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        gguf = args.gguf or embedded_gguf()
        out = convert_gguf(gguf, args.out_dir, args.dtype)
    except (OSError, ValueError, RuntimeError) as error:
        print(f"convert: {error}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
