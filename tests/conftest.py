from __future__ import annotations

import json
import os
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("CHRONOSCOPE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
REAL_DATA = SHARED / "wikidata-real"
TEST_MODELS = Path(__file__).parent / "data" / "models.yaml"
REFERENCE_MODELS = Path(__file__).parent / "data" / "references.yaml"
SAMPLE_SETTINGS = {
    "per_stratum": 4,
    "self_per_stratum": 2,
    "probe_items_per_type": 1,
    "paraphrase_chains": 4,
}
"""The test session's small evaluation sample, probe and paraphrased subset."""
SAMPLE_HOME_ENV = "CHRONOSCOPE_TEST_SAMPLE_HOME"
TEST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
MODEL_THREADS = max(1, min(2, len(os.sched_getaffinity(0)) // TEST_WORKERS))
"""Threads of the embedded model where a test runs the pipeline: the cores left to each of
the session's workers (``make test`` runs two), as two busy processes of 2 threads each on
2 cores run five times slower than 1 each; answers do not depend on the count
(``test_local_backend``)."""


SAMPLE_HOME_TIMEOUT_S = 2400
"""The per-test bound of a test that uses the sample home: pytest-timeout counts a session
fixture's setup (or the wait for another worker's) in the first test that asks for it, and
building the home (the whole pipeline with the embedded model) takes 4 to 9 minutes on 2
cores, more beside the other worker's tests and CI's compose deployment."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Bound the sample home's tests by ``SAMPLE_HOME_TIMEOUT_S``, and run the first of them
    first and the others last: the worker that runs the first builds the home while the other
    runs the tests that need none, rather than waiting for it."""
    home_tests = [item for item in items if "sample_home" in getattr(item, "fixturenames", ())]
    for item in home_tests:
        own = item.get_closest_marker("timeout")
        if own is None or (own.args and own.args[0] < SAMPLE_HOME_TIMEOUT_S):
            item.add_marker(pytest.mark.timeout(SAMPLE_HOME_TIMEOUT_S), append=False)
    if home_tests:
        first, *later = home_tests
        needing_home = set(home_tests)
        items[:] = [first, *(item for item in items if item not in needing_home), *later]


@pytest.fixture(autouse=True)
def _restore_environment():
    """The command line exports its settings for Dagster's processes; tests call it in process."""
    saved = {
        k: os.environ.get(k) for k in ("CHRONOSCOPE_MODELS", "CHRONOSCOPE_HOME", "DAGSTER_HOME")
    }
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The real Wikidata entities beside the repository (../shared/wikidata-real)."""
    if not (REAL_DATA / "entities.jsonl.gz").exists():
        if os.environ.get("CHRONOSCOPE_REQUIRE_SHARED"):
            pytest.fail(f"real Wikidata test data missing: {REAL_DATA}")
        pytest.skip(f"real Wikidata test data not found at {REAL_DATA} (set CHRONOSCOPE_SHARED)")
    return REAL_DATA


@dataclass(frozen=True)
class CheckOutcome:
    check_name: str
    passed: bool


@dataclass(frozen=True)
class SampleRun:
    """What the tests read of one run of the sample home's build, kept as JSON beside the home
    so that every xdist worker reads the same runs."""

    partition: str | None
    success: bool
    checks: tuple[CheckOutcome, ...]

    @classmethod
    def of(cls, result) -> SampleRun:
        checks = tuple(
            CheckOutcome(e.check_name, e.passed) for e in result.get_asset_check_evaluations()
        )
        return cls(result.dagster_run.tags.get("dagster/partition"), result.success, checks)

    @classmethod
    def from_json(cls, row: dict) -> SampleRun:
        return cls(
            row["partition"], row["success"], tuple(CheckOutcome(**c) for c in row["checks"])
        )


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory, worker_id) -> tuple[Path, list[SampleRun]]:
    """A home with every asset materialized from the embedded sample (the embedded model with
    short answers and the reference systems as models), and its runs. Built once per test
    session: the first xdist worker to ask builds it in the session's shared temporary
    directory, under a file lock, and the others wait for it and read it (tests copy it before
    they change it). ``$CHRONOSCOPE_TEST_SAMPLE_HOME`` names an empty directory to build it in
    instead, which outlives the session: CI's pipeline and check stages go on with it."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    home = Path(os.environ.get(SAMPLE_HOME_ENV) or shared / "sample-home")
    runs = shared / "sample-home-runs.json"
    with FileLock(shared / "sample-home.lock"):
        if not runs.exists():
            if home.exists() and any(home.iterdir()):
                pytest.fail(f"${SAMPLE_HOME_ENV}: {home} is not empty; the tests build the home")
            try:
                built = [asdict(SampleRun.of(result)) for result in _build_sample_home(home)]
            except BaseException:
                runs.write_text(json.dumps({"error": traceback.format_exc()}))
                raise
            runs.write_text(json.dumps({"runs": built}))
    outcome = json.loads(runs.read_text())
    if "error" in outcome:
        pytest.fail(f"building the sample home failed on another worker:\n{outcome['error']}")
    return home, [SampleRun.from_json(row) for row in outcome["runs"]]


def _build_sample_home(home: Path) -> list:
    from chronoscope_dagster.orchestration import run_selection
    from chronoscope_dagster.resources import BenchmarkSettings
    from tests.pipeline_helpers import home_instance

    return run_selection(
        home=str(home),
        models=str(TEST_MODELS),
        model_threads=MODEL_THREADS,
        settings=BenchmarkSettings(**SAMPLE_SETTINGS),
        instance=home_instance(home),
        echo=lambda _: None,
    )


@pytest.fixture(scope="session")
def sample_truth_home(tmp_path_factory):
    """A home with the embedded sample's facts through ``present_day`` (dumps, claims, labels,
    lifespans, intervals and truth of every snapshot): what chain generation reads, built in
    seconds with no model and no evaluation."""
    from chronoscope_dagster.orchestration import run_selection
    from tests.pipeline_helpers import home_instance

    home = tmp_path_factory.mktemp("sample-truth-home")
    run_selection(
        home=str(home), selection="+present_day", instance=home_instance(home), echo=lambda _: None
    )
    return home


@pytest.fixture(scope="session")
def sample_facts(sample_truth_home):
    """The 2025 snapshot of the embedded sample, indexed for chain generation."""
    from chronoscope_dagster.storage.chains import warehouse_facts
    from chronoscope_dagster.warehouse import Warehouse

    return warehouse_facts(Warehouse(sample_truth_home), "2025")


@pytest.fixture(scope="session")
def sample_turns(sample_facts):
    """Every family's turns generated from ``sample_facts`` (seed 0), in the merged layout."""
    import pyarrow as pa

    from chronoscope_dagster.chains.families import FAMILIES
    from chronoscope_dagster.chains.records import generate_family
    from chronoscope_dagster.chains.templates import default_templates

    templates = default_templates()
    tables = [generate_family(sample_facts, f, templates, 0).table for f in FAMILIES]
    turns = pa.concat_tables(tables)
    years = pa.array([sample_facts.snapshot_year] * turns.num_rows, pa.int32())
    return turns.append_column("snapshot_year", years)
