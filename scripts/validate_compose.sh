#!/usr/bin/env bash
# Validates docker-compose.yml with Debian's docker-compose 1.29, whose `config` interpolates
# the file and checks it against the Compose schema without a Docker engine (none runs on the
# CI machines); installs the package when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v docker-compose >/dev/null 2>&1; then
    echo "installing Debian's docker-compose (used for \`docker-compose config\` only)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
export DAGSTER_POSTGRES_PASSWORD=validation-only
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml --profile gpu config -q
if env -u DAGSTER_POSTGRES_PASSWORD docker-compose -f docker-compose.yml config -q 2>/dev/null; then
    echo "docker-compose.yml: DAGSTER_POSTGRES_PASSWORD must have no default" >&2
    exit 1
fi
echo "docker-compose.yml is valid ($(docker-compose -f docker-compose.yml --profile gpu config --services | tr '\n' ' '))"
