#!/usr/bin/env bash
# Builds the compose deployment's images on this machine: from the public base images when a
# registry answers, else FROM the Debian base of scripts/local_base_image.sh, with torch's CPU
# wheel served on 127.0.0.1 from TORCH_WHEELS (default /opt/wheels) when it holds one.
# Prints the compose file options to use with the images it built. Layers are cached, so a
# rebuild after a change of the code takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_docker.sh >&2
files=(-f docker-compose.yml)
if [[ ${CHRONOSCOPE_LOCAL_BASE:-auto} == auto ]]; then
    if timeout 60 docker pull -q python:3.11-slim >/dev/null 2>&1 \
        && timeout 60 docker pull -q postgres:16 >/dev/null 2>&1; then
        CHRONOSCOPE_LOCAL_BASE=0
    else
        CHRONOSCOPE_LOCAL_BASE=1
    fi
fi
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; true' EXIT
if [[ $CHRONOSCOPE_LOCAL_BASE == 1 ]]; then
    echo "no registry: building FROM the local Debian base" >&2
    scripts/local_base_image.sh >&2
    files+=(-f docker-compose.local-base.yml)
    wheels=${TORCH_WHEELS:-/opt/wheels}
    if compgen -G "$wheels/torch-*cpu*.whl" >/dev/null; then
        # a fixed port: the URL is part of the dependency layer's cache key
        port=${TORCH_WHEELS_PORT:-38471}
        python3 -m http.server --bind 127.0.0.1 --directory "$wheels" "$port" >/dev/null 2>&1 &
        server=$!
        for _ in $(seq 50); do
            curl -fs "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
            sleep 0.1
        done
        export CHRONOSCOPE_TORCH_FIND_LINKS="http://127.0.0.1:$port/"
    fi
fi
DAGSTER_POSTGRES_PASSWORD=${DAGSTER_POSTGRES_PASSWORD:-build-only} \
    docker compose "${files[@]}" build "$@" >&2
echo "${files[*]}"
