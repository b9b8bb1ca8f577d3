"""The compose deployment's instance configuration (deploy/dagster.yaml) against the real
PostgreSQL server on 127.0.0.1, in a fresh database per test."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from unittest import mock

import dagster as dg
import pytest
import yaml

from chronoscope_dagster.data import sample_dump_path
from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.llm.registry import load_registry
from chronoscope_dagster.orchestration import run_selection
from chronoscope_dagster.probe.assemble import build_corpus
from chronoscope_dagster.probe.corpus import export_corpus
from chronoscope_dagster.warehouse import Warehouse
from tests.conftest import REFERENCE_MODELS
from tests.deploy_helpers import (
    EVALUATION_ASSETS,
    REPOSITORY,
    backfill_done,
    failed_runs,
    graphql,
    http_ok,
    launch_backfill,
    model_runs,
    run_assets,
    staleness,
    wait_for,
)
from tests.pipeline_helpers import copy_home

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
        assert sorted(instance.get_dynamic_partitions("model")) == [
            "blind",
            "copy_previous",
            "oracle",
            "present_day",
            "scope_blind",
        ]
        records = instance.get_run_records()
        assert len(records) == 2, "the sources' observation, then the materialization"
        assert {r.dagster_run.status for r in records} == {dg.DagsterRunStatus.SUCCESS}
        event = instance.get_latest_materialization_event(dg.AssetKey("probe_corpus"))
        assert event is not None and event.run_id == records[0].dagster_run.run_id
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
    served = {spec.name: spec for spec in load_registry(DEPLOY / "models-gpu.yaml")}["served"]
    vllm = services["vllm"]
    assert served.backend == "openai_compatible"
    assert "--served-model-name served" in vllm["command"] and served.model == "served"
    port = vllm["ports"][0].rsplit(":", 1)[1]
    assert served.options.base_url == f"http://vllm:{port}/v1"
    assert [s.name for s in load_registry(DEPLOY / "models.yaml")] == [
        "local",
        "oracle",
        "present_day",
    ]
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert instance["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    assert instance["storage"]["postgres"]["postgres_db"]["password"] == {
        "env": "DAGSTER_POSTGRES_PASSWORD"
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Servers:
    """The deployment's three Dagster processes, each in its own process session (a shell
    without job control would leave them deaf to SIGINT), stopped by process group."""

    def __init__(self, env: dict[str, str], workdir: Path):
        self.env, self.workdir = env, workdir
        self.processes: list[subprocess.Popen] = []
        self.grpc_port, self.web_port = _free_port(), _free_port()
        self.workspace = workdir / "workspace.yaml"
        deployed = yaml.safe_load((DEPLOY / "workspace.yaml").read_text())
        [entry] = deployed["load_from"]
        entry["grpc_server"].update(host="127.0.0.1", port=self.grpc_port)
        self.workspace.write_text(yaml.safe_dump(deployed))

    def start(self, name: str, *args: str) -> None:
        log = (self.workdir / f"{name}.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [str(BIN / args[0]), *args[1:]],
                env=self.env,
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def start_all(self) -> None:
        self.start(
            "code", "dagster", "api", "grpc", "-h", "127.0.0.1", "-p", str(self.grpc_port),
            "-m", "chronoscope_dagster.definitions",
        )  # fmt: skip
        wait_for(lambda: _grpc_ready(self.grpc_port, self.env), 120, "the code server")
        self.start("daemon", "dagster-daemon", "run", "-w", str(self.workspace))
        self.start(
            "webserver", "dagster-webserver", "-h", "127.0.0.1", "-p", str(self.web_port),
            "-w", str(self.workspace),
        )  # fmt: skip
        wait_for(lambda: http_ok(f"{self.url}/server_info"), 120, "the webserver")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def graphql(self, query: str, **variables) -> dict:
        return graphql(self.url, query, **variables)

    def logs(self) -> str:
        return failed_runs(self.url) + "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.workdir.glob("*.log"))
        )

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


BIN = Path(sys.executable).parent


def _deployment_env(tmp_path: Path, database: str, **chronoscope: str) -> dict[str, str]:
    """The environment of the deployment's processes: the deployed instance configuration on
    the local PostgreSQL database ``database``, and the ``CHRONOSCOPE_*`` settings given."""
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", dagster_home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "DAGSTER_POSTGRES_HOST": "127.0.0.1",
        "DAGSTER_POSTGRES_PORT": "5432",
        "DAGSTER_POSTGRES_USER": "postgres",
        "DAGSTER_POSTGRES_PASSWORD": "unused-with-trust-auth",
        "DAGSTER_POSTGRES_DB": database,
        **chronoscope,
    }


def _grpc_ready(port: int, env: dict[str, str]) -> bool:
    check = subprocess.run(
        [str(BIN / "dagster"), "api", "grpc-health-check", "-p", str(port)],
        env=env,
        capture_output=True,
    )
    return check.returncode == 0


@pytest.mark.timeout(900)
def test_a_new_model_is_evaluated_by_the_sensor_and_by_a_backfill(
    sample_home, postgres_database, tmp_path
):
    """The compose deployment's processes on the real PostgreSQL: the sensor adds a model
    appended to the registry and runs it; a partition added through GraphQL is backfilled
    through GraphQL; materializations and check results are read back through GraphQL."""
    home = copy_home(sample_home[0], tmp_path)
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n  - {name: oracle, backend: oracle}\n")
    env = _deployment_env(
        tmp_path,
        postgres_database,
        CHRONOSCOPE_HOME=str(home),
        CHRONOSCOPE_MODELS=str(registry),
        CHRONOSCOPE_DUCKDB_THREADS="1",
    )
    servers = Servers(env, tmp_path)
    try:
        servers.start_all()

        def finished_runs(model: str) -> list[dict] | None:
            mine = model_runs(servers.url, model)
            if len(mine) < len(SETTINGS) + 1 or any(
                r["status"] not in ("SUCCESS", "FAILURE", "CANCELED") for r in mine
            ):
                return None
            return mine

        sensor_runs = wait_for(
            lambda: finished_runs("oracle"), 400, "the sensor's runs", servers.logs
        )
        assert {r["status"] for r in sensor_runs} == {"SUCCESS"}, servers.logs()
        assert len(sensor_runs) == len(SETTINGS) + 1, "every setting and the probe"

        added = servers.graphql(
            """mutation Add($repo: RepositorySelector!, $key: String!) {
                addDynamicPartition(repositorySelector: $repo, partitionsDefName: "model",
                                    partitionKey: $key) {
                    __typename ... on AddDynamicPartitionSuccess { partitionKey } } }""",
            repo=REPOSITORY,
            key="present_day",
        )["addDynamicPartition"]
        assert added == {"__typename": "AddDynamicPartitionSuccess", "partitionKey": "present_day"}
        registry.write_text(
            registry.read_text() + "  - {name: present_day, backend: present_day}\n"
        )
        keys = [f"present_day|{setting}" for setting in SETTINGS]
        backfill = launch_backfill(servers.url, EVALUATION_ASSETS, keys, "evaluate present_day")
        status = wait_for(
            lambda: backfill_done(servers.url, backfill), 400, "the backfill", servers.logs
        )
        assert status == "COMPLETED_SUCCESS", servers.logs()

        materialized = servers.graphql(
            """query Events($keys: [String!]) { assetOrError(assetKey: {path: ["metrics"]}) {
                ... on Asset { assetMaterializations(partitions: $keys) { partition runId } } } }""",
            keys=keys,
        )["assetOrError"]["assetMaterializations"]
        assert sorted(m["partition"] for m in materialized) == sorted(keys)
        for check in ("metrics_reference_systems_behave", "metrics_in_range_and_consistent"):
            executions = servers.graphql(
                """query Checks($name: String!) { assetCheckExecutions(
                    assetKey: {path: ["metrics"]}, checkName: $name, limit: 20) {
                    status runId } }""",
                name=check,
            )["assetCheckExecutions"]
            by_run = {e["runId"]: e["status"] for e in executions}
            assert {by_run.get(run) for run in {m["runId"] for m in materialized}} == {
                "SUCCEEDED"
            }, executions
            assert len(executions) == 2 * len(SETTINGS), "every setting of each model, one a run"
    finally:
        servers.stop()
    store = Warehouse(home)
    for setting in SETTINGS:
        assert store.has("metrics", model="present_day", setting=setting)
        assert store.has("metrics", model="oracle", setting=setting)


PROBE_STALENESS = """{ assetNodes(assetKeys: [{path: ["probe_corpus"]}]) {
    staleStatus staleCauses { key { path } reason } } }"""
RELOAD = """mutation Reload($location: String!) { reloadRepositoryLocation(
    repositoryLocationName: $location) { __typename } }"""
SETTINGS_SOURCES = (
    "chain_import",
    "sample_settings",
    "paraphrase_settings",
    "probe_source",
    "probe_run_settings",
)


@pytest.mark.timeout(900)
def test_the_ui_marks_what_a_changed_dump_feeds_stale_and_a_rerun_rebuilds_exactly_it(
    postgres_database, tmp_path
):
    """The deployment's processes on the real PostgreSQL, with the 2025 dump a file named in
    the settings file: after the file changes, an observation launched through GraphQL makes
    the webserver report claims [2025] stale (and 2024 fresh); `chronoscope run` then
    rebuilds exactly that partition's run, and the webserver reports it fresh. Likewise a
    setting: a probe file named in the settings file, once the code location is reloaded and
    the settings observed, makes probe_corpus stale."""
    dump = tmp_path / "dump-2025.json.gz"
    shutil.copy(sample_dump_path("2022"), dump)
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump({"dumps": {"2025": str(dump)}}))
    home = tmp_path / "data"
    env = _deployment_env(
        tmp_path,
        postgres_database,
        CHRONOSCOPE_HOME=str(home),
        CHRONOSCOPE_MODELS=str(REFERENCE_MODELS),
        CHRONOSCOPE_SETTINGS=str(settings),
    )

    def rerun() -> list[str]:
        lines: list[str] = []
        with mock.patch.dict(os.environ, env), dg.DagsterInstance.get() as instance:
            run_selection(
                home=str(home), selection="key:claims or key:probe_corpus",
                dumps={"2025": str(dump)}, models=str(REFERENCE_MODELS), instance=instance,
                echo=lines.append,
            )  # fmt: skip
        return [line for line in lines if line.startswith("==> ")]

    assert len(rerun()) == 5
    servers = Servers(env, tmp_path)
    try:
        servers.start_all()

        def claims() -> dict[str, tuple[str, list[str]]]:
            return staleness(servers.url, "claims", ["2024", "2025"])

        assert claims() == {"2024": ("FRESH", []), "2025": ("FRESH", [])}
        shutil.copy(sample_dump_path("2023"), dump)
        assert run_assets(servers.url, ["wikidata_dump"]) == "SUCCESS", servers.logs()
        assert claims() == {
            "2024": ("FRESH", []),
            "2025": ("STALE", ["wikidata_dump has a new data version"]),
        }
        assert rerun() == ["==> claims, labels, lifespans [2025]"]
        assert claims() == {"2024": ("FRESH", []), "2025": ("FRESH", [])}

        probe_file = tmp_path / "probe.json"
        export_corpus(build_corpus(2, 0), probe_file)
        settings.write_text(
            yaml.safe_dump({"dumps": {"2025": str(dump)}, "probe_file": str(probe_file)})
        )
        reloaded = servers.graphql(RELOAD, location=REPOSITORY["repositoryLocationName"])
        assert reloaded["reloadRepositoryLocation"]["__typename"] == "WorkspaceLocationEntry"
        assert run_assets(servers.url, list(SETTINGS_SOURCES)) == "SUCCESS", servers.logs()
        [probe] = servers.graphql(PROBE_STALENESS)["assetNodes"]
        assert probe["staleStatus"] == "STALE", probe
        assert [c["key"]["path"][0] for c in probe["staleCauses"]] == ["probe_source"]
    finally:
        servers.stop()
