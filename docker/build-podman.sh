#!/usr/bin/env bash
# Build and check the brainevent images with podman, where no Docker engine is present.
#
#   docker/build-podman.sh [TARGET...]       TARGET: cpu (default) or cuda13
#   docker/build-podman.sh --print-runtime   the OCI runtime podman will be told to use
#
# Nothing is pulled from an image registry. A minimal Debian is debootstrapped once
# into a cached folder and imported as the local image localhost/brainevent-base:<suite>,
# which stands in for the Dockerfile's BASE_IMAGE. Then, for each target:
#   1. podman build --target TARGET (tag localhost/brainevent:TARGET),
#   2. podman run IMAGE                    -> the test suite inside the image,
#   3. docker/check_image.py               -> `brainevent build` of the sample kernels in
#      docker/kernels/, twice, into two fresh volumes: the artifacts must be
#      byte-identical (for cuda13 also: doctor finds the wheel's nvcc, the compile-only
#      tests pass, each fat binary holds SASS for every --arch and PTX for the newest).
# (cuda12 needs an nvidia/cuda devel base image; build it with docker or with
# --build-arg CUDA12_BASE_IMAGE=<a local CUDA 12 devel image>.)
#
# Needs podman, an OCI runtime (runc or crun) and python3; debootstrap and root only
# while the base image does not exist yet.
# Settings (environment):
#   ROOTFS_CACHE     where the debootstrapped tree is kept
#                    (default: ${XDG_CACHE_HOME:-$HOME/.cache}/brainevent-podman)
#   DEBIAN_SUITE     Debian release of the base (default: bookworm)
#   DEBIAN_MIRROR    mirror for debootstrap (default: debootstrap's own)
#   CA_BUNDLE        CA bundle handed to pip inside the build (PIP_CERT), so that the
#                    build trusts what this host trusts, e.g. a TLS-inspecting proxy
#                    (default: /etc/ssl/certs/ca-certificates.crt when it exists; "" = none)
#   CONTAINERS_CONF  podman settings (default: docker/containers.conf: cgroupfs, lower
#                    nofile/nproc limits)
#   STORAGE_DRIVER   podman storage driver (default: vfs, which works everywhere)
#   OCI_RUNTIME      the OCI runtime, a name or a path (default: the first of runc, crun
#                    found in OCI_RUNTIME_PATH that can start a container here)
#   OCI_RUNTIME_PATH where to look for runc and crun (default: $PATH plus the sbin folders)
#   SUITE_ARGS       pytest arguments for the suite in the image (default: -q;
#                    "skip" skips the suite)
#   CHECK_ARGS       more arguments for docker/check_image.py, e.g.
#                    "--outside /path/to/venv/bin/python --artifacts DIR"
#   RECORD           where the run's measurements go (default: docker/measured.json; "" = not
#                    recorded): once every target passed, docker/record.py reads this run's
#                    output into it and rewrites the table in docs/install.md from it
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

suite="${DEBIAN_SUITE:-bookworm}"
cache="${ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/brainevent-podman}"
base="localhost/brainevent-base:${suite}"
ca_bundle="${CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"

