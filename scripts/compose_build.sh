#!/usr/bin/env bash
# Builds the compose deployment's images on this machine: from the public base images when a
# registry answers, else FROM the Debian base of scripts/local_base_image.sh, with torch's CPU
# wheel served on 127.0.0.1 from TORCH_WHEELS (default /opt/wheels) when it holds one, and
# every dependency from a wheelhouse of the host's .venv (CHRONOSCOPE_WHEELHOUSE, default
# /var/tmp/chronoscope-wheelhouse) when `make setup` made one; the wheelhouse is filled while
# debootstrap runs, and PostgreSQL's image builds while the app's does.
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
servers=()
trap 'for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null; done; true' EXIT
serve() { # serve DIR PORT: DIR over HTTP on 127.0.0.1:PORT, for the builds (network: host)
    python3 -m http.server --bind 127.0.0.1 --directory "$1" "$2" >/dev/null 2>&1 &
    servers+=($!)
    for _ in $(seq 50); do
        curl -fs "http://127.0.0.1:$2/" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
}
# The wheels of the host's .venv (made by `make setup` from the same pyproject.toml, so the
# versions the image would resolve), fetched by the host's pip from wherever it found them
# (its cache, a local index), into a wheelhouse the dependency layer installs from without
# the network. Only a speedup: when it is incomplete, the layer resolves from the indexes.
wheelhouse() {
    local venv=${CHRONOSCOPE_HOST_VENV:-.venv} dir=$1
    [[ -x $venv/bin/python ]] && compgen -G "$venv/.installed-*" >/dev/null || return 1
    mkdir -p "$dir"
    "$venv/bin/python" -m pip freeze --all --exclude-editable 2>/dev/null \
        | grep -v -E '^(pip|chronoscope-dagster)==' | grep '==' >"$dir/requirements.txt" || return 1
    # four pips at once: each waits on the indexes more than it computes
    split -n l/4 "$dir/requirements.txt" "$dir/.part-"
    local failed=0 part pids=()
    for part in "$dir"/.part-*; do
        "$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$dir" \
            -r "$part" >"$part.log" 2>&1 &
        pids+=($!)
    done
    for part in "${pids[@]}"; do wait "$part" || failed=1; done
    ((failed)) && cat "$dir"/.part-*.log
    rm -f "$dir"/.part-*
    return $failed
}
build=(docker compose "${files[@]}")
if [[ $CHRONOSCOPE_LOCAL_BASE == 1 ]]; then
    echo "no registry: building FROM the local Debian base" >&2
    wheels=${TORCH_WHEELS:-/opt/wheels}
    house=${CHRONOSCOPE_WHEELHOUSE:-/var/tmp/chronoscope-wheelhouse}
    started=$SECONDS
    wheelhouse "$house" >&2 &
    housed=$!
    scripts/local_base_image.sh >&2
    echo "base image ready after $((SECONDS - started)) s" >&2
    build+=(-f docker-compose.local-base.yml)
    files+=(-f docker-compose.local-base.yml)
    if compgen -G "$wheels/torch-*cpu*.whl" >/dev/null; then
        # fixed ports: the URLs are part of the dependency layer's cache key
        port=${TORCH_WHEELS_PORT:-38471}
        serve "$wheels" "$port"
        export CHRONOSCOPE_TORCH_FIND_LINKS="http://127.0.0.1:$port/"
    fi
    if wait "$housed"; then
        echo "wheelhouse of the host's .venv ready after $((SECONDS - started)) s: $house" >&2
        port=${WHEELHOUSE_PORT:-38472}
        serve "$house" "$port"
        export CHRONOSCOPE_WHEELHOUSE_URL="http://127.0.0.1:$port/"
    else
        echo "no wheelhouse (no set-up .venv, or its pip could not fetch every wheel)" >&2
    fi
fi
export DAGSTER_POSTGRES_PASSWORD=${DAGSTER_POSTGRES_PASSWORD:-build-only}
if [[ $CHRONOSCOPE_LOCAL_BASE == 1 && $# == 0 ]]; then
    # PostgreSQL's image and the app's at once (compose builds them one after the other, in
    # the order of depends_on), then the services sharing the app's image, from its cache.
    "${build[@]}" build postgres >&2 &
    postgres=$!
    "${build[@]}" build code >&2
    wait "$postgres"
fi
"${build[@]}" build "$@" >&2
echo "${files[*]}"
