"""GGUF → Hugging Face folder conversion of the embedded model (about a minute, one thread)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chronoscope_dagster.llm.convert import REQUIRED_FILES, convert_gguf, main
from chronoscope_dagster.llm.embedded import embedded_gguf

SYSTEM = "You are a concise assistant for temporal questions. Answer with a short name only."
QUESTIONS = (
    "In 2010, who was the Prime Minister of the United Kingdom?",
    "In 2015, who was the Chancellor of Germany?",
    "In 2014, who was the Secretary-General of the United Nations?",
)


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory, one_thread: None) -> Path:
    return convert_gguf(embedded_gguf(), tmp_path_factory.mktemp("convert") / "smollm2")


def test_folder_has_every_file_and_reconverting_is_a_no_op(converted: Path) -> None:
    for name in (*REQUIRED_FILES, "chat_template.jinja"):
        assert (converted / name).is_file(), name
    weights = converted / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert convert_gguf(embedded_gguf(), converted) == converted
    assert weights.stat().st_mtime_ns == before
    assert not [p.name for p in converted.parent.iterdir() if p.name.startswith(".")]


def test_cli_reuses_a_complete_folder(converted: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(converted)]) == 0
    assert capsys.readouterr().out.strip() == str(converted)


def test_refuses_a_foreign_folder_and_bad_dtype(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        convert_gguf(embedded_gguf(), tmp_path / "mine")
    with pytest.raises(ValueError, match="dtype"):
        convert_gguf(embedded_gguf(), tmp_path / "other", dtype="int8")
    assert main([str(tmp_path / "x"), "--gguf", str(tmp_path / "missing.gguf")]) == 1


def test_folder_generates_what_the_gguf_generates(converted: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = embedded_gguf()
    source = {"pretrained_model_name_or_path": gguf.parent, "gguf_file": gguf.name}
    gguf_tokenizer = AutoTokenizer.from_pretrained(**source, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(converted, local_files_only=True)
    assert tokenizer.chat_template == gguf_tokenizer.chat_template
    assert "<|im_start|>" in tokenizer.chat_template

    gguf_model = AutoModelForCausalLM.from_pretrained(
        **source, dtype=torch.float32, local_files_only=True
    )
    model = AutoModelForCausalLM.from_pretrained(
        converted, dtype=torch.float32, local_files_only=True
    )
    assert model.dtype == torch.float32
    for question in QUESTIONS:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )["input_ids"]
        gguf_ids = gguf_tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )["input_ids"]
        assert ids.tolist() == gguf_ids.tolist()
        settings = {"max_new_tokens": 12, "do_sample": False, "pad_token_id": 2}
        with torch.no_grad():
            expected = gguf_model.generate(ids, **settings)[0, ids.shape[1] :]
            actual = model.generate(ids, **settings)[0, ids.shape[1] :]
        assert actual.tolist() == expected.tolist()
        assert tokenizer.decode(actual, skip_special_tokens=True).strip()
