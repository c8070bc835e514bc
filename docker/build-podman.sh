#!/usr/bin/env bash
# Build and run the brainevent images with podman, where no Docker engine is present.
#
#   docker/build-podman.sh [TARGET...]      TARGET: cpu (default) or cuda13
#
# Nothing is pulled from an image registry. A minimal Debian is debootstrapped once
# into a cached folder and imported as the local image localhost/brainevent-base:<suite>,
# which stands in for the Dockerfile's BASE_IMAGE. Then, for each target:
#   1. podman build --target TARGET (tag localhost/brainevent:TARGET),
#   2. podman run IMAGE                    -> the test suite inside the image,
#   3. podman run IMAGE brainevent build   -> precompiles a sample kernel, twice, into
#      two cache volumes and checks that both artifacts have the same sha256.
# (cuda12 needs an nvidia/cuda devel base image; build it with docker or with
# --build-arg CUDA12_BASE_IMAGE=<a local CUDA 12 devel image>.)
#
# Needs podman; debootstrap and root only while the base image does not exist yet.
# Settings (environment):
#   ROOTFS_CACHE    where the debootstrapped tree is kept
#                   (default: ${XDG_CACHE_HOME:-$HOME/.cache}/brainevent-podman)
#   DEBIAN_SUITE    Debian release of the base (default: bookworm)
#   DEBIAN_MIRROR   mirror for debootstrap (default: debootstrap's own)
#   CA_BUNDLE       CA bundle handed to pip inside the build (PIP_CERT), so that the
#                   build trusts what this host trusts, e.g. a TLS-inspecting proxy
#                   (default: /etc/ssl/certs/ca-certificates.crt when it exists; "" = none)
#   CONTAINERS_CONF podman settings (default: docker/containers.conf: runc, cgroupfs,
#                   lower nofile/nproc limits)
#   STORAGE_DRIVER  podman storage driver (default: vfs, which works everywhere)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

suite="${DEBIAN_SUITE:-bookworm}"
cache="${ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/brainevent-podman}"
base="localhost/brainevent-base:${suite}"
ca_bundle="${CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"

if [ "$#" -eq 0 ]; then
    set -- cpu
fi

log() { printf '[build-podman] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
elapsed() { printf '%ds' "$((SECONDS - $1))"; }

command -v podman >/dev/null || die "podman is not installed"

# --------------------------------------------------------------- the base image
ensure_base() {
    if podman image exists "$base"; then
        log "base image $base exists"
        return
    fi
    local tree="$cache/$suite-rootfs"
    if [ ! -f "$tree/.complete" ]; then
        command -v debootstrap >/dev/null || die "debootstrap is not installed (needed once, to make $base)"
        [ "$(id -u)" -eq 0 ] || die "debootstrap needs root (needed once, to make $base)"
        log "debootstrapping Debian $suite into $tree"
        rm -rf "$tree"
        mkdir -p "$tree"
        local args=(--variant=minbase "$suite" "$tree")
        if [ -n "${DEBIAN_MIRROR:-}" ]; then
            args+=("$DEBIAN_MIRROR")
        fi
        debootstrap "${args[@]}"
        # Downloaded packages and lists are not part of the image.
        rm -rf "$tree"/var/cache/apt/archives/*.deb "$tree"/var/lib/apt/lists/*
        touch "$tree/.complete"
    fi
    log "importing $tree as $base"
    tar -C "$tree" --exclude=./.complete -c . | podman import - "$base" >/dev/null
}

# --------------------------------------------------------------- one target
sample_kernels() {
    # $1: directory; $2: target. A CPU kernel for cpu; a CUDA kernel for cuda images.
    mkdir -p "$1"
    if [ "$2" = "cpu" ]; then
        cat >"$1/scale.cpp" <<'EOF'
#include "brainevent/common.h"

// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * factor;
}
EOF
    else
        cat >"$1/scale.cu" <<'EOF'
#include "brainevent/common.h"

__global__ void scale_kernel(const float* x, float* y, float factor, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) y[i] = x[i] * factor;
}

// @BE scale arg ret attr.factor:float32 stream
void scale(const BE::Tensor x, BE::Tensor out, float factor, int64_t stream) {
    int64_t n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), factor, n);
}
EOF
    fi
}

precompile_twice() {
    # Runs `brainevent build` into two fresh volumes; the artifacts must be identical.
    local image="$1" target="$2" work="$3"
    local kernels="$work/kernels"
    sample_kernels "$kernels" "$target"
    local cmd=(brainevent build /kernels --cache-dir /cache)
    if [ "$target" = "cpu" ]; then
        cmd=(brainevent build /kernels/scale.cpp --cache-dir /cache)
    else
        cmd+=(--arch sm_80 --arch sm_90)
    fi
    local sums=() vol
    for n in 1 2; do
        vol="brainevent-build-check-$target-$n-$$"
        podman volume rm -f "$vol" >/dev/null 2>&1 || true
        podman volume create "$vol" >/dev/null
        log "$target: ${cmd[*]} (volume $vol)"
        podman run --rm -v "$kernels:/kernels:ro" -v "$vol:/cache" "$image" "${cmd[@]}"
        # Each artifact's sha256, listed by its path relative to the cache root.
        sums+=("$(podman run --rm -v "$vol:/cache:ro" --entrypoint sh "$image" -c \
            'cd /cache && find . -name "lib*.so" -type f -exec sha256sum {} + | sort -k2')")
        podman volume rm -f "$vol" >/dev/null
    done
    printf '%s\n' "${sums[0]}" | sed 's/^/[build-podman]   /' >&2
    [ -n "${sums[0]}" ] || die "$target: brainevent build produced no shared object"
    [ "${sums[0]}" = "${sums[1]}" ] || die "$target: two builds differ:
${sums[0]}
---
${sums[1]}"
    log "$target: two clean builds gave byte-identical artifacts"
}

run_target() {
    local target="$1"
    local image="localhost/brainevent:$target"
    local build_args=(--build-arg "BASE_IMAGE=$base")
    local mounts=() run_env=()
    if [ -n "$ca_bundle" ] && [ -f "$ca_bundle" ]; then
        mounts+=(--volume "$ca_bundle:/run/host-ca-bundle.crt:ro")
        build_args+=(--build-arg "PIP_CERT=/run/host-ca-bundle.crt")
        # The suite has a test that pip-installs a wheel: same trust at run time.
        run_env+=(--env "PIP_CERT=/run/host-ca-bundle.crt")
    fi
    local t0=$SECONDS
    log "$target: building $image"
    podman build --format docker --target "$target" --tag "$image" \
        "${build_args[@]}" "${mounts[@]}" --file "$repo/Dockerfile" "$repo"
    log "$target: built in $(elapsed "$t0")"

    t0=$SECONDS
    log "$target: running the test suite in the image"
    podman run --rm "${mounts[@]}" "${run_env[@]}" "$image"
    log "$target: test suite passed in $(elapsed "$t0")"

    t0=$SECONDS
    local work
    work="$(mktemp -d)"
    chmod 755 "$work"
    precompile_twice "$image" "$target" "$work"
    rm -rf "$work"
    log "$target: precompile check took $(elapsed "$t0")"
}

for target in "$@"; do
    case "$target" in
        cpu | cuda13) ;;
        *) die "unknown or unsupported target '$target' (cpu, cuda13)" ;;
    esac
done
ensure_base
for target in "$@"; do
    run_target "$target"
done
log "done: $*"