log() { printf '[build-podman] %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}
elapsed() { printf '%ds' "$((SECONDS - $1))"; }

# --------------------------------------------------------------- the OCI runtime
# podman needs an OCI runtime, and distributions differ: Debian's podman package brings
# crun, others runc. A containers.conf naming one that is absent stops every podman
# command ("default OCI runtime ... not found"), so the runtime is chosen here and
# passed as `podman --runtime PATH` instead.

runtime_candidates() {
    # Prints the path of each runtime found, in order of preference, one per line.
    if [ -n "${OCI_RUNTIME:-}" ]; then
        case "$OCI_RUNTIME" in
            */*) [ -x "$OCI_RUNTIME" ] && printf '%s\n' "$OCI_RUNTIME" ;;
            *) PATH="${OCI_RUNTIME_PATH:-$PATH:/usr/local/sbin:/usr/sbin:/sbin}" \
                command -v "$OCI_RUNTIME" ;;
        esac
        return 0
    fi
    local name dir
    local -a dirs
    IFS=: read -r -a dirs <<<"${OCI_RUNTIME_PATH:-$PATH:/usr/local/sbin:/usr/sbin:/sbin}"
    for name in runc crun; do
        for dir in "${dirs[@]}"; do
            if [ -n "$dir" ] && [ -f "$dir/$name" ] && [ -x "$dir/$name" ]; then
                printf '%s\n' "$dir/$name"
                break
            fi
        done
    done
}

no_runtime_message() {
    if [ -n "${OCI_RUNTIME:-}" ]; then
        printf 'OCI_RUNTIME=%s is not an executable file nor found in %s' \
            "$OCI_RUNTIME" "${OCI_RUNTIME_PATH:-PATH and the sbin folders}"
    else
        printf '%s' "no OCI runtime found (looked for runc and crun in" \
            " ${OCI_RUNTIME_PATH:-PATH and the sbin folders}): install one, e.g." \
            " apt-get install runc (Debian, Ubuntu) or dnf install crun (Fedora)"
    fi
}

runtime_hint() {
    # $1: what podman said when the runtime could not start a container.
    case "$1" in
        *"hybrid mode"*)
            printf '%s' "crun does not support hosts with cgroups v1 and v2 mounted" \
                " together (hybrid mode); install runc (apt-get install runc) and run again" ;;
        *)
            printf '%s' "install the other runtime (apt-get install runc, or crun), or" \
                " name one with OCI_RUNTIME" ;;
    esac
}

runtime=""
pick_runtime() {
    # Sets $runtime: the first candidate that starts a container from $base. Without
    # the base image (or without podman) nothing can be tried: the first candidate.
    local -a found
    mapfile -t found < <(runtime_candidates)
    [ "${#found[@]}" -gt 0 ] || die "$(no_runtime_message)"
    if ! command -v podman >/dev/null || ! podman_with "${found[0]}" image exists "$base" 2>/dev/null; then
        runtime="${found[0]}"
        return 0
    fi
    local candidate out errors=""
    for candidate in "${found[@]}"; do
        if out="$(podman_with "$candidate" run --rm --net none "$base" true 2>&1)"; then
            runtime="$candidate"
            return 0
        fi
        log "$candidate cannot start a container here: $out"
        errors="$out"
    done
    die "no OCI runtime works here (tried ${found[*]}); $(runtime_hint "$errors")"
}

podman_with() {
    local rt="$1"
    shift
    command podman --runtime "$rt" "$@"
}

podman() { podman_with "$runtime" "$@"; }

# --------------------------------------------------------------- arguments
targets=()
print_runtime=0
for arg in "$@"; do
    case "$arg" in
        --print-runtime) print_runtime=1 ;;
        cpu | cuda13) targets+=("$arg") ;;
        cuda12)
            die "cuda12 builds on an nvidia/cuda:12.x-devel image (NVIDIA's CUDA 12 wheels carry no nvcc)," \
                "which cannot be debootstrapped: use docker, or podman build --target cuda12" \
                "--build-arg CUDA12_BASE_IMAGE=<a local CUDA 12 devel image> ."
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown or unsupported target '$arg' (cpu, cuda13; or --print-runtime)" ;;
    esac
done
if [ "$print_runtime" -eq 1 ]; then
    pick_runtime
    printf '%s\n' "$runtime"
    exit 0
fi
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(cpu)
fi

command -v podman >/dev/null || die "podman is not installed (apt-get install podman runc; buildah is not needed)"
check_python="${CHECK_PYTHON:-python3}" # the interpreter that runs check_image.py
command -v "$check_python" >/dev/null || die "$check_python is needed to check the images"

record="${RECORD-$here/measured.json}"
if [ -n "$record" ] && [ -z "${BUILD_PODMAN_LOG:-}" ]; then
    # Everything this run prints is also kept, for docker/record.py.
    BUILD_PODMAN_LOG="${TMPDIR:-/tmp}/build-podman.$$.log"
    export BUILD_PODMAN_LOG
    exec > >(tee "$BUILD_PODMAN_LOG") 2>&1
fi

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
    log "$target: built in $(elapsed "$t0"); $(podman image inspect --format '{{.Size}}' "$image") bytes"

    if [ "${SUITE_ARGS:-}" != "skip" ]; then
        t0=$SECONDS
        log "$target: running the test suite in the image"
        local -a suite_args
        read -r -a suite_args <<<"${SUITE_ARGS:--q}"
        podman run --rm "${mounts[@]}" "${run_env[@]}" "$image" test "${suite_args[@]}"
        log "$target: test suite passed in $(elapsed "$t0")"
    fi

    t0=$SECONDS
    local -a check_args
    read -r -a check_args <<<"${CHECK_ARGS:-}"
    "$check_python" "$here/check_image.py" --engine "podman --runtime $runtime" --image "$image" \
        --target "$target" "${check_args[@]}"
    log "$target: image checks took $(elapsed "$t0")"
}

pick_runtime
ensure_base
pick_runtime # now that the base image exists, check the runtime can start a container
log "OCI runtime: $runtime"
for target in "${targets[@]}"; do
    run_target "$target"
done
log "done: ${targets[*]}"
if [ -n "$record" ]; then
    "$check_python" "$here/record.py" --log "$BUILD_PODMAN_LOG" --record "$record" --docs
    log "recorded in $record; docs/install.md's table rewritten from it"
fi
