from __future__ import annotations

from datetime import date

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
    assert list(specs) == [
        "local", "oracle", "present_day", "present_day_2023", "copy_previous", "scope_blind",
        "blind",
    ]  # fmt: skip
    assert specs["present_day_2023"].knowledge_cutoff == date(2023, 12, 31)
    assert all(
        spec.knowledge_cutoff is None for spec in specs.values() if spec.name != "present_day_2023"
    )
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


def test_models_add_appends_a_validated_entry_and_keeps_comments(tmp_path, capsys):
    from chronoscope_dagster.cli import main

    registry = tmp_path / "models.yaml"
    registry.write_text("# my models\nmodels:\n  - {name: oracle, backend: oracle}  # reference\n")
    add = ["models", "add", "--models", str(registry)]
    served = [
        "served", "--backend", "openai_compatible", "--model", "qwen", "--max-new-tokens", "32",
        "--option", "base_url=http://127.0.0.1:8000/v1", "--option", "concurrency=8",
    ]  # fmt: skip
    assert main([*add, *served]) == 0
    assert "added served (openai_compatible, qwen)" in capsys.readouterr().out
    text = registry.read_text()
    assert text.startswith("# my models\n") and "# reference" in text
    oracle, entry = load_registry(registry)
    assert (oracle.name, entry.name, entry.decoding.max_new_tokens) == ("oracle", "served", 32)
    assert entry.options.base_url == "http://127.0.0.1:8000/v1"
    assert entry.options.concurrency == 8

    assert main([*add, *served]) == 2
    assert "already registered" in capsys.readouterr().err
    bad = [
        "bad",
        "--backend",
        "local",
        "--model",
        "smollm2-135m-instruct",
        "--option",
        "threads=many",
    ]
    assert main([*add, *bad]) == 2
    assert "options.threads" in capsys.readouterr().err
    assert main([*add, "odd", "--backend", "oracle", "--option", "novalue"]) == 2
    assert registry.read_text() == text, "a refused entry leaves the file as it was"

    fresh = tmp_path / "sub" / "fresh.yaml"
    assert main(["models", "add", "--models", str(fresh), "echo", "--backend", "oracle"]) == 0
    assert "created" in capsys.readouterr().out
    shipped = [spec.name for spec in load_registry()]
    assert [spec.name for spec in load_registry(fresh)] == [*shipped, "echo"]


def test_models_add_needs_a_registry_file(monkeypatch, capsys):
    from chronoscope_dagster.cli import main

    monkeypatch.delenv("CHRONOSCOPE_MODELS", raising=False)
    assert main(["models", "add", "echo", "--backend", "oracle"]) == 2
    assert "the shipped registry is read-only" in capsys.readouterr().err


def test_model_name_with_a_trailing_newline_is_refused(tmp_path, capsys):
    from chronoscope_dagster.cli import main

    registry = tmp_path / "models.yaml"
    assert main(["models", "add", "--models", str(registry), "nl\n", "--backend", "oracle"]) == 2
    assert "field `name`" in capsys.readouterr().err
    assert not registry.exists()


def test_model_names_differing_only_in_case_are_refused(tmp_path, capsys):
    from chronoscope_dagster.cli import main

    with pytest.raises(RegistryError, match="differs from 'oracle' only in case"):
        parse_entries(
            [{"name": "oracle", "backend": "oracle"}, {"name": "Oracle", "backend": "oracle"}]
        )
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n  - {name: oracle, backend: oracle}\n")
    assert main(["models", "add", "--models", str(registry), "Oracle", "--backend", "oracle"]) == 2
    assert "only in case" in capsys.readouterr().err


def test_a_100k_character_model_name_gives_a_short_message(tmp_path, capsys):
    from chronoscope_dagster.cli import main

    registry = tmp_path / "models.yaml"
    assert (
        main(["models", "add", "--models", str(registry), "x" * 100_000, "--backend", "oracle"])
        == 2
    )
    assert len(capsys.readouterr().err) < 1000
    with pytest.raises(RegistryError) as raised:
        parse_entries([{"name": "y" * 100_000, "backend": "oracle"}], source="models.yaml")
    assert len(str(raised.value)) < 1000


def test_option_with_a_yaml_tag_is_a_clear_error(tmp_path, capsys):
    from chronoscope_dagster.cli import main

    registry = tmp_path / "models.yaml"
    argv = ["models", "add", "--models", str(registry), "m", "--backend", "oracle"]
    assert main([*argv, "--option", "x=!!python/object/apply:os.system [id]"]) == 2
    assert "--option x: not a plain YAML value" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command", [["run"], ["models", "list"], ["models", "add", "m", "--backend", "oracle"]]
)
def test_models_option_naming_a_directory_is_a_clear_error(tmp_path, capsys, command):
    from chronoscope_dagster.cli import main

    argv = [*command, "--models", str(tmp_path)]
    if command == ["run"]:
        argv += ["--home", str(tmp_path / "home")]
    assert main(argv) == 2
    assert "is a directory" in capsys.readouterr().err


def test_the_thread_override_reaches_local_models_only(tmp_path, capsys):
    from chronoscope_dagster.cli import main
    from chronoscope_dagster.resources.models import ModelRegistry

    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n  - {name: local, backend: local, model: smollm2-135m-instruct}\n"
        "  - {name: oracle, backend: oracle}\n"
    )
    kept = {s.name: s for s in ModelRegistry(path=str(registry)).specs()}
    assert kept["local"].options.threads == 1
    threaded = {s.name: s for s in ModelRegistry(path=str(registry), threads=2).specs()}
    assert threaded["local"].options.threads == 2
    assert threaded["local"].options.batch_size == kept["local"].options.batch_size
    assert threaded["oracle"] == kept["oracle"]
    assert ModelRegistry(threads=2).embedded().options.threads == 2
    assert main(["run", "--home", str(tmp_path / "h"), "--threads", "-1"]) == 2
    assert "--threads must be at least 0" in capsys.readouterr().err
