"""Registry breaks found by an adversarial run: out-of-range numbers accepted at load time and
lost entries under concurrent ``chronoscope models add``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronoscope_dagster.llm.registry import RegistryError, load_registry

BIG = 10**23
REMOTE = "backend: openai_compatible, model: m, options: {base_url: 'http://127.0.0.1:1/v1'"


@pytest.mark.parametrize(
    ("entry", "field", "value"),
    [
        (f"{{name: huge, backend: oracle, seed: {BIG}}}", "seed", str(BIG)),
        ("{name: huge, backend: oracle, seed: -1}", "seed", "-1"),
        ("{name: huge, backend: oracle, max_new_tokens: -5}", "max_new_tokens", "-5"),
        (
            "{name: huge, backend: oracle, max_new_tokens: 1000000000}",
            "max_new_tokens",
            "1000000000",
        ),
        ("{name: huge, backend: oracle, temperature: 2.5}", "temperature", "2.5"),
        ("{name: huge, backend: oracle, temperature: .nan}", "temperature", "nan"),
        (f"{{name: huge, {REMOTE}, timeout_s: .inf}}}}", "options.timeout_s", "inf"),
        (f"{{name: huge, {REMOTE}, backoff_max_s: 1.0e+300}}}}", "options.backoff_max_s", "1e+300"),
        (
            f"{{name: huge, {REMOTE}, extra_body: {{top_k: {BIG}}}}}}}",
            "options.extra_body.top_k",
            str(BIG),
        ),
        (
            "{name: huge, backend: gemini, model: g, options: {thinking_budget: 4294967296}}",
            "options.thinking_budget",
            "4294967296",
        ),
        (
            f"{{name: huge, backend: local, model: x, options: {{batch_size: {BIG}}}}}",
            "options.batch_size",
            str(BIG),
        ),
    ],
)
def test_registry_number_out_of_range_is_refused_at_load_naming_model_field_and_value(
    tmp_path: Path, entry: str, field: str, value: str
) -> None:
    registry = tmp_path / "models.yaml"
    registry.write_text(f"models:\n  - {{name: fine, backend: oracle}}\n  - {entry}\n")
    with pytest.raises(RegistryError) as raised:
        load_registry(registry)
    message = str(raised.value)
    assert "model #2 ('huge')" in message
    assert f"field `{field}`" in message
    assert f"got {value}" in message


def test_registry_numbers_in_range_still_load(tmp_path: Path) -> None:
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n"
        "  - {name: a, backend: oracle, seed: 2147483647, temperature: 2.0, max_new_tokens: 4096}\n"
        f"  - {{name: b, {REMOTE}, timeout_s: 3600, extra_body: {{top_k: 40, min_p: 0.05}}}}}}\n"
    )
    a, b = load_registry(registry)
    assert a.decoding.seed == 2**31 - 1
    assert b.options.extra_body == {"top_k": 40, "min_p": 0.05}


def _add(registry: Path, name: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("CHRONOSCOPE_MODELS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "chronoscope_dagster.cli", "models", "add", "--models",
         str(registry), name, "--backend", "oracle"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


@pytest.mark.timeout(300)
@pytest.mark.parametrize("exists", [True, False], ids=["existing", "created"])
def test_ten_parallel_models_add_all_end_up_in_the_registry(tmp_path: Path, exists: bool) -> None:
    registry = tmp_path / "models.yaml"
    if exists:
        registry.write_text("# mine\nmodels:\n  - {name: oracle, backend: oracle}\n")
    names = [f"parallel-{index}" for index in range(10)]
    processes = [_add(registry, name) for name in names]
    results = [process.communicate(timeout=240) for process in processes]
    assert [process.returncode for process in processes] == [0] * 10, results
    assert all("added" in out for out, _ in results)
    registered = [spec.name for spec in load_registry(registry)]
    assert sorted(set(registered) & set(names)) == sorted(names)
    assert len(registered) == len(set(registered))
    created = sum("created" in out for out, _ in results)
    assert created == (0 if exists else 1)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_models_add_keeps_the_registry_file_mode(tmp_path: Path, capsys) -> None:
    from chronoscope_dagster.cli import main

    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n  - {name: oracle, backend: oracle}\n")
    registry.chmod(0o600)
    assert main(["models", "add", "--models", str(registry), "echo", "--backend", "oracle"]) == 0
    assert registry.stat().st_mode & 0o777 == 0o600
    assert [spec.name for spec in load_registry(registry)] == ["oracle", "echo"]
