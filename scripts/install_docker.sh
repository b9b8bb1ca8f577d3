#!/usr/bin/env bash
# Installs what the compose test needs from Debian's packages when it is missing: the Docker
# engine (docker.io), docker-compose and debootstrap (scripts/local_base_image.sh).
set -euo pipefail
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 \
    || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if ((${#missing[@]})); then
    echo "installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
