from __future__ import annotations

import pytest

from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.registry import (
    RegistryError,
    load_registry,
    parse_entries,
    parse_entry,
)


def test_shipped_registry_has_the_embedded_model_and_the_reference_systems():
    specs = {spec.name: spec for spec in load_registry()}
    assert list(specs) == ["local", "oracle", "present_day"]
    assert specs["local"].backend == "local"
    assert specs["local"].model == "smollm2-135m-instruct"
    assert specs["local"].decoding == Decoding(max_new_tokens=24, temperature=0.0, k=1)
    assert specs["local"].options.threads == 1
    assert specs["local"].options.dtype == "float32"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"backend": "local", "model": "x"}, "field `name`: Field required"),
        ({"name": "a b", "backend": "oracle"}, "field `name`: 'a b' must be"),
        ({"name": "m", "backend": "llama"}, "field `backend`: 'llama' is not one of"),
        ({"name": "m", "backend": "local"}, "field `model` is required for backend local"),
        ({"name": "m", "backend": "oracle", "temprature": 0.5}, "field `temprature`: unknown"),
        ({"name": "m", "backend": "oracle", "k": 0}, "field `k`: Input should be greater"),
        (
            {"name": "m", "backend": "local", "model": "x", "options": {"threads": "many"}},
            "field `options.threads`: Input should be a valid integer",
        ),
        (
            {"name": "m", "backend": "local", "model": "x", "options": {"thread": 2}},
            "field `options.thread`: unknown field",
        ),
        (
            {"name": "m", "backend": "local", "model": "x", "options": {"dtype": "int8"}},
            "field `options.dtype`",
        ),
    ],
)
def test_an_invalid_entry_names_the_field(entry, message):
    with pytest.raises(RegistryError, match="model #1") as raised:
        parse_entries([entry], source="models.yaml")
    assert message in str(raised.value)
    assert str(raised.value).startswith("models.yaml: model #1")


def test_names_are_unique():
    with pytest.raises(RegistryError, match="field `name`: 'oracle' is used twice"):
        parse_entries([{"name": "oracle", "backend": "oracle"}] * 2)


def test_registry_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "none.yaml"
    with pytest.raises(RegistryError, match="does not exist"):
        load_registry(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [\n")
    with pytest.raises(RegistryError, match="not valid YAML"):
        load_registry(broken)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("- name: x\n")
    with pytest.raises(RegistryError, match="a list `models`"):
        load_registry(wrong)


def test_decoding_fields_reach_the_spec():
    spec = parse_entry(
        {"name": "m", "backend": "oracle", "max_new_tokens": 8, "k": 3, "temperature": 0.7}
    )
    assert spec.decoding == Decoding(max_new_tokens=8, temperature=0.7, k=3)
