"""The compose deployment's instance configuration (deploy/dagster.yaml) against the real
PostgreSQL server on 127.0.0.1, in a fresh database per test."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import dagster as dg
import pytest
import yaml

from chronoscope_dagster.orchestration import run_selection
from tests.conftest import REFERENCE_MODELS

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


@pytest.fixture
def postgres_database():
    import psycopg2

    try:
        connection = psycopg2.connect(
            host="127.0.0.1", port=5432, user="postgres", dbname="postgres"
        )
    except psycopg2.OperationalError as error:
        if os.environ.get("CHRONOSCOPE_REQUIRE_SHARED"):
            pytest.fail(f"PostgreSQL is not reachable on 127.0.0.1:5432: {error}")
        pytest.skip(f"PostgreSQL is not reachable on 127.0.0.1:5432: {error}")
    connection.autocommit = True
    name = f"chronoscope_test_{uuid.uuid4().hex[:12]}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    yield name
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE {name} WITH (FORCE)")
    connection.close()


def test_the_deployment_instance_keeps_runs_in_postgres(postgres_database, tmp_path, monkeypatch):
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", dagster_home / "dagster.yaml")
    for key, value in {
        "DAGSTER_POSTGRES_HOST": "127.0.0.1",
        "DAGSTER_POSTGRES_PORT": "5432",
        "DAGSTER_POSTGRES_USER": "postgres",
        "DAGSTER_POSTGRES_PASSWORD": "unused-with-trust-auth",
        "DAGSTER_POSTGRES_DB": postgres_database,
        "DAGSTER_HOME": str(dagster_home),
    }.items():
        monkeypatch.setenv(key, value)
    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        run_selection(
            home=str(tmp_path / "data"),
            selection="probe_corpus",
            models=str(REFERENCE_MODELS),
            instance=instance,
            echo=lambda _: None,
        )
        assert sorted(instance.get_dynamic_partitions("model")) == ["oracle", "present_day"]
        [record] = instance.get_run_records()
        assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        event = instance.get_latest_materialization_event(dg.AssetKey("probe_corpus"))
        assert event is not None and event.run_id == record.dagster_run.run_id
        [check] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("probe_corpus"), "probe_corpus_valid"), limit=5
        )
        assert check.status.value == "SUCCEEDED"


def test_compose_binds_ports_to_loopback_and_reads_secrets_from_the_environment():
    compose = yaml.safe_load((DEPLOY.parent / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "code", "webserver", "daemon", "vllm"} <= set(services)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert services["vllm"]["profiles"] == ["gpu"]
    text = (DEPLOY.parent / "docker-compose.yml").read_text()
    assert "DAGSTER_POSTGRES_PASSWORD:?" in text, "the password has no default"
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert instance["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    assert instance["storage"]["postgres"]["postgres_db"]["password"] == {
        "env": "DAGSTER_POSTGRES_PASSWORD"
    }
