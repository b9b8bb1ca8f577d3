"""The embedded CPU model (or any GGUF / Hugging Face folder) run by transformers in process.

fp32 greedy decoding is deterministic and batch-invariant on CPU, so requests are sorted by
length into batches (less padding) and the answers do not depend on the batch they ran in.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import pydantic

from chronoscope_dagster.llm.base import (
    BackendError,
    BackendOptions,
    ChatRequest,
    Completion,
    Decoding,
)
from chronoscope_dagster.llm.embedded import resolve_model_path


@functools.lru_cache(maxsize=1)
def _load_model(model_name: str, dtype: str) -> tuple[Any, Any]:
    """Tokenizer and model, loaded once per process: the runs of one `chronoscope run` (one per
    setting) share them instead of paying the 20 s load each time."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    folder, gguf = resolve_model_path(model_name)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf:
        kwargs["gguf_file"] = gguf
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # transformers' unconditional GGUF bar
            tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(
                folder, dtype=getattr(torch, dtype), **kwargs
            )
    except (OSError, ValueError) as error:
        raise BackendError(f"cannot load model {model_name!r}: {error}") from error
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    return tokenizer, model


class LocalBackend:
    cacheable: ClassVar[bool] = True

    class Options(BackendOptions):
        threads: int = pydantic.Field(
            default=1,
            ge=1,
            le=256,
            description="torch threads; on a 2-core machine shared with anything else, 1 is "
            "several times faster than 2",
        )
        batch_size: int = pydantic.Field(default=16, ge=1, le=1024)
        dtype: Literal["float32", "bfloat16"] = pydantic.Field(
            default="float32", description="float32 is deterministic across batch sizes"
        )

    def __init__(self, spec: Any) -> None:
        self.model_name: str = spec.model
        self.options: LocalBackend.Options = spec.options
        self._tokenizer: Any = None
        self._model: Any = None

    def identity(self) -> dict[str, Any]:
        return {"backend": "local", "model": self.model_name, "dtype": self.options.dtype}

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]:
        if not requests:
            return []
        self._load()
        prompts = [self._render(request) for request in requests]
        lengths = [len(self._tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        order = sorted(range(len(prompts)), key=lambda i: (lengths[i], i))
        results: list[Completion | None] = [None] * len(prompts)
        size = self.options.batch_size
        for start in range(0, len(order), size):
            batch = order[start : start + size]
            for index, completion in zip(
                batch, self._generate([prompts[i] for i in batch], decoding), strict=True
            ):
                results[index] = completion
        return [r for r in results if r is not None]

    def close(self) -> None:
        self._model = None
        self._tokenizer = None

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch

        torch.set_num_threads(self.options.threads)
        self._tokenizer, self._model = _load_model(self.model_name, self.options.dtype)

    def _render(self, request: ChatRequest) -> str:
        """The model's chat template, or the reference's plain-text layout where it has none."""
        messages = request.as_openai()
        if getattr(self._tokenizer, "chat_template", None):
            return self._tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        lines = [
            content if role == "system" else f"{role.capitalize()}: {content}"
            for role, content in request.messages
        ]
        return "\n".join([*lines, "Assistant:"])

    def _generate(self, prompts: list[str], decoding: Decoding) -> list[Completion]:
        import torch

        tokenizer, model = self._tokenizer, self._model
        inputs = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        k = decoding.k
        sampling = decoding.temperature > 0
        arguments: dict[str, Any] = {
            "max_new_tokens": decoding.max_new_tokens,
            "do_sample": sampling,
            "num_beams": 1 if sampling else k,
            "num_return_sequences": k,
            "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        }
        if sampling:
            arguments.update(temperature=decoding.temperature, top_p=decoding.top_p)
            torch.manual_seed(decoding.seed)
        else:
            arguments.update(temperature=None, top_p=None, top_k=None)
        started = time.perf_counter()
        with torch.inference_mode():
            output = model.generate(**inputs, **arguments)
        latency = (time.perf_counter() - started) / len(prompts)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        generated = (new_tokens != tokenizer.pad_token_id).sum(dim=1).tolist()
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        return [
            Completion(
                candidates=tuple(t.strip() for t in texts[i * k : (i + 1) * k]),
                prompt_tokens=int(prompt_tokens[i]),
                completion_tokens=int(sum(generated[i * k : (i + 1) * k])),
                latency_s=latency,
            )
            for i in range(len(prompts))
        ]
