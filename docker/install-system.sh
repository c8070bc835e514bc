#!/bin/sh
# The system layer of every brainevent image, on a Debian or Ubuntu base: a C++
# compiler, Python 3 with venv (the base's own Python when it has one), CA
# certificates, procps (pgrep, used by the tests), a virtual environment at
# /opt/venv, an unprivileged user and the kernel cache directory.
#
# apt package versions are not pinned: the base image is a build argument and each
# Debian/Ubuntu release carries its own versions. Pin the base image (by digest)
# to pin the system packages.
set -eu

packages="g++ ca-certificates procps"
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    packages="$packages python3 python3-venv"
fi
apt-get update
# shellcheck disable=SC2086 # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages
apt-get clean
rm -rf /var/lib/apt/lists/*

python3 -m venv /opt/venv

# A fixed uid above the range distributions hand out (ubuntu images already use 1000).
useradd --create-home --uid 10001 --user-group --shell /bin/sh brainevent
mkdir -p /cache
chown brainevent:brainevent /cache
