#!/bin/bash
# Initializes PGDATA on first start (password authentication over TCP, the superuser
# POSTGRES_USER, the database POSTGRES_DB), then runs the command (postgres and its options).
set -euo pipefail
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust \
        --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
    if [[ $db != postgres ]]; then
        pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        createdb -U "$user" "$db"
        pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
fi
if [[ ${1:-} == postgres ]]; then
    shift
    exec postgres -D "$PGDATA" -c listen_addresses="${POSTGRES_LISTEN_ADDRESSES:-*}" "$@"
fi
exec "$@"
