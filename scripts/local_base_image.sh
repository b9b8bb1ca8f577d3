#!/usr/bin/env bash
# Makes the base image chronoscope-base:bookworm (Debian bookworm with Python 3.11) for a
# machine that reaches no image registry: a root file system made by debootstrap from
# Debian's packages, imported with `docker import`. The host's CA bundle goes in too, so pip
# and apt inside builds trust what the host trusts (an egress proxy's CA, say). Both images
# build FROM it:
#   docker compose -f docker-compose.yml -f docker-compose.local-base.yml build
# Nothing is left behind but the image; it is made once (pass --force to make it again).
set -euo pipefail
tag=${CHRONOSCOPE_BASE_IMAGE:-chronoscope-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [[ ${1:-} != --force ]] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag exists"
    exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/chronoscope-rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
echo "debootstrap bookworm into $rootfs (a few minutes)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    exit 1
}
cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SOURCES
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    cp /etc/ssl/certs/ca-certificates.crt "$rootfs/usr/local/share/ca-certificates/host.crt"
    chroot "$rootfs" update-ca-certificates >/dev/null 2>&1 || true
fi
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
tar --numeric-owner -C "$rootfs" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    - "$tag" >/dev/null
echo "$tag: $(docker image inspect -f '{{.Size}}' "$tag" | numfmt --to=iec)"
